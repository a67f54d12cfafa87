"""How fast amplint is on a whole project, cold and with its cache, against the parse floor and
other tools; every command pinned to one core (``taskset -c 0``) so ratios do not depend on load.

    python benchmarks/cache_speed.py                 # timm and transformers, 3 repetitions
    python benchmarks/cache_speed.py timm -n 1       # one corpus, one repetition
    python benchmarks/cache_speed.py --skip torchfix,ruff
    python benchmarks/cache_speed.py --skip transformers:torchfix   # a label skipped for one corpus
    python benchmarks/cache_speed.py --scaling-only                 # only the scaling table

Corpora are built reproducibly: ``pip download --no-deps`` of a pinned wheel (its sha256 is
recorded in the results), unpacked into ``benchmarks/.cache/corpora/<name>/`` and ``git init``-ed
there (a project root of its own; nothing is added to that repository, nothing is committed here).

Measured per corpus, each a fresh process, wall time and peak RSS (``/usr/bin/time``):

- ``parse``: libcst ``parse_module`` of every file (the floor: amplint parses each file once);
- ``cold``: ``amplint check .`` with an empty cache; ``warm``: again, nothing changed;
- ``edit``: after appending a line to one file (a model file), the whole project again;
- ``one``: ``amplint check FILE`` after a full run (what pre-commit runs on one staged file);
  ``one-edit``: after editing that file; ``one-nocache``: ``--no-cache``;
- ``fix-one``: ``amplint fix --diff FILE`` (writes nothing) after a full run;
- ``torchfix``: TorchFix 0.7 (``torchfix .``), ``ruff``: ``ruff check --select ALL .`` (both as
  installed in the running environment; skipped when missing).

Scaling (on by default, ``--no-scaling``): nested subsets of transformers' files (in a fixed order:
the sha256 of each file's path) of about 100k, 250k and 500k lines, and the whole package (1M), each a
project of its own; ``parse`` and ``cold`` of each in turn, ``--scaling-repetitions`` times. The
subsets hold different files (their cost per line differs with them: the parse floor's too) and, being
samples of one package, fewer of the calls between its files the smaller they are; ``--copies 10``
adds k copies of the 100k subset under renamed packages (the same files, k times the lines). Time
should be linear in lines: the table gives amplint's and the parse floor's µs per line side by side.

Medians over the repetitions (cold: the cache is removed before each, and the parse floor measured
just before it; edit/one-edit: a new edit each time); the 1-minute load average at the start of each
run is recorded beside it. Results go to ``benchmarks/results/cache_speed.md`` with the machine described.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CORPORA = HERE / ".cache" / "corpora"
WHEELS = HERE / ".cache" / "wheels"
RESULTS = HERE / "results" / "cache_speed.md"

# name -> (pip requirement, file edited / linted alone)
CORPUS = {
    "timm": ("timm==1.0.31", "timm/models/vision_transformer.py"),
    "transformers": ("transformers==4.46.3", "transformers/models/bert/modeling_bert.py"),
}

PARSE = """
import sys, libcst
from pathlib import Path
for p in Path(sys.argv[1]).rglob("*.py"):
    try:
        libcst.parse_module(p.read_bytes())
    except Exception:
        pass
