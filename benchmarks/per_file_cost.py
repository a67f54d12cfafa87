"""Where a cold run's CPU time goes, file by file: is a file's analysis dearer inside a bigger project?

    python benchmarks/per_file_cost.py PROJECT OUT.json          # amplint check, cold, in this process
    python benchmarks/per_file_cost.py PROJECT OUT.json --parse  # libcst parse of each file (the floor)
    python benchmarks/per_file_cost.py --compare SMALL.json BIG.json [FLOOR_SMALL.json FLOOR_BIG.json]

The first form runs ``amplint check --exit-zero -q .`` (serial, a fresh cache folder in a temporary
directory) in this process with timers around the parts of a run, each charged to the file being
linted when it runs (``time.process_time``: CPU of this process only):

- ``summary``: ``Project._summarise`` of each file (stdlib ast parse, facts, graph, constants);
- ``prepare``: the project-level facts (regimes, entry points, module paths), forced before the
  first file is linted so that they are not charged to it (what a parallel run does in its parent);
- ``lint``: ``engine.lint_file`` of each file, and inside it ``parse_own`` (libcst parse of the file),
  ``parse_other`` (other files parsed for cross-file questions), ``callers``, ``subclasses``, ``index``
  (the project index, built once), ``regime_for`` and ``other_file`` (the questions a file asks of
  the project), ``note_fact`` (the digest of each project fact a file's analysis read);
- ``result_key`` / ``store``: the file's result key and its cache entry (outside ``lint``).

The nested subsets of ``cache_speed.py`` share files: ``--compare`` sets the files both projects hold
side by side, so that a per-line cost that grows with the project is told from one that comes with
the files (different files cost differently per line). Nothing here is a test: the figures are read,
not asserted.
"""
from __future__ import annotations

import functools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

clock = time.process_time


class Charges:
    def __init__(self) -> None:
        self.current = "<project>"
        self.by_file: dict = {}
        self.active: dict = {}

    def add(self, part: str, seconds: float, file: str = None) -> None:
        row = self.by_file.setdefault(file or self.current, {})
        row[part] = row.get(part, 0.0) + seconds
        row[part + "#"] = row.get(part + "#", 0) + 1


CHARGES = Charges()


def timer(part: str, fn, per_file=None):
    """``fn`` timed, charged to the file being linted (or to the file ``per_file(args)`` names);
    a call inside another call of the same part is not counted twice."""
    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if CHARGES.active.get(part):
            return fn(*args, **kwargs)
        CHARGES.active[part] = True
        start = clock()
        try:
            return fn(*args, **kwargs)
        finally:
            CHARGES.active[part] = False
            CHARGES.add(part, clock() - start, per_file(args) if per_file else None)
    return wrapped


def instrument() -> None:
    from amplint import engine, project as project_mod, runner

    P = project_mod.Project
    P._summarise = timer("summary", P._summarise, per_file=lambda a: str(a[1]))
    P.prepare = timer("prepare", P.prepare)
    P.callers = timer("callers", P.callers)
    P.subclasses = timer("subclasses", P.subclasses)
    P.regime_for = timer("regime_for", P.regime_for)
    P.note_fact = timer("note_fact", P.note_fact)
    runner.Runner._store = timer("store", runner.Runner._store, per_file=lambda a: a[1][1])
    runner.Runner._result_key = timer("result_key", runner.Runner._result_key, per_file=lambda a: a[1][1])
    index = P.index
    P.index = property(timer("index", index.fget))
    engine.project_context = timer("other_file", engine.project_context)

    own_parse = engine.parse

    def parse(source, settings=None, filename="<unknown>"):
        part = "parse_other" if CHARGES.active.get("other_file") else "parse_own"
        start = clock()
        try:
            return own_parse(source, settings, filename)
        finally:
            CHARGES.add(part, clock() - start)
    engine.parse = parse

    lint = runner.lint_file
    prepared = set()

    def lint_file(path, display, project, codes, settings=None):
        if id(project) not in prepared:
            prepared.add(id(project))
            CHARGES.current = "<project>"
            project.prepare()
        CHARGES.current = display
        start = clock()
        try:
            return lint(path, display, project, codes, settings)
        finally:
            CHARGES.add("lint", clock() - start)
            CHARGES.current = "<project>"
    runner.lint_file = lint_file


