"""How fast amplint is on real code, relative to libcst's own parse (timm's sources by default).

    python benchmarks/speed.py                 # timm, every file, writes results/speed.md
    python benchmarks/speed.py --project fairseq --limit 100
    python benchmarks/speed.py --no-providers  # skip the (slow) libcst metadata comparison
    python benchmarks/speed.py --precision auto  # the regime as inferred (default: fp16-mixed, forced)

Per file, in this order (the file's bytes are read first and not timed):
- parse:        ``libcst.parse_module``
- walk:         building amplint's FileContext on the parsed module (its single walk: parents,
                nodes by type, imports)
- check:        ``amplint.engine.lint_file`` with every rule (its own parse + walk + rules +
                positions of what is reported), in this process, one file after another
- positions:    libcst's ``PositionProvider`` on the parsed module (what amplint avoids computing
                for every node)
- qualnames:    libcst's ``QualifiedNameProvider`` on the parsed module (what amplint's own import
                table replaces)
The providers run on ``MetadataWrapper(module, unsafe_skip_copy=True)`` so that the wrapper's deep
copy of the tree is not counted. Costs are reported as multiples of the parse, the way the issue
states libcst's (a visitor walk ≈ 0.75×, PositionProvider ≈ 2.6×, QualifiedNameProvider ≈ 6.6×).

Also measured: the project's regime scan (stdlib ``ast`` over every file, once per project), the
command line end to end (``python -m amplint check`` in a subprocess, with its worker processes),
files per second, peak memory (tracemalloc peak of linting the largest file; the process's
maximum resident set size after the serial run).

Stage timings are CPU seconds of this process (``time.process_time``), so other load on a shared
machine does not inflate them; the command line run is wall time.

Speed is measured here, by a script, never by timed tests.
"""
from __future__ import annotations

import argparse
import gc
import os
import platform
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO))

import fetch  # noqa: E402

import libcst as cst  # noqa: E402
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider  # noqa: E402

import amplint  # noqa: E402
from amplint.config import RuleSelection, Settings  # noqa: E402
from amplint.context.file_context import FileContext  # noqa: E402
from amplint.engine import lint_file  # noqa: E402
from amplint.project import Project  # noqa: E402
from amplint.rules import rule_codes  # noqa: E402

SPEED_MD = HERE / "results" / "speed.md"
STAGES = ("parse", "walk", "check", "positions", "qualnames")


def _timed(fn):
    """CPU seconds of this process (not wall time: other processes on a shared machine do not count)."""
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def measure(files: List[Path], root: Path, providers: bool, precision: str) -> dict:
    settings = Settings(precision=precision)
    codes = RuleSelection(settings, rule_codes()).for_file(root)
    project = Project(root, override=precision)
    t_regime, _ = _timed(lambda: project.regime)
    totals: Dict[str, float] = {s: 0.0 for s in STAGES}
    findings = 0
    lines = 0
    nbytes = 0
    skipped = []
    for f in files:
        source = f.read_bytes()
        nbytes += len(source)
        lines += source.count(b"\n")
        try:
            dt, module = _timed(lambda: cst.parse_module(source))
        except Exception as e:  # a file libcst cannot parse: nothing to compare
            skipped.append(f"{f.relative_to(root)}: {type(e).__name__}")
            continue
        totals["parse"] += dt
        dt, _ = _timed(lambda: FileContext(f.as_posix(), module, source, project, project.module_name(f)))
        totals["walk"] += dt
        dt, result = _timed(lambda: lint_file(f, f.as_posix(), project, codes, settings))
        totals["check"] += dt
        findings += len(result.findings)
        if providers:
            dt, _ = _timed(lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider))
            totals["positions"] += dt
            dt, _ = _timed(lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider))
            totals["qualnames"] += dt
        del module
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    if sys.platform == "darwin":
        rss_kib //= 1024
    # tracemalloc slows Python down several times: only for the largest file, after the timings.
    largest = max(files, key=lambda p: p.stat().st_size)
    gc.collect()
    tracemalloc.start()
    lint_file(largest, largest.as_posix(), project, codes, settings)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "files": len(files) - len(skipped),
        "skipped": skipped,
        "lines": lines,
        "bytes": nbytes,
        "findings": findings,
        "regime_seconds": t_regime,
        "totals": totals,
        "rss_mib": rss_kib / 1024,
        "largest": (largest.relative_to(root).as_posix(), largest.stat().st_size, peak / 2**20),
    }


