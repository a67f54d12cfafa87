"""``amplint verify TARGET``: exit 1 when a finding is confirmed or a float16-only producer has no
finding, 0 otherwise, 2 on a bad target (and on an exception in the user's code, with its traceback)."""
from __future__ import annotations

import sys

from ..atomic import write_atomic

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def run_verify(args, out=None, err=None) -> int:
    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr
    try:
        import torch  # noqa: F401
    except ImportError:
        err.write('amplint: error: `amplint verify` needs PyTorch: pip install "amplint[verify]"\n')
        return EXIT_ERROR
    from .run import BadStep, UserCodeError, verify
    from .target import TargetError, load, parse

    if args.steps < 1:
        err.write(f"amplint: error: --steps must be at least 1, not {args.steps}\n")
        return EXIT_ERROR
    try:
        path, _ = parse(args.target)
        step, optimizer, scaler = load(args.target)
        report = verify(step, optimizer, scaler, device=args.device, precision=args.precision, steps=args.steps,
                        project=path, target=args.target)
    except (TargetError, BadStep) as e:
        err.write(f"amplint: error: {args.target}: {e}\n" if isinstance(e, BadStep) else f"amplint: error: {e}\n")
        return EXIT_ERROR
    except UserCodeError as e:
        err.write(e.traceback)
        err.write(f"amplint: error: {args.target}: the user's code raised in {e.where} (traceback above)\n")
        return EXIT_ERROR
    except ValueError as e:
        err.write(f"amplint: error: {e}\n")
        return EXIT_ERROR
    if args.steps > 1 and optimizer is None:
        err.write(f"amplint: note: --steps {args.steps} needs an optimizer; {args.target} returned none, so one "
                  "forward and backward ran\n")
    if args.output_format == "json":
        out.write(report.to_json() + "\n")
    else:
        out.write(report.to_text())
    if args.report is not None:
        from .html import render
        try:
            write_atomic(args.report, render(report).encode("utf-8"))
        except OSError as e:
            err.write(f"amplint: error: cannot write {args.report}: {e}\n")
            return EXIT_ERROR
    return report.exit_code
