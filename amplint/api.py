"""A small programmatic API: lint a snippet or paths and get findings back (used by the tests,
the benchmarks and editor integrations)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence

from .config import RuleSelection, Settings
from .findings import Finding
from .rules import rule_codes
from .runner import Runner


def lint_paths(paths: Sequence[Path], settings: Optional[Settings] = None) -> List[Finding]:
    settings = settings or Settings()
    runner = Runner(settings, RuleSelection(settings, rule_codes()))
    findings, errors = runner.check(list(paths))
    if errors:
        raise RuntimeError("\n".join(errors))
    return findings


def lint_source(source: str, *, filename: str = "snippet.py", extra_files: Optional[Dict[str, str]] = None,
                precision: str = "auto", select: Iterable[str] = ("ALL",)) -> List[Finding]:
    """Lint ``source`` as a file of a fresh project (a temporary directory with a pyproject.toml
    and the ``extra_files``), so the project regime is inferred from these files alone."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "pyproject.toml").write_text("[project]\nname = 'snippet'\n")
        for name, text in {**(extra_files or {}), filename: source}.items():
            p = root / name
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        settings = Settings(select=list(select), precision=precision)
        findings = lint_paths([root / filename], settings)
        return findings
