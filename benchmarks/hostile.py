"""Hostile inputs (issue 13): time and peak memory of deep, long and huge files, before and after
amplint's screen (amplint.parsing), and what the screen costs on the normal path (timm).

"before" is what amplint did until the screen: hand the file to libcst (``libcst.parse_module``),
in a child process so that a crash or a blow-up ends only the child. "after" is ``amplint check`` on
the file, in a child process. Each child's CPU time and peak RSS come from getrusage.

    nice -n 10 python benchmarks/hostile.py [--timm DIR] [--quick]

``--timm DIR``: the extracted timm 1.0.31 package (``pip download --no-deps timm==1.0.31``, unzip):
the screen's CPU time over its files against a cold ``amplint check --no-cache`` of it.
Writes benchmarks/results/hostile.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
TIMEOUT = 240

CASES = [
    # name, generator, run "before" (libcst alone) too
    ("2,000 nested parentheses", lambda: "x = " + "1+(" * 2000 + "1" + ")" * 2000 + "\n", True),
    ("201 nested parentheses", lambda: "x = " + "(" * 201 + "1" + ")" * 201 + "\n", True),
    ("chain of 1,000 terms (one line)", lambda: "x = " + "+".join(["1"] * 1000) + "\n", True),
    ("chain of 2,000 terms (one line)", lambda: "x = " + "+".join(["1"] * 2000) + "\n", True),
    ("chain of 10,000 terms (lines)", lambda: "x = (" + " +\n".join(["1"] * 10000) + ")\n", False),
    ("100 KB single line (list)", lambda: "x = [" + "1, " * 33_000 + "]\n", True),
    ("1 MB single line (list)", lambda: "x = [" + "1, " * 340_000 + "]\n", False),
    ("5 MB generated file", lambda: "".join(f"v{i} = [{i}, {i} + 1, f({i})]\n" for i in range(125_000)), False),
    ("900 KB generated file (under the cap)", lambda: "".join(f"v{i} = [{i}, {i} + 1, f({i})]\n" for i in range(23_000)), False),
]
# The issue's own figures for the "before" runs too slow for a shared machine (amplint at the issue's
# commit, libcst 1.x): cited, not re-measured.
CITED_BEFORE = {
    "chain of 10,000 terms (lines)": "218 s, then a segfault (issue 13)",
    "1 MB single line (list)": "70 s, 1.5 GB (issue 13)",
    "5 MB generated file": "227 s, 4.2 GB (issue 13)",
}

CHILD = r"""
import resource, sys, time
which, path = sys.argv[1], sys.argv[2]
t = time.process_time()
if which == "before":
    import libcst
    libcst.parse_module(open(path, "rb").read())
    rc = 0
else:
    from amplint.cli import main
    rc = main(["check", "--no-cache", "--output-format", "concise", path])
cpu = time.process_time() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"RESULT {cpu:.3f} {peak} {rc}", flush=True)
"""


def child(which: str, path: Path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-c", CHILD, which, str(path)], env=env, capture_output=True,
                           text=True, timeout=TIMEOUT, cwd=path.parent)
    except subprocess.TimeoutExpired:
        return f"over {TIMEOUT} s (killed)", ""
    wall = time.perf_counter() - t
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        sig = -p.returncode if p.returncode < 0 else None
        what = f"crashed (signal {sig})" if sig else f"failed (exit {p.returncode})"
        return f"{what} after {wall:.1f} s", ""
    _, cpu, peak, rc = line.split()
    report = next((x for x in p.stdout.splitlines() if ": E99" in x), "")
    return f"{float(cpu):.2f} s CPU, {int(peak) / 1024:.0f} MB peak", report.split(": ", 1)[-1][:90]


def normal_path(timm: Path) -> list:
    sys.path.insert(0, str(ROOT))
    from amplint.parsing import screen

    files = sorted(timm.rglob("*.py"))
    sources = [f.read_bytes() for f in files]
    t = time.process_time()
    for s in sources:
        screen(s)
    screen_cpu = time.process_time() - t
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "amplint", "check", "--no-cache", "--exit-zero", "-q", str(timm)],
                   env=env, capture_output=True, cwd=timm.parent)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    run_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return [
        f"- timm: {len(files)} files, {sum(map(len, sources)) / 1e6:.1f} MB",
        f"- the screen (bounds + CPython compile) over all of them: {screen_cpu:.2f} s CPU",
        f"- a cold `amplint check --no-cache` of timm (with the screen): {run_cpu:.1f} s CPU "
        f"(all processes), {wall:.1f} s wall",
        f"- the screen's share: {100 * screen_cpu / run_cpu:.1f} % of the run's CPU",
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--timm", type=Path)
    ap.add_argument("--quick", action="store_true", help="skip the 'before' runs")
    args = ap.parse_args()
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    out = [f"# Hostile inputs: before and after the screen (amplint.parsing)", "",
           f"At {rev}; {platform.python_implementation()} {platform.python_version()}, {platform.machine()}, "
           f"{os.cpu_count()} CPUs (shared with other work: CPU times, not wall times, are the figures).", "",
           "| Case | Size | before: libcst alone | after: `amplint check` | after reports |", "|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name, make, run_before in CASES:
            path = Path(tmp) / "case.py"
            text = make()
            path.write_text(text)
            if run_before and not args.quick:
                before = child("before", path)[0]
            else:
                before = CITED_BEFORE.get(name, "not run")
            after, reported = child("after", path)
            row = f"| {name} | {len(text.encode()) / 1e3:,.0f} KB | {before} | {after} | {reported or 'linted'} |"
            print(row, flush=True)
            out.append(row)
    if args.timm:
        out += ["", "## The normal path", ""] + normal_path(args.timm)
        print("\n".join(out[-4:]))
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "hostile.md").write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
