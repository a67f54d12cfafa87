"""`amplint fix` over real code: every fixed file must compile, a second run must change nothing.

    python benchmarks/fetch.py                 # once: the pinned projects into benchmarks/.cache/
    python benchmarks/fix_sweep.py             # every fetched project -> benchmarks/fix_sweep.md
    python benchmarks/fix_sweep.py timm        # only these

Each project is copied to a temporary directory (the cache is never written) and fixed there with
``--unsafe-fixes``. Recorded per project: files, findings before and how many carry a safe / an
unsafe fix, findings gone after fixing per rule, files changed, files that no longer compile after
fixing (must be 0), errors reported by fix (must be 0), and what a second ``fix --diff`` would
still change (must be nothing). Times are wall-clock and depend on the machine's load.
"""
from __future__ import annotations

import argparse
import ast
import io
import json
import shutil
import sys
import tempfile
import time
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from amplint.cli import main  # noqa: E402

SRC = HERE / ".cache" / "src"
RESULTS = HERE / "fix_sweep.md"


def _run(argv: List[str]):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _snapshot(root: Path) -> Dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.py") if p.is_file()}


def _findings(root: Path) -> List[dict]:
    _, out, _ = _run(["check", "--output-format", "json", "--exit-zero", str(root)])
    return json.loads(out)


def _compiles(data: bytes) -> bool:
    try:
        compile(data, "<fixed>", "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        return True
    except (SyntaxError, ValueError):
        return False


def sweep(src: Path) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / src.name
        shutil.copytree(src, root, symlinks=True)
        before = _snapshot(root)
        findings = _findings(root)
        t0 = time.perf_counter()
        _, _, err = _run(["fix", "--unsafe-fixes", "--exit-zero", "-q", str(root)])
        seconds = time.perf_counter() - t0
        after = _snapshot(root)
        remaining = Counter(f["code"] for f in _findings(root))
        changed = sorted(p for p in after if after[p] != before.get(p))
        broken = sorted(p for p in changed if _compiles(before[p]) and not _compiles(after[p]))
        _, second, _ = _run(["fix", "--unsafe-fixes", "--diff", "-q", str(root)])
        by_safety = Counter(f["fix"]["applicability"] for f in findings if f["fix"])
        return {
            "project": src.name,
            "files": len(before),
            "findings": len(findings),
            "with_fix": f"{by_safety['safe']} / {by_safety['unsafe']}",
            "fixed": dict(sorted((Counter(f["code"] for f in findings) - remaining).items())),
            "files_changed": len(changed),
            "broken": broken,
            "fix_errors": [e for e in err.splitlines() if e.startswith("amplint: error")],
            "second_run_diff": second,
            "seconds": round(seconds, 1),
        }


def _fmt(counts: Dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items()) or "-"


def write(results: List[dict]) -> None:
    lines = [
        "# `amplint fix` over real code",
        "",
        "Produced by `python benchmarks/fix_sweep.py` (projects pinned in benchmarks/fetch.py). Each project",
        "is fixed with `--unsafe-fixes` in a temporary copy; *Fixed* counts the findings gone after fixing.",
        "Every changed file must still compile, fix must report no error, and a second",
        "`amplint fix --unsafe-fixes --diff` must find nothing left to change.",
        "",
        "| Project | Files | Findings | With a fix (safe / unsafe) | Fixed | Files changed | Broken | Fix errors | 2nd run changes | Fix time (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['project']} | {r['files']} | {r['findings']} | {r['with_fix']} | {_fmt(r['fixed'])} "
            f"| {r['files_changed']} | {len(r['broken'])} | {len(r['fix_errors'])} "
            f"| {'none' if not r['second_run_diff'] else 'YES'} | {r['seconds']} |")
    problems = [(r["project"], x) for r in results for x in [*r["broken"], *r["fix_errors"]]]
    if problems or any(r["second_run_diff"] for r in results):
        lines += ["", "## Problems", ""]
        lines += [f"- {p}: {x}" for p, x in problems]
        lines += [f"- {r['project']}: the second run would still change:\n\n```diff\n{r['second_run_diff']}```"
                  for r in results if r["second_run_diff"]]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")


def run(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*")
    args = parser.parse_args(argv)
    sources = sorted(p for p in SRC.iterdir() if p.is_dir()) if SRC.is_dir() else []
    if args.names:
        sources = [p for p in sources if p.name.split("-")[0] in args.names]
    if not sources:
        print("nothing fetched: run `python benchmarks/fetch.py` first", file=sys.stderr)
        return 2
    results = []
    for src in sources:
        print(f"{src.name} ...", file=sys.stderr)
        results.append(sweep(src))
    write(results)
    print(RESULTS.read_text())
    bad = any(r["broken"] or r["fix_errors"] or r["second_run_diff"] for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(run())
