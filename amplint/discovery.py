"""Which files to lint, and the project root of a file.

Directories are walked for ``.py`` files (and Jupyter notebooks, ``.ipynb``, when linting), skipping VCS folders, virtual environments, build output,
what ``.gitignore`` files ignore (gitignore semantics via ``pathspec``) and the configured
``exclude`` / ``extend-exclude`` globs. A file named explicitly on the command line is always linted.
"""
from __future__ import annotations

import errno
import fnmatch
import os
import re
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import pathspec

# Test modules: their models and training steps are fixtures, not how the project trains.
# test code, and the support modules of a test suite (xtuner's ``xtuner/_testing/``, transformers'
# ``testing_utils.py``): no precision evidence, and not judged as model code
TEST_PATH = re.compile(r"(^|/)_?(tests?|testing)(_?utils?|_?helpers?)?/|(^|/)test_[^/]*\.py$|_test\.py$|(^|/)conftest\.py$"
                       r"|(^|/)_?(testing|tests?)_?(utils?|helpers?|cases?)\.py$")

ROOT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".bzr", ".venv", "venv", ".env", "env", "__pypackages__", "__pycache__",
    ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".eggs", "*.egg-info",
    "build", "dist", "_build", "buck-out", "node_modules", "site-packages", ".ipynb_checkpoints",
)


# Directories named on the command line (``amplint check DIR``): a tree that nothing marks as a
# project (a downloaded archive, a ``git archive`` of a repository: no .git, no pyproject.toml) is
# one project rooted there, not one per directory.
_NAMED_DIRS: List[Path] = []


def name_roots(paths: Iterable[Path]) -> None:
    """Remember the directories of ``paths`` as the roots of what no marker roots (``project_root``)."""
    _NAMED_DIRS[:] = [p.resolve() for p in paths if p.is_dir()]


def project_root(path: Path) -> Path:
    """Nearest ancestor (or the directory itself) holding pyproject.toml, setup.py, setup.cfg or
    .git; else the outermost directory named on the command line that holds it (``name_roots``),
    else the file's own directory."""
    path = path.resolve()
    start = path if path.is_dir() else path.parent
    for d in (start, *start.parents):
        if any((d / m).exists() for m in ROOT_MARKERS):
            return d
    named = [d for d in _NAMED_DIRS if d == start or d in start.parents]
    return min(named, key=lambda d: len(d.parts)) if named else start


def _is_virtualenv(d: Path) -> bool:
    return (d / "pyvenv.cfg").exists()


def _matches_any(rel: str, name: str, patterns: Sequence[str]) -> bool:
    for pat in patterns:
        pat = pat.rstrip("/")
        if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(rel, pat + "/*"):
            return True
    return False


def _gitignore_spec(directory: Path) -> Optional[pathspec.GitIgnoreSpec]:
    f = directory / ".gitignore"
    if not f.is_file():
        return None
    try:
        lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    return pathspec.GitIgnoreSpec.from_lines(lines)


def _git_toplevel(directory: Path) -> Optional[Path]:
    for d in (directory, *directory.parents):
        if (d / ".git").exists():
            return d
    return None


def _shown(path: Path) -> str:
    try:
        return path.relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


def symlink_problem(link: Path, root: Path) -> Optional[str]:
    """Why the symlink ``link`` met while walking ``root`` is not followed: a loop, a dangling
    link, or one leading out of the project root (a walk never leaves it; ``fix`` never writes
    outside it). None for a link to a file inside the root."""
    try:
        os.stat(link)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return "symlink loop"
        return "dangling symlink" if isinstance(e, FileNotFoundError) else f"unreadable symlink ({e.strerror})"
    target = os.path.realpath(link)
    top = os.path.realpath(root)
    if os.path.commonpath([target, top]) != top:
        return f"symlink to {target}, outside the project root {top}"
    return None


