"""How a run of any front end (``amplint check`` / ``fix``, stdin, ``--add-noqa``, the language
server) ends: its exit codes (ruff's: 0 clean, 1 findings, 2 usage / config / internal error), the
report of its findings, and where its cache lives. Kept apart from ``cli`` so the front ends that
``cli`` dispatches to do not import it back."""
from __future__ import annotations

import os
from pathlib import Path

from .report import WRITERS, statistics
from .report.assumed import summary_lines

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def cache_options(args) -> dict:
    """Whether to use the on-disk cache and where (options first, then the environment)."""
    no_cache = bool(getattr(args, "no_cache", False)) or os.environ.get("AMPLINT_NO_CACHE", "") not in ("", "0", "false")
    cache_dir = getattr(args, "cache_dir", None) or (Path(os.environ["AMPLINT_CACHE_DIR"])
                                                     if os.environ.get("AMPLINT_CACHE_DIR") else None)
    return {"cache": not no_cache, "cache_dir": cache_dir.resolve() if cache_dir is not None else None}


def use_color(args, out) -> bool:
    """``--color``: always / never; auto is on for a terminal unless NO_COLOR is set (no-color.org),
    and on wherever FORCE_COLOR is set (to anything but 0)."""
    choice = getattr(args, "color", "auto")
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR", "") not in ("", "0"):
        return True
    isatty = getattr(out, "isatty", None)
    return bool(isatty and isatty())


def report(args, findings, errors, out, err, fixed: int = 0, sources=None, assumed=None) -> int:
    """``sources``: the lines ``full`` output quotes, by path, where they are not on disk (stdin).
    ``assumed``: the precision assumed per project (amplint.report.assumed), which every format states."""
    assumed = assumed or []
    if args.statistics:
        statistics(findings, out)
    else:
        WRITERS[args.output_format](findings, out, sources=sources, assumed=assumed,
                                    color=args.output_format == "full" and use_color(args, out))
    if args.output_format in ("full", "concise") and not args.quiet and not args.statistics:
        unsafe = bool(getattr(args, "unsafe_fixes", False))
        fixable = sum(1 for f in findings if f.fix is not None and (unsafe or f.fix.applicability == "safe"))
        hidden = sum(1 for f in findings if f.fix is not None) - fixable
        if findings:
            total = len(findings) + fixed  # ruff's wording: found = fixed + remaining
            fixed_note = f" ({fixed} fixed, {len(findings)} remaining)" if fixed else ""
            out.write(f"Found {total} error{'s' if total != 1 else ''}{fixed_note}.\n")
            if fixable and not fixed:
                out.write(f"[*] {fixable} fixable with `amplint fix`.\n")
            if hidden:
                out.write(f"{hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the `--unsafe-fixes` option.\n")
        elif fixed:
            out.write(f"Found {fixed} error{'s' if fixed != 1 else ''} ({fixed} fixed, 0 remaining).\n")
        else:
            out.write("All checks passed!\n")
        for line in summary_lines(assumed):
            out.write(line + "\n")
    elif args.output_format in ("json", "gitlab") and not args.quiet:
        for line in summary_lines(assumed):  # the JSON stays a list of findings, as ruff's
            err.write(f"amplint: {line}\n")
    for e in errors:
        err.write(f"amplint: error: {e}\n")
    if errors:
        return EXIT_ERROR
    if findings and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN
