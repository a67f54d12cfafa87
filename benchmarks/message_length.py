"""Length of amplint's one-line findings on real projects: the characters of each `concise` line
(path:line:col: CODE message) and of the `message` alone, median and maximum, for the amplint of a
commit (exported with `git archive`, as sweep.py --at does) or of the working tree.

    python benchmarks/message_length.py [--at REV] PROJECT_DIR...

Writes nothing; prints one Markdown table row per project (paste into results/message_length.md).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def amplint_source(rev: str | None) -> Path:
    if rev is None:
        return ROOT
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", rev], capture_output=True, text=True, check=True).stdout.strip()
    dest = Path(tempfile.gettempdir()) / f"amplint-{sha[:12]}"
    if not dest.exists():
        data = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "amplint", "rules"], capture_output=True, check=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(data)) as tar:
            tar.extractall(dest)
    return dest


def measure(source: Path, project: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(source), NO_COLOR="1")
    p = subprocess.run([sys.executable, "-m", "amplint", "check", "--output-format", "json", "--exit-zero", "."],
                       cwd=project, env=env, capture_output=True, text=True)
    findings = [f for f in json.loads(p.stdout) if f["code"] != "E999"]
    lines = []
    for f in findings:
        rel = os.path.relpath(f["filename"], project)
        lines.append(len(f"{rel}:{f['location']['row']}:{f['location']['column']}: {f['code']} {f['message']}"))
    messages = [len(f["message"]) for f in findings]
    if not findings:
        return {"findings": 0}
    return {"findings": len(findings), "line_median": statistics.median(lines), "line_max": max(lines),
            "message_median": statistics.median(messages), "message_max": max(messages)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--at", help="a commit of amplint (default: the working tree)")
    ap.add_argument("projects", nargs="+", type=Path)
    args = ap.parse_args()
    source = amplint_source(args.at)
    print("| project | amplint | findings | concise line median / max | message median / max |")
    print("|---|---|---|---|---|")
    for project in args.projects:
        m = measure(source, project.resolve())
        if not m["findings"]:
            print(f"| {project.name} | {args.at or 'worktree'} | 0 | | |")
            continue
        print(f"| {project.name} | {args.at or 'worktree'} | {m['findings']} | {m['line_median']:.0f} / {m['line_max']} | "
              f"{m['message_median']:.0f} / {m['message_max']} |")


if __name__ == "__main__":
    main()
