"""Static findings against runtime events: confirmed, not-triggered, not-reached."""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Sequence

from .report import FindingMatch, Report


def project_root(path: Path) -> Path:
    """The nearest directory above ``path`` with a pyproject.toml, setup.py or .git; else its directory."""
    start = path.resolve()
    start = start if start.is_dir() else start.parent
    for d in (start, *start.parents):
        if any((d / marker).exists() for marker in ("pyproject.toml", "setup.py", "setup.cfg", ".git")):
            return d
    return start


def project_findings(project) -> list:
    from ..api import lint_paths
    from ..config import find_config, load

    root = project_root(Path(project))
    settings = load(find_config(root))
    return lint_paths([root], settings)


def _evidence(e) -> str:
    if e.role == "error":
        return f"{e.phase} {e.op}: raised in float16 only: {e.error}"
    if e.role == "producer":
        return (f"{e.phase} {e.op}: {e.nan} nan, {e.inf} inf of {e.numel} in float16; float32 largest "
                f"{e.fp32_amax:.4g}" if e.fp32_amax is not None else f"{e.phase} {e.op}: {e.nan} nan, {e.inf} inf")
    return f"{e.phase} {e.op}: {e.underflow} of {e.numel} values zero in float16, non-zero in float32"


def match(findings: Sequence, report: Report) -> List[FindingMatch]:
    """A finding is confirmed by a float16-only producer or an underflow on its lines (backward ops
    count at the forward line that created them; optimizer ops at the line that built the optimizer),
    or by a parameter that became non-finite after an optimizer built on its lines."""
    ran = {(os.path.realpath(f), line) for f, line in report.sites_run}
    out = []
    for f in findings:
        path = os.path.realpath(f.path)
        lo, hi = f.line, max(f.end_line, f.line)
        evidence = [_evidence(e) for e in report.events
                    if e.file and os.path.realpath(e.file) == path and lo <= e.line <= hi
                    and (e.is_producer or e.underflow > 0)]
        for p in report.parameters:
            if p.site is not None and os.path.realpath(p.site.file) == path and lo <= p.site.line <= hi:
                evidence.append(f"parameter {p.name} non-finite after {p.optimizer}.step() at step {p.step}")
                ran.add((path, p.site.line))
        if evidence:
            status = "confirmed"
        elif any((path, line) in ran for line in range(lo, hi + 1)):
            status = "not-triggered"
        else:
            status = "not-reached"
        out.append(FindingMatch(status=status, code=f.code, path=str(f.path), line=f.line, end_line=hi,
                                message=f.message.splitlines()[0] if f.message else "", evidence=evidence))
    order = {"confirmed": 0, "not-triggered": 1, "not-reached": 2}
    out.sort(key=lambda m: (order[m.status], m.path, m.line))
    return out