def run_amplint(root: Path) -> dict:
    import os
    instrument()
    from amplint import cli
    os.chdir(root)
    with tempfile.TemporaryDirectory() as cache:
        start = clock()
        cli.main(["check", "--exit-zero", "-q", "--output-format", "concise", "-j", "1", "--cache-dir", cache, "."])
        total = clock() - start
    return {"total": total, "by_file": CHARGES.by_file}


def run_parse(root: Path) -> dict:
    import libcst
    by_file = {}
    start = clock()
    for p in sorted(root.rglob("*.py")):
        data = p.read_bytes()
        t = clock()
        try:
            libcst.parse_module(data)
        except Exception:
            pass
        by_file[p.relative_to(root).as_posix()] = {"floor": clock() - t, "lines": data.count(b"\n")}
    return {"total": clock() - start, "by_file": by_file}


def compare(small: Path, big: Path, floors=()) -> None:
    a, b = (json.loads(Path(p).read_text()) for p in (small, big))
    fa, fb = ({}, {}) if not floors else (json.loads(Path(p).read_text())["by_file"] for p in floors)
    files = sorted(set(a["by_file"]) & set(b["by_file"]) - {"<project>"})
    parts = sorted({k for r in (a["by_file"][f] for f in files) for k in r if not k.endswith("#")}
                   | {k for r in (b["by_file"][f] for f in files) for k in r if not k.endswith("#")})
    print(f"{len(files)} files in both ({small} total {a['total']:.1f} s, {big} total {b['total']:.1f} s)")
    print(f"{'part':<12} {'small (s)':>10} {'big (s)':>10} {'big/small':>9}   calls small / big")
    for part in parts:
        sa = sum(a["by_file"][f].get(part, 0.0) for f in files)
        sb = sum(b["by_file"][f].get(part, 0.0) for f in files)
        ca = sum(a["by_file"][f].get(part + "#", 0) for f in files)
        cb = sum(b["by_file"][f].get(part + "#", 0) for f in files)
        print(f"{part:<12} {sa:10.2f} {sb:10.2f} {sb / sa if sa else float('nan'):9.3f}   {ca} / {cb}")
    for name, data in (("small", a), ("big", b)):
        proj = data["by_file"].get("<project>", {})
        print(f"<project> {name}: " + ", ".join(f"{k} {v:.2f}" for k, v in sorted(proj.items()) if not k.endswith("#")))
    if fa and fb:
        la = sum(fa[f]["lines"] for f in files if f in fa)
        print(f"floor of these files: small {sum(fa[f]['floor'] for f in files if f in fa):.2f} s, "
              f"big {sum(fb[f]['floor'] for f in files if f in fb):.2f} s ({la} lines)")
    # the files whose lint grew most
    grown = sorted(files, key=lambda f: b["by_file"][f].get("lint", 0) - a["by_file"][f].get("lint", 0), reverse=True)
    for f in grown[:10]:
        ra, rb = a["by_file"][f], b["by_file"][f]
        print(f"  {f}: lint {ra.get('lint', 0):.3f} -> {rb.get('lint', 0):.3f}; "
              + ", ".join(f"{k} {ra.get(k, 0):.3f}->{rb.get(k, 0):.3f}" for k in parts if k != "lint"
                          and abs(rb.get(k, 0) - ra.get(k, 0)) > 0.005))


def main(argv) -> int:
    if argv[0] == "--compare":
        compare(Path(argv[1]), Path(argv[2]), argv[3:5])
        return 0
    root, out = Path(argv[0]).resolve(), Path(argv[1]).resolve()
    data = run_parse(root) if "--parse" in argv else run_amplint(root)
    out.write_text(json.dumps(data))
    by = data["by_file"]
    print(f"{root.name}: total {data['total']:.2f} s CPU, {len(by)} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
