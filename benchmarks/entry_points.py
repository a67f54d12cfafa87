"""Training entry points and the precision each file is judged under, per swept project.

    python benchmarks/entry_points.py            # every fetched project of benchmarks/fetch.py
    python benchmarks/entry_points.py timm peft

Writes results/entry_points.json and results/entry_points.md: per project the entry points (file,
precision, evidence counted / shown but not counted, by role) and how many files were judged under
each precision, "library" being the files the library policy covers (docs/precision.md). Run it
after benchmarks/fetch.py (or sweep.py) has extracted the projects; it reads them in-process.
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import fetch  # noqa: E402
from amplint.precision_report import file_label  # noqa: E402
from amplint.project import Project, Regime  # noqa: E402

RESULTS = HERE / "results"


def describe(name: str) -> dict:
    p = fetch.BY_NAME[name]
    root = p.root
    project = Project(root, display_base=root)
    eps = []
    for ep in project.entry_points():
        roles = Counter(role for role, _, _ in ep.roles)
        eps.append({"entry_point": ep.name(), "precision": Regime(ep.signals).mode, "reaches": len(ep.reach),
                    "evidence_by_role": dict(sorted(roles.items()))})
    labels = Counter(file_label(project, f)[0] for f in project.files())
    return {"project": name, "files": len(project.files()), "entry_points": eps,
            "files_by_precision": dict(sorted(labels.items()))}


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or [p.name for p in fetch.PROJECTS]
    out = [describe(n) for n in names if fetch.is_fetched(fetch.BY_NAME[n])]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "entry_points.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = ["| Project | Files | Entry points (precision) | Files per precision | Evidence not counted (role: n) |",
             "|---|---:|---|---|---|"]
    for d in out:
        modes = Counter(e["precision"] for e in d["entry_points"])
        eps = ", ".join(f"{m} ×{n}" for m, n in sorted(modes.items())) or "none"
        files = ", ".join(f"{k}: {v}" for k, v in d["files_by_precision"].items())
        roles = Counter()
        for e in d["entry_points"]:
            roles.update({k: v for k, v in e["evidence_by_role"].items() if k != "training"})
        shown = ", ".join(f"{k}: {v}" for k, v in sorted(roles.items())) or "–"
        lines.append(f"| {d['project']} | {d['files']} | {len(d['entry_points'])}: {eps} | {files} | {shown} |")
    (RESULTS / "entry_points.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
