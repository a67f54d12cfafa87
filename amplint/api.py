"""A small programmatic API: lint a snippet or paths and get findings back (used by the tests,
the benchmarks and editor integrations).

``check_text`` and ``fix_text`` lint / fix a text as if it were the file at a path: the path's
configuration (the nearest ``[tool.amplint]``), its per-file ignores, and its project's regime, in
which the text stands for the file. stdin (``amplint check -``), the language server and notebooks
go through them.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

from .config import RuleSelection, Settings, find_config, load
from .discovery import Discovery, project_root
from .engine import FileResult, lint_buffer
from .findings import Finding
from .project import Project
from .rules import rule_codes
from .runner import Runner

Text = Union[str, bytes]


def lint_paths(paths: Sequence[Path], settings: Optional[Settings] = None) -> List[Finding]:
    from .discovery import name_roots
    settings = settings or Settings()
    name_roots(paths)  # a tree no marker roots is one project at each directory given
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


def settings_for_path(path: Path) -> Settings:
    """The settings that apply to the file at ``path`` (which need not exist): the nearest
    pyproject.toml with ``[tool.amplint]`` above it. Raises ``ConfigError``."""
    return load(find_config(Path(path)))


def project_for_path(path: Path, settings: Settings, cache: bool = False,
                     cache_dir: Optional[Path] = None) -> Project:
    """The project the file at ``path`` belongs to (its facts computed on first use); with
    ``cache``, the files' summaries come from the on-disk cache (``.amplint_cache/`` at the root
    unless ``cache_dir``) where they are still valid."""
    from .cache import ProjectCache, default_dir

    root = project_root(Path(path))
    return Project(root, Discovery(settings.exclude, settings.extend_exclude), settings.precision,
                   cache=ProjectCache(cache_dir or default_dir(root), root.resolve()) if cache else None)


def _bytes(text: Text) -> bytes:
    return text.encode("utf-8") if isinstance(text, str) else text


def check_text(text: Text, path: Union[str, Path], settings: Optional[Settings] = None, *,
               display: Optional[str] = None, project: Optional[Project] = None,
               selection: Optional[RuleSelection] = None) -> FileResult:
    """Lint ``text`` as the contents of the file at ``path`` (a notebook's JSON for ``.ipynb``).
    ``project`` may be given to reuse one project's facts across calls (an editor's session)."""
    path = Path(path)
    settings = settings or settings_for_path(path)
    selection = selection or RuleSelection(settings, rule_codes())
    project = project or project_for_path(path, settings)
    return lint_buffer(path, display or path.as_posix(), _bytes(text), project, selection.for_file(path), settings)


def fix_text(text: Text, path: Union[str, Path], settings: Optional[Settings] = None, *, unsafe: bool = False,
             display: Optional[str] = None, project: Optional[Project] = None,
             selection: Optional[RuleSelection] = None):
    """Fix ``text`` as the contents of the file at ``path``; nothing is written. Returns the
    ``amplint.fixes.FileState``: ``output()`` the fixed text, ``fixed`` the count, ``findings`` what
    remains, ``errors``."""
    from .fixes import fix_buffer

    path = Path(path)
    settings = settings or settings_for_path(path)
    selection = selection or RuleSelection(settings, rule_codes())
    project = project or project_for_path(path, settings)
    return fix_buffer(path, display or path.as_posix(), _bytes(text), project, selection.for_file(path), settings,
                      unsafe)
