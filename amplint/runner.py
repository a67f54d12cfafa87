"""Runs the engine over discovered files, one project (root, regime) per root."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from .config import RuleSelection, Settings
from .discovery import Discovery, project_root
from .engine import lint_file
from .findings import Finding
from .project import Project


class Runner:
    def __init__(self, settings: Settings, selection: RuleSelection) -> None:
        self.settings = settings
        self.selection = selection
        self.discovery = Discovery(settings.exclude, settings.extend_exclude)
        self._projects: Dict[Path, Project] = {}

    def project_for(self, path: Path) -> Project:
        root = project_root(path)
        if root not in self._projects:
            self._projects[root] = Project(root, self.discovery, self.settings.precision)
        return self._projects[root]

    def files(self, paths: Sequence[Path]) -> List[Path]:
        return self.discovery.files(paths)

    def check(self, paths: Sequence[Path]) -> Tuple[List[Finding], List[str]]:
        findings: List[Finding] = []
        errors: List[str] = []
        for f in self.files(paths):
            result = lint_file(f, f.as_posix(), self.project_for(f), self.selection.for_file(f), self.settings)
            findings.extend(result.findings)
            errors.extend(result.errors)
        findings.sort(key=Finding.sort_key)
        return findings, errors