class Discovery:
    def __init__(self, exclude: Sequence[str] = (), extend_exclude: Sequence[str] = (),
                 respect_gitignore: bool = True) -> None:
        self.exclude = tuple(exclude) if exclude else DEFAULT_EXCLUDE
        self.extend_exclude = tuple(extend_exclude)
        self.respect_gitignore = respect_gitignore
        self._specs: Dict[Path, Optional[pathspec.GitIgnoreSpec]] = {}  # per run: .gitignore of a directory
        self.warnings: Dict[str, None] = {}  # symlinks skipped (loops, dangling, leading out of the root), in order
        # The exclude globs as two regular expressions (one on the name, one on the relative path):
        # what ``_matches_any`` tests, without an fnmatch call per pattern per directory entry.
        patterns = [pat.rstrip("/") for pat in self.exclude + self.extend_exclude]
        self._name_rx = re.compile("|".join(fnmatch.translate(p) for p in patterns) or "(?!)")
        self._rel_rx = re.compile("|".join(fnmatch.translate(q) for p in patterns for q in (p, p + "/*")) or "(?!)")

    def __getstate__(self):  # sent to worker processes without the cache
        state = dict(self.__dict__)
        state["_specs"] = {}
        return state

    def _spec(self, directory: Path) -> Optional[pathspec.GitIgnoreSpec]:
        if directory not in self._specs:
            self._specs[directory] = _gitignore_spec(directory)
        return self._specs[directory]

    def excluded(self, path: Path, root: Path) -> bool:
        try:
            rel = Path(os.path.realpath(path)).relative_to(os.path.realpath(root)).as_posix()
        except ValueError:
            rel = path.as_posix()
        return _matches_any(rel, path.name, self.exclude + self.extend_exclude)

    def _ignored_by_git(self, path: Path, is_dir: bool, gitignores: List[Tuple[Path, pathspec.GitIgnoreSpec]]) -> bool:
        for base, spec in gitignores:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False

    def walk(self, directory: Path, root: Optional[Path] = None, stop_at_projects: bool = False,
             notebooks: bool = False, suffixes: Optional[Tuple[str, ...]] = None) -> Iterator[Path]:
        """``.py`` files under ``directory`` (and ``.ipynb`` with ``notebooks``; or the files with
        these ``suffixes``), in sorted order;
        with ``stop_at_projects``, not descending into sub-directories that are project roots of
        their own."""
        directory = directory.resolve()
        root = (root or directory).resolve()
        gitignores: List[Tuple[Path, pathspec.GitIgnoreSpec]] = []
        if self.respect_gitignore:
            # The .gitignore files from the top of the enclosing git repository (or, outside one,
            # from the project root) down to the directory apply: a project nested in a repository
            # (``examples/`` with its own pyproject.toml) still honours the repository's ignores.
            top = _git_toplevel(directory) or root
            chain = [directory, *directory.parents]
            for d in reversed(chain):
                if d == top or top in d.parents:
                    spec = self._spec(d)
                    if spec is not None:
                        gitignores.append((d, spec))
        if suffixes is None:
            suffixes = (".py", ".ipynb") if notebooks else (".py",)
        yield from self._walk(directory, root, gitignores, stop_at_projects, suffixes)

    def _walk(self, directory: Path, root: Path, gitignores, stop_at_projects: bool = False,
              suffixes: Tuple[str, ...] = (".py",)) -> Iterator[Path]:
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            return
        try:
            prefix = directory.relative_to(root).as_posix() + "/"  # directory is resolved: no link in it
            prefix = "" if prefix == "./" else prefix
        except ValueError:
            prefix = None
        for entry in entries:
            p = Path(entry.path)
            is_dir = entry.is_dir(follow_symlinks=False)
            if entry.is_symlink():
                problem = symlink_problem(p, root)
                if problem is not None:
                    if entry.name.endswith(suffixes):
                        self.warnings[f"{_shown(p)}: {problem}; skipped"] = None
                    continue
            if prefix is None or entry.is_symlink():
                if self.excluded(p, root):
                    continue
            elif self._name_rx.match(entry.name) or self._rel_rx.match(prefix + entry.name):
                continue
            if self.respect_gitignore and self._ignored_by_git(p, is_dir, gitignores):
                continue
            if is_dir:
                if _is_virtualenv(p):
                    continue
                if stop_at_projects and any((p / m).exists() for m in ROOT_MARKERS):
                    continue
                sub = gitignores
                if self.respect_gitignore:
                    spec = self._spec(p)
                    if spec is not None:
                        sub = [*gitignores, (p, spec)]
                yield from self._walk(p, root, sub, stop_at_projects, suffixes)
            elif entry.name.endswith(suffixes) and entry.is_file():
                if _lfs_pointer(entry):
                    self.warnings[f"{_shown(p)}: a Git LFS pointer, not the file's content (`git lfs pull` "
                                  "fetches it); skipped"] = None
                    continue
                yield p

    def files(self, paths: Iterable[Path]) -> List[Path]:
        """The files to lint for the given paths. Missing paths are the caller's business."""
        out: List[Path] = []
        seen = set()
        for path in paths:
            if path.is_dir():
                found = self.walk(path, project_root(path), notebooks=True)
            else:
                found = [path]  # named explicitly: always linted
            for f in found:
                key = f.resolve()
                if key not in seen:
                    seen.add(key)
                    out.append(f if not path.is_dir() else _relative_to_given(f, path))
        return out


def _relative_to_given(found: Path, given: Path) -> Path:
    """Keep paths in the user's terms: ``src/x.py`` when they passed ``src``."""
    try:
        return given / found.relative_to(given.resolve())
    except ValueError:
        return found


# A Git LFS pointer file (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md): a checkout that
# did not fetch LFS objects holds these ~130-byte texts in place of the files (anomalib's notebooks).
_LFS_POINTER = b"version https://git-lfs.github.com/spec/"


def _lfs_pointer(entry: os.DirEntry) -> bool:
    try:
        # a pointer is ~130 bytes (the spec line, a sha256 oid, a size): empty ``__init__.py`` files and
        # anything larger than a pointer are not opened
        if not 100 <= entry.stat().st_size <= 1024:
            return False
        with open(entry.path, "rb") as fh:
            return fh.read(len(_LFS_POINTER)) == _LFS_POINTER
    except OSError:
        return False