def cli_wall(root: Path, precision: str) -> Optional[float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "amplint", "check", "--config", str(HERE / "sweep.toml"),
                           "--precision", precision, "--exit-zero", "--quiet", "--output-format", "concise", str(root)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=str(REPO))
    wall = time.perf_counter() - t0
    return wall if proc.returncode in (0, 1) else None


def _commit() -> str:
    r = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                       stderr=subprocess.DEVNULL, text=True)
    return r.stdout.strip() or "?"


def render(p: "fetch.Project", r: dict, wall: Optional[float], limit: Optional[int], precision: str) -> str:
    t = r["totals"]
    parse = t["parse"] or float("nan")
    n = r["files"]
    L = []
    w = L.append
    w("# amplint speed")
    w("")
    w(f"Generated by `python benchmarks/speed.py`: {p.dist}=={p.version}"
      f"{f' (first {limit} files)' if limit else ''}, {n} files, {r['lines']:,} lines, "
      f"{r['bytes'] / 2**20:.1f} MiB; amplint {amplint.__version__} at `{_commit()}`, libcst "
      f"{getattr(cst, '__version__', '?') if hasattr(cst, '__version__') else _libcst_version()}, "
      f"Python {platform.python_version()}, {os.cpu_count()} CPUs ({platform.machine()}).")
    w("")
    w(f"Precision regime: `{precision}`"
      + (" (forced, so that every rule does its full work on every function: with the regime inferred "
         "from timm's sources the dtype-dependent rules stop early)" if precision != "auto" else " (inferred)")
      + ".")
    w("")
    w("Serial, in one process, CPU seconds (`time.process_time`) summed over the files, so other load on "
      "the machine does not count; the multiples of the parse are the stable part.")
    w("")
    w("| Stage | Seconds | × parse | Files / s |")
    w("|---|---:|---:|---:|")
    names = {
        "parse": "libcst parse",
        "walk": "amplint context walk (one walk per file)",
        "check": "amplint check, all rules (parse + walk + rules + positions of findings)",
        "positions": "libcst PositionProvider (for comparison)",
        "qualnames": "libcst QualifiedNameProvider (for comparison)",
    }
    for s in STAGES:
        if s in ("positions", "qualnames") and not t[s]:
            continue
        w(f"| {names[s]} | {t[s]:.2f} | {t[s] / parse:.2f}× | {n / t[s]:.0f} |" if t[s] else
          f"| {names[s]} | – | – | – |")
    check_rules = t["check"] - t["parse"] - t["walk"]
    w(f"| of which rules and reporting (check − parse − walk) | {check_rules:.2f} | {check_rules / parse:.2f}× | |")
    w("")
    w(f"- Project regime scan (stdlib `ast`, once per project): {r['regime_seconds']:.2f} s.")
    if wall is not None:
        w(f"- `amplint check` on the command line, end to end (process start, regime scan, worker "
          f"processes): {wall:.1f} s wall, {n / wall:.0f} files/s.")
    w(f"- Findings: {r['findings']}.")
    w(f"- Peak memory: {r['rss_mib']:.0f} MiB maximum resident set of the measuring process (it also "
      f"ran the libcst providers); tracemalloc peak while linting the largest file "
      f"(`{r['largest'][0]}`, {r['largest'][1] / 1024:.0f} KiB): {r['largest'][2]:.0f} MiB.")
    if r["skipped"]:
        w(f"- Not parsed by libcst (skipped): {', '.join(r['skipped'])}.")
    w("")
    return "\n".join(L)


def _libcst_version() -> str:
    try:
        from importlib.metadata import version
        return version("libcst")
    except Exception:
        return "?"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--project", default="timm", choices=list(fetch.BY_NAME))
    ap.add_argument("--limit", type=int, help="only the first N files (sorted by path)")
    ap.add_argument("--no-providers", action="store_true", help="skip PositionProvider / QualifiedNameProvider")
    ap.add_argument("--no-cli", action="store_true", help="skip the end-to-end command line run")
    ap.add_argument("--precision", default="fp16-mixed", choices=["auto", "fp16-mixed", "fp16", "bf16", "fp32"],
                    help="regime to lint under (default fp16-mixed: the rules do their full work; "
                         "'auto' infers it as `amplint check` would)")
    ap.add_argument("--output", type=Path, default=SPEED_MD)
    args = ap.parse_args(argv)
    p = fetch.BY_NAME[args.project]
    root = fetch.ensure(p, log=lambda m: print(m, file=sys.stderr))
    files = fetch.fetch_files(root)
    if args.limit:
        files = files[: args.limit]
    r = measure(files, root, providers=not args.no_providers, precision=args.precision)
    wall = None if args.no_cli or args.limit else cli_wall(root, args.precision)
    text = render(p, r, wall, args.limit, args.precision)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
