"""A project seen with one file's text replaced: what stdin, an editor's unsaved buffer and a
notebook's code cells are linted against.

The text stands in for the file at its path everywhere the project looks (its regime, the constants
other modules import from it), whether or not the file exists on disk. The rest of the project's
facts come from a base ``Project`` that is computed once and shared: only the one file is scanned
again, so an editor can re-lint a buffer on every keystroke without re-reading the project.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

from .discovery import TEST_PATH
from .project import Project, Regime, module_name_for, scan_source
from .summary import FileSummary, summarise


class OverlayProject:
    """``base`` with the file at ``path`` read as ``text`` (Python source bytes). It answers what
    a ``Project`` answers for ``FileContext`` (``root``, ``regime``, ``module_name``, ``constant``,
    ``read``, ``files``)."""

    def __init__(self, base: Project, path: Path, text: bytes) -> None:
        self.base = base
        self.root = base.root
        self.discovery = base.discovery
        self.path = path.resolve()
        self.text = text
        self._regime: Optional[Regime] = None
        self._summary: Optional[FileSummary] = None
        self._memos: dict = {}  # its own: the buffer's text changes what the memoised questions answer

    memo = Project.memo  # (not the base's: see ``_memos``)

    def __getattr__(self, name):
        # What a Project grows later is the base's answer until the overlay learns to adjust it.
        if name == "base":
            raise AttributeError(name)
        return getattr(self.base, name)

    def files(self) -> List[Path]:
        files = self.base.files()
        if self.path.suffix == ".py" and self.path not in {f.resolve() for f in files} and self._inside():
            files.append(self.path)
        return files

    def _inside(self) -> bool:
        return self.path == self.root or self.root in self.path.parents

    def read(self, path: Path) -> bytes:
        return self.text if path.resolve() == self.path else self.base.read(path)

    def display(self, path: Path) -> str:
        return self.base.display(path)

    def relative(self, path: Path) -> str:
        return self.base.relative(path)

    def module_name(self, path: Path) -> Optional[str]:
        return module_name_for(path, self.root)

    @property
    def regime(self) -> Regime:
        """The base's evidence less what it found in the file on disk, plus the text's own."""
        if self._regime is None:
            base = self.base.regime
            display = self.base.display(self.path)
            signals = [(s, ev) for s, ev in base.signals if ev.path != display]
            if self._inside() and not TEST_PATH.search(self.base.relative(self.path)):
                signals.extend(scan_source(self.text, display, module_name_for(self.path, self.root)))
            self._regime = Regime(signals, base.override)
        return self._regime

    def regime_for(self, path) -> Regime:
        """The base's precision for ``path``; for the overlaid file, with its evidence on disk
        replaced by the text's own."""
        if Path(path).resolve() != self.path:
            return self.base.regime_for(path)
        base = self.base.regime_for(path)
        display = self.base.display(self.path)
        keep = [i for i, (_, ev) in enumerate(base.signals) if ev.path != display]
        signals = [base.signals[i] for i in keep]
        origins = [base.origins[i] for i in keep] if len(base.origins) == len(base.signals) else None
        if self._inside() and not TEST_PATH.search(self.base.relative(self.path)):
            own = scan_source(self.text, display, module_name_for(self.path, self.root))
            signals.extend(own)
            if origins is not None:  # the file's own evidence is seen by every entry point reaching it
                origins.extend([tuple(base.entry_points)] * len(own))
        return Regime(signals, base.override, base.scope, base.entry_points, tuple(origins or ()))

    def summary(self, path: Path) -> FileSummary:
        """The text's summary for the file at ``path``; the base's for any other file."""
        if path.resolve() != self.path:
            return self.base.summary(path)
        if self._summary is None:
            self._summary = summarise(self.text, self.base.relative(self.path), self.module_name(self.path))
        return self._summary

    def constant(self, qualname: str) -> Optional[float]:
        module, _, name = qualname.rpartition(".")
        if module and module == self.module_name(self.path):
            return self.summary(self.path).constants.get(name)
        return self.base.constant(qualname)