"""


def build(name: str) -> Tuple[Path, str]:
    """The corpus folder and the sha256 of the wheel it was unpacked from."""
    requirement, _ = CORPUS[name]
    WHEELS.mkdir(parents=True, exist_ok=True)
    wheel = next(WHEELS.glob(f"{name}-{requirement.split('==')[1]}-*.whl"), None)
    if wheel is None:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                        "-d", str(WHEELS), requirement], check=True)
        wheel = next(WHEELS.glob(f"{name}-{requirement.split('==')[1]}-*.whl"))
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    root = CORPORA / name
    if not (root / ".git").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as zf:
            for member in zf.namelist():
                if member.endswith(".py") and ".dist-info/" not in member:
                    zf.extract(member, root)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root, sha


SCALING = (100_000, 250_000, 500_000)  # lines; the whole transformers package is the last row


def subset(lines_wanted: int) -> Path:
    """A project of transformers' first files (ordered by the sha256 of their path) holding at
    least ``lines_wanted`` lines: nested subsets, built once under ``.cache/corpora``."""
    full, _ = build("transformers")
    root = CORPORA / f"transformers-{lines_wanted // 1000}k"
    if (root / ".git").exists():
        return root
    files = sorted(full.rglob("*.py"), key=lambda p: hashlib.sha256(p.relative_to(full).as_posix().encode()).hexdigest())
    shutil.rmtree(root, ignore_errors=True)
    total = 0
    for p in files:
        if total >= lines_wanted:
            break
        target = root / p.relative_to(full)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(p, target)
        total += p.read_bytes().count(b"\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def copies(k: int, lines_wanted: int = SCALING[0]) -> Path:
    """A project of ``k`` copies of the ``lines_wanted`` subset, copy i under the top-level package
    ``transformers_c{i}`` (copy 0 keeps the name ``transformers``), every ``transformers`` word of
    its files renamed alike so that its absolute imports stay inside the copy: k times the lines,
    the same files in the same proportions (the nested subsets differ in which files they hold)."""
    import re
    base = subset(lines_wanted)
    root = CORPORA / f"transformers-{lines_wanted // 1000}k-x{k}"
    if (root / ".git").exists():
        return root
    shutil.rmtree(root, ignore_errors=True)
    word = re.compile(rb"\btransformers\b")
    for i in range(k):
        package = "transformers" if i == 0 else f"transformers_c{i}"
        for p in sorted((base / "transformers").rglob("*.py")):
            target = root / package / p.relative_to(base / "transformers")
            target.parent.mkdir(parents=True, exist_ok=True)
            data = p.read_bytes()
            target.write_bytes(data if i == 0 else word.sub(package.encode(), data))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def scaling(full_result: Optional[Dict[str, object]], reps: int = 1, copies_of: Tuple[int, ...] = (),
            copies_reps: int = 1) -> List[tuple]:
    """(name, files, lines, runs) per project, ``runs`` a list of (parse, cold) pairs of ``timed``
    results, measured one after the other (so that a pair sees the same load); the whole package's
    row from its own measurement when it was made in this run, then the projects of ``copies_of``
    copies of the 100k subset (``copies``)."""
    env = amplint_env()
    check = [sys.executable, "-m", "amplint", "check", "--exit-zero", "-q", "--output-format", "concise", "."]
    rows = []

    def pairs(root: Path, times: int = reps) -> list:
        runs = []
        for _ in range(times):
            parse = timed([sys.executable, "-c", PARSE, "."], root, env)
            shutil.rmtree(root / ".amplint_cache", ignore_errors=True)
            cold = timed(check, root, env)
            runs.append((parse, cold))
            print(f"  scaling {root.name}: parse CPU {parse[2]:.2f} (load {parse[3]:.1f}) cold CPU {cold[2]:.2f} "
                  f"(load {cold[3]:.1f})", flush=True)
        return runs

    for wanted in SCALING:
        root = subset(wanted)
        rows.append((root.name, *lines_of(root), pairs(root)))
    if full_result is not None and "parse" in full_result["rows"] and "cold" in full_result["rows"]:
        r = full_result["rows"]
        rows.append(("transformers", full_result["files"], full_result["lines"], list(zip(r["parse"], r["cold"]))))
    for k in copies_of:
        root = copies(k)
        rows.append((root.name, *lines_of(root), pairs(root, copies_reps)))
    return rows


def render_scaling(rows) -> str:
    out = ["## Scaling: cold run against lines", "",
           "Nested subsets of transformers (its files in a fixed order), the whole package, and k copies of the 100k "
           "subset (the same files k times: lines grow, composition does not). Each repetition runs the parse "
           "floor and then the cold run, one after the other; CPU seconds (user + system), medians over the "
           "repetitions; the ratio is the median of each repetition's cold / parse.", "",
           "| Project | Files | Lines | Parse CPU (s) | Cold CPU (s) | Parse µs/line | amplint µs/line | amplint / parse "
           "| Load (1-min avg) at the runs | All cold CPU (s) |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for name, files, lines, runs in rows:
        parse = statistics.median(p[2] for p, _ in runs)
        cold = statistics.median(c[2] for _, c in runs)
        ratio = statistics.median(c[2] / p[2] for p, c in runs)
        loads = ", ".join(f"{p[3]:.1f} / {c[3]:.1f}" for p, c in runs)
        out.append(f"| {name} | {files} | {lines:,} | {parse:.2f} | {cold:.2f} | {parse / lines * 1e6:.0f} | "
                   f"{cold / lines * 1e6:.0f} | {ratio:.2f} | {loads} | {', '.join(f'{c[2]:.2f}' for _, c in runs)} |")
    return "\n".join(out) + "\n"


def lines_of(root: Path) -> Tuple[int, int]:
    files = list(root.rglob("*.py"))
    return len(files), sum(p.read_bytes().count(b"\n") for p in files)


CPU = "0"  # the CPU every command is pinned to (--cpu)


def timed(cmd: List[str], cwd: Path, env: Optional[Dict[str, str]] = None) -> Tuple[float, int, float, float]:
    """(wall seconds, peak RSS in MiB, CPU seconds: user + system, the machine's 1-minute load
    average when it started) of ``cmd`` pinned to one CPU. On a shared machine the CPU time is the
    steadier figure: the wall time grows with the others' load on that CPU."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        full = ["taskset", "-c", CPU, "/usr/bin/time", "-f", "%e %M %U %S", "-o", out.name, *cmd]
        subprocess.run(full, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall, rss, user, system = out.read().split()[-4:]
    return float(wall), int(rss) // 1024, float(user) + float(system), load


def amplint_env() -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.pop("AMPLINT_NO_CACHE", None)
    env.pop("AMPLINT_CACHE_DIR", None)
    # amplint's own modules byte-compiled once, as an installed amplint's are (pip compiles them):
    # with PYTHONDONTWRITEBYTECODE every run compiles them again, ~0.2 s of a one-file run
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def edit(path: Path, n: int) -> None:
    with path.open("a") as fh:
        fh.write(f"\n# edited by the benchmark ({n})\n")


HEAVY = ("parse", "cold", "torchfix", "one-nocache")  # runs of a minute or more: --heavy-repetitions


def measure(name: str, reps: int, skip: set, heavy_reps: int = 1) -> Dict[str, object]:
    root, sha = build(name)
    _, target = CORPUS[name]
    files, lines = lines_of(root)
    original = (root / target).read_bytes()
    env = amplint_env()
    amplint = [sys.executable, "-m", "amplint"]
    check = [*amplint, "check", "--exit-zero", "-q", "--output-format", "concise"]
    rows: Dict[str, List[Tuple[float, int]]] = {}

    def run(label, cmd, before=None, times=None):
        if label.split("-")[0] in skip or label in skip:
            return
        for i in range(times if times is not None else heavy_reps if label in HEAVY else reps):
            if before is not None:
                before(i)
            rows.setdefault(label, []).append(timed(cmd, root, env))
        print(f"  {name} {label}: {[x[0] for x in rows[label]]} (CPU {[x[2] for x in rows[label]]}, "
              f"load {[x[3] for x in rows[label]]})", flush=True)

    try:
        # parse and cold in turn, so that each cold run has a parse measured at the same load beside it
        for _ in range(heavy_reps):
            run("parse", [sys.executable, "-c", PARSE, "."], times=1)
            run("cold", [*check, "."], before=lambda i: shutil.rmtree(root / ".amplint_cache", ignore_errors=True),
                times=1)
        run("warm", [*check, "."])
        run("edit", [*check, "."], before=lambda i: edit(root / target, i))
        run("one", [*check, target])
        run("one-edit", [*check, target], before=lambda i: edit(root / target, 100 + i))
        run("fix-one", [*amplint, "fix", "--diff", "-q", target])
        run("one-nocache", [*check, "--no-cache", target])
        if shutil.which("torchfix") or (Path(sys.executable).parent / "torchfix").exists():
            tf = shutil.which("torchfix") or str(Path(sys.executable).parent / "torchfix")
            run("torchfix", [tf, "."])
        if shutil.which("ruff") or (Path(sys.executable).parent / "ruff").exists():
            ruff = shutil.which("ruff") or str(Path(sys.executable).parent / "ruff")
            run("ruff", [ruff, "check", "--select", "ALL", "--no-cache", "--exit-zero", "-q", "."])
    finally:
        (root / target).write_bytes(original)
    return {"name": name, "sha": sha, "files": files, "lines": lines, "rows": rows}


def tool_version(cmd: List[str]) -> str:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "not installed"


def machine() -> str:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (f"{cpu}; {os.cpu_count()} CPUs visible, runs pinned to CPU {CPU}; Python {platform.python_version()}; "
            f"{platform.system()} {platform.release()}; load average {load:.1f} at the start (shared machine)")


def render(results: List[Dict[str, object]], reps: int, rev: str = "", scaling_rows=None) -> str:
    rev = rev or subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    bindir = Path(sys.executable).parent
    out = [
        "# Speed with the cache (benchmarks/cache_speed.py)", "",
        f"amplint at `{rev}`; {time.strftime('%Y-%m-%d', time.gmtime())}; {reps} repetition(s) (parse, cold, torchfix: "
        f"see 'All runs'), median shown.", "",
        f"Machine: {machine()}.", "",
        f"TorchFix: `{tool_version([str(bindir / 'torchfix'), '--version'])}`; ruff: `{tool_version([str(bindir / 'ruff'), '--version'])}`.",
        "",
    ]
    for r in results:
        rows = r["rows"]
        out += [f"## {r['name']} ({r['files']} files, {r['lines']:,} lines; wheel sha256 `{r['sha'][:16]}…`)", "",
                "| Run | Median wall (s) | × parse | Median CPU (s) | CPU × parse | lines/s (CPU) | Peak RSS (MiB) "
                "| All runs wall (s) | All runs CPU (s) | Load (1-min avg) at the runs |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        parse = statistics.median(x[0] for x in rows["parse"]) if "parse" in rows else None
        parse_cpu = statistics.median(x[2] for x in rows["parse"]) if "parse" in rows else None
        for label, runs in rows.items():
            med = statistics.median(x[0] for x in runs)
            cpu = statistics.median(x[2] for x in runs)
            rss = max(x[1] for x in runs)
            ratio = f"{med / parse:.2f}" if parse else ""
            cpu_ratio = f"{cpu / parse_cpu:.2f}" if parse_cpu else ""
            whole = label in ("parse", "cold", "warm", "edit", "torchfix", "ruff")
            lps = f"{r['lines'] / cpu:,.0f}" if whole and cpu > 0 else ""
            out.append(f"| {label} | {med:.2f} | {ratio} | {cpu:.2f} | {cpu_ratio} | {lps} | {rss} | "
                       f"{', '.join(f'{x[0]:.2f}' for x in runs)} | {', '.join(f'{x[2]:.2f}' for x in runs)} | "
                       f"{', '.join(f'{x[3]:.1f}' for x in runs)} |")
        out.append("")
    if scaling_rows:
        out.append(render_scaling(scaling_rows))
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpora", nargs="*", default=list(CORPUS))
    ap.add_argument("-n", "--repetitions", type=int, default=3)
    ap.add_argument("--heavy-repetitions", type=int, default=1, help="for parse, cold and torchfix")
    ap.add_argument("--skip", default="", help="comma-separated run labels to skip (e.g. torchfix,cold)")
    ap.add_argument("--output", type=Path, default=RESULTS)
    ap.add_argument("--rev", default="", help="how to name the amplint measured (default: this checkout's commit)")
    ap.add_argument("--no-scaling", action="store_true", help="skip the scaling table")
    ap.add_argument("--cpu", default="0", help="the CPU to pin every command to (taskset -c)")
    ap.add_argument("--scaling-only", action="store_true", help="only the scaling table")
    ap.add_argument("--scaling-repetitions", type=int, default=None,
                    help="repetitions of each scaling project (default: --heavy-repetitions)")
    ap.add_argument("--copies", default="", help="comma-separated k: also k copies of the 100k subset (e.g. 10)")
    ap.add_argument("--copies-repetitions", type=int, default=1)
    args = ap.parse_args(argv)
    global CPU
    CPU = args.cpu
    scaling_reps = args.scaling_repetitions or args.heavy_repetitions
    copies_of = tuple(int(k) for k in args.copies.split(",") if k)
    if args.scaling_only:
        rows = scaling(None, scaling_reps, copies_of, args.copies_repetitions)
        text = render_scaling(rows)
        print(text)
        args.output.write_text(f"Machine: {machine()}.\n\n" + text)
        return 0
    skip = {s for s in args.skip.split(",") if s}
    results = []
    for name in args.corpora:
        only = {s.split(":", 1)[1] for s in skip if s.startswith(name + ":")}
        results.append(measure(name, args.repetitions, {s for s in skip if ":" not in s} | only, args.heavy_repetitions))
        args.output.write_text(render(results, args.repetitions, args.rev))  # what is measured so far
    rows = None
    if not args.no_scaling:
        rows = scaling(next((r for r in results if r["name"] == "transformers"), None), scaling_reps, copies_of,
                       args.copies_repetitions)
    args.output.write_text(render(results, args.repetitions, args.rev, rows))
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
