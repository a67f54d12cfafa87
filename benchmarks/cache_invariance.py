"""The cache changes nothing: the sweep's projects checked without the cache, then cold and warm with
it, serial and parallel, must give the same findings (tests/test_cache.py asserts the same on
examples/; this runs it on real projects, which are too large for the test suite).

    python benchmarks/cache_invariance.py                 # every sweep project (fetched if needed)
    python benchmarks/cache_invariance.py timm peft       # these only

Per project, with the sweep's configuration (benchmarks/sweep.toml) and a fresh cache folder outside
the tree (``--cache-dir``): ``--no-cache -j 1`` (the reference), then ``-j 2`` cold, ``-j 2`` warm and
``-j 1`` warm. The JSON outputs are compared byte for byte. Results go to
benchmarks/results/cache_invariance.md; the exit status is 1 when any run differs.
"""
from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import List, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import fetch  # noqa: E402  (benchmarks/fetch.py)

CONFIG = HERE / "sweep.toml"
RESULTS = HERE / "results" / "cache_invariance.md"
RUNS: List[Tuple[str, List[str]]] = [
    ("no cache, serial (reference)", ["--no-cache", "-j", "1"]),
    ("cold, parallel", ["-j", "2"]),
    ("warm, parallel", ["-j", "2"]),
    ("warm, serial", ["-j", "1"]),
]


def check(root: Path, cache: Path, extra: List[str]) -> Tuple[str, float]:
    cmd = [sys.executable, "-m", "amplint", "check", "--config", str(CONFIG), "--output-format", "json",
           "--exit-zero", "--cache-dir", str(cache), *extra, str(root)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=str(REPO))
    if proc.returncode not in (0, 2):
        raise SystemExit(f"cache_invariance: {' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return proc.stdout, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("projects", nargs="*", help=f"subset of: {', '.join(fetch.BY_NAME)}")
    args = ap.parse_args(argv)
    projects = fetch.select(args.projects)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                         text=True).stdout.strip()
    rows, differs = [], False
    for project in projects:
        fetch.ensure(project)
        with tempfile.TemporaryDirectory() as tmp:
            cache = Path(tmp) / "cache"
            outputs = [check(project.root, cache, extra) for _, extra in RUNS]
        reference = outputs[0][0]
        same = [out == reference for out, _ in outputs[1:]]
        differs |= not all(same)
        findings = reference.count('"code":')
        rows.append((project.name, findings, same, [t for _, t in outputs]))
        print(f"{project.name:14} {findings:4} findings  " + "  ".join(
            f"{name.split(' (')[0]}: {'same' if s else 'DIFFERS'}" for (name, _), s in zip(RUNS[1:], same)), flush=True)
    lines = [
        "# The cache changes nothing (benchmarks/cache_invariance.py)", "",
        f"amplint at `{rev}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; Python "
        f"{platform.python_version()}; {platform.machine()}, {platform.system()} {platform.release()}. Each project "
        "checked with the sweep's configuration and a fresh cache folder outside the tree: the JSON outputs "
        "compared byte for byte with the `--no-cache -j 1` run.", "",
        "| project | findings | " + " | ".join(name for name, _ in RUNS[1:]) + " | wall (s): " +
        " / ".join(name.split(",")[0].split(" (")[0] for name, _ in RUNS) + " |",
        "|---|---:|" + "---|" * (len(RUNS) - 1) + "---|",
    ]
    for name, findings, same, times in rows:
        lines.append(f"| {name} | {findings} | " + " | ".join("same" if s else "**differs**" for s in same)
                     + " | " + " / ".join(f"{t:.1f}" for t in times) + " |")
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
