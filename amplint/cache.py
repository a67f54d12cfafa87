"""The on-disk cache (``.amplint_cache/`` at the project root): file summaries and per-file results.

The cache is never a source of truth: an entry is used only when its key matches what it would be
recomputed from, and results are the same with and without it (tested). Keys:

- a file's *content key* is a hash of its bytes and its module name (what its summary is a function
  of). Its stat (mtime, size, inode) is remembered beside it as a fast pre-key, as ruff and mypy do:
  when the stat is unchanged the file is not even read. A file modified less than ``RACY_SECONDS``
  before its stat was taken may change again within the clock's resolution without its stat
  changing, so its stat is not remembered (git's "racy clean" rule);
- a *result key* adds amplint's build (its version; from a source checkout also a digest of
  amplint's own source files, see ``build``), the effective configuration and the selected rules; a
  result also records the project facts its analysis read, and is reused only while they are the same.

Everything of one project lives in a few JSON files (the index: files, results and project facts;
the summaries in shards by key: a run that changed nothing reads only the index) under a folder
named by amplint's version and the summary schema, each replaced atomically (a temporary file, then ``os.replace``): two concurrent runs
each write a complete file and the last one wins; a reader sees the old or the new file, never half
of one. A file that does not decode, is of another format, version, schema or project, or holds a
malformed entry is ignored (entry by entry), never trusted. JSON, not pickle: a cache folder may
come from anywhere (an archive, a shared checkout) and reading it must not run code.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

from . import __version__
from .atomic import write_atomic
from .summary import SCHEMA, FileSummary

CACHE_DIR_NAME = ".amplint_cache"
FORMAT = "amplint-cache"
RACY_SECONDS = 2.0


def build() -> str:
    """What made the cache's entries: amplint's version and, when amplint runs from a source
    checkout rather than an installed distribution, a digest of its own source files (an edit to
    amplint then invalidates what it cached, with no ``amplint clean``). Computed once per process."""
    global _BUILD
    if _BUILD is None:
        _BUILD = __version__
        package = Path(__file__).resolve().parent
        if not any(part in ("site-packages", "dist-packages") for part in package.parts):
            _BUILD = f"{__version__}+{source_digest(package)}"
    return _BUILD


_BUILD: Optional[str] = None


def source_digest(package: Path) -> str:
    """A digest of the Python files of the package at ``package`` (names and contents)."""
    h = hashlib.blake2b(digest_size=8)
    for f in sorted(package.rglob("*.py")):
        try:
            data = f.read_bytes()
        except OSError:
            data = b""
        h.update(f.relative_to(package).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def summary_digest(data) -> str:
    """A digest of a summary's data: the project facts derived from all the summaries are the
    same while every file's summary digest is (an edit that changes no summary, say in a function's
    body, needs no project-wide recomputation)."""
    return digest(json.dumps(data, sort_keys=True, separators=(",", ":")))


def digest(*parts) -> str:
    h = hashlib.blake2b(digest_size=16)
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def content_key(source: bytes, rel: str, module_name: Optional[str]) -> str:
    """What a file's summary is a function of: its bytes, its path in the project, its module."""
    return digest(source, rel, module_name or "")


def stat_key(st: os.stat_result) -> Optional[List[int]]:
    """The stat pre-key of a file, or None when the file changed too recently to trust it."""
    if time.time_ns() - st.st_mtime_ns < RACY_SECONDS * 1e9:
        return None
    return [st.st_mtime_ns, st.st_size, st.st_ino]


def default_dir(root: Path) -> Path:
    return root / CACHE_DIR_NAME


class ProjectCache:
    """The cached summaries and results of one project root."""

    def __init__(self, directory: Path, root: Path) -> None:
        self.directory = directory
        self.root = str(root)
        self.path = directory / f"{__version__}-s{SCHEMA}" / f"{digest(self.root)}.json"
        # The summaries are most of the cache (kilobytes a file) and only a run that changed
        # something reads them: they live in SHARDS files of their own by their key's first digit,
        # each read when one of its summaries is first asked for (one edited file: one shard).
        self._shards: Dict[str, Dict[str, object]] = {}  # shard -> content key -> summary data
        self._files: Dict[str, list] = {}  # relative path -> [mtime_ns, size, ino, content key, summary digest]
        self._results: Dict[str, object] = {}  # result key -> result data
        self._new_files: Dict[str, list] = {}
        self._new_summaries: Dict[str, object] = {}
        self._new_results: Dict[str, object] = {}
        self._derived: Dict[str, object] = {}  # facts of the whole project, by project fingerprint
        self._new_derived: Dict[str, object] = {}
        # Answers to the project index's questions (``Project.callers``) under one summaries'
        # fingerprint, in a file of their own read on first use: a one-file run whose edit changed
        # no summary answers them without loading every summary to build the index.
        self._answers: Optional[Dict[str, object]] = None
        self._answers_for = ""
        self._answers_dirty = False
        self._answers_new: Dict[str, object] = {}  # since ``take_answers`` (a worker's, for the parent)
        self._load()

    def _read(self, path: Path) -> Optional[dict]:
        """The data of a cache file of this amplint build and project, else None."""
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError, RecursionError, MemoryError):
            return None
        if not (isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") == build()
                and data.get("schema") == SCHEMA and data.get("root") == self.root):
            return None
        return data

    def _load(self) -> None:
        data = self._read(self.path)
        if data is None:
            return
        for name, store in (("files", self._files), ("results", self._results), ("derived", self._derived)):
            part = data.get(name)
            if isinstance(part, dict):
                store.update(part)

    def shard_path(self, shard: str) -> Path:
        return self.path.with_name(f"{self.path.stem}.summaries-{shard}.json")

    def _shard(self, key: str) -> Dict[str, object]:
        shard = key[:1]
        found = self._shards.get(shard)
        if found is None:
            data = self._read(self.shard_path(shard))
            part = data.get("summaries") if data is not None else None
            found = self._shards[shard] = part if isinstance(part, dict) else {}
        return found

    # ---- summaries ---------------------------------------------------------------------------------
    def known_key(self, rel: str, st: os.stat_result) -> Optional[str]:
        """The content key remembered for ``rel`` when its stat is unchanged."""
        entry = self._known(rel, st)
        return entry[3] if entry is not None else None

    def known_digest(self, rel: str, st: os.stat_result) -> Optional[str]:
        """The digest of the summary of ``rel`` (``summary_digest``) when its stat is unchanged."""
        entry = self._known(rel, st)
        return entry[4] if entry is not None else None

    def _known(self, rel: str, st: os.stat_result) -> Optional[list]:
        entry = self._new_files.get(rel) or self._files.get(rel)
        if not (isinstance(entry, list) and len(entry) == 5 and isinstance(entry[3], str) and isinstance(entry[4], str)):
            return None
        key = stat_key(st)
        return entry if key is not None and entry[:3] == key else None

    def has_summary(self, key: str) -> bool:
        return key in self._new_summaries or key in self._shard(key)

    def summary(self, key: str) -> Optional[FileSummary]:
        data = self._new_summaries.get(key, self._shard(key).get(key))
        if data is None:
            return None
        try:
            return FileSummary.from_data(data)
        except (ValueError, TypeError):
            return None

    def remember(self, rel: str, st: Optional[os.stat_result], key: str, summary: FileSummary) -> None:
        sk = stat_key(st) if st is not None else None
        data = summary.to_data()
        if sk is not None:
            entry = [*sk, key, summary_digest(data)]
            if self._files.get(rel) != entry:
                self._new_files[rel] = entry
        if key not in self._new_summaries and key not in self._shard(key):
            self._new_summaries[key] = data

    # ---- results -----------------------------------------------------------------------------------
    def result(self, key: str):
        return self._new_results.get(key, self._results.get(key))

    def put_result(self, key: str, data) -> None:
        if self._results.get(key) != data:
            self._new_results[key] = data

    # ---- project-wide facts (derived from all the summaries) ----------------------------------------
    def derived(self, key: str):
        return self._new_derived.get(key, self._derived.get(key))

    def put_derived(self, key: str, data) -> None:
        if self._derived.get(key) != data:
            self._new_derived[key] = data

    def answers_path(self) -> Path:
        return self.path.with_name(f"{self.path.stem}.answers.json")

    def _answers_of(self, fingerprint: str) -> Dict[str, object]:
        if self._answers is None:
            data = self._read(self.answers_path())
            found = data.get("answers") if data is not None and data.get("fingerprint") == fingerprint else None
            self._answers, self._answers_for = (found if isinstance(found, dict) else {}), fingerprint
        if self._answers_for != fingerprint:  # the summaries changed: the old answers are void
            self._answers, self._answers_for, self._answers_dirty = {}, fingerprint, True
        return self._answers

    def answer(self, fingerprint: str, key: str):
        return self._answers_of(fingerprint).get(key)

    def put_answer(self, fingerprint: str, key: str, data) -> None:
        store = self._answers_of(fingerprint)
        if store.get(key) != data:
            store[key] = data
            self._answers_dirty = True
            self._answers_new[key] = data

    def take_answers(self) -> Tuple[str, Dict[str, object]]:
        """(fingerprint, answers) put since the last call: a worker process hands them to the
        parent, whose cache is the one saved."""
        new, self._answers_new = self._answers_new, {}
        return self._answers_for, new

    # ---- writing -----------------------------------------------------------------------------------
    @property
    def dirty(self) -> bool:
        return bool(self._new_files or self._new_summaries or self._new_results or self._new_derived
                    or self._answers_dirty)

    def save(self, live_rels: Optional[Iterable[str]] = None) -> None:
        """Write the cache files (atomically) when something new was learnt; entries of files no
        longer in the project are dropped. Failures are silent: the cache is an optimisation."""
        if not self.dirty:
            return
        files = {**self._files, **self._new_files}
        if live_rels is not None:
            live = set(live_rels)
            files = {r: e for r, e in files.items() if r in live}
        keys = {e[3] for e in files.values() if isinstance(e, list) and len(e) == 5}
        keys.update(self._new_summaries)
        shards: Dict[str, Dict[str, object]] = {}
        for key in self._new_summaries:  # the shards holding new summaries are rewritten, the others kept
            shards.setdefault(key[:1], {})
        for shard in shards:
            old = self._shard(shard)
            new = {k: v for k, v in self._new_summaries.items() if k[:1] == shard}
            shards[shard] = {k: v for k, v in {**old, **new}.items() if k in keys}
        results = {k: v for k, v in {**self._results, **self._new_results}.items()
                   if isinstance(v, dict) and v.get("content") in keys}
        # The project-wide facts of this run, and some earlier ones (another cwd, another precision).
        derived = dict(list(self._derived.items())[-4096:])
        derived.update(self._new_derived)
        head = {"format": FORMAT, "version": build(), "schema": SCHEMA, "root": self.root}
        try:
            prepare_dir(self.directory)
            for shard, summaries in shards.items():  # first: the index never names summaries not written
                write_atomic(self.shard_path(shard), json.dumps({**head, "summaries": summaries},
                                                                separators=(",", ":")).encode(), make_parents=True)
            if self._answers_dirty and self._answers is not None:
                write_atomic(self.answers_path(), json.dumps({**head, "fingerprint": self._answers_for,
                                                              "answers": self._answers}, separators=(",", ":")).encode(), make_parents=True)
            write_atomic(self.path, json.dumps({**head, "files": files, "results": results, "derived": derived},
                                               separators=(",", ":")).encode(), make_parents=True)
        except OSError:
            return
        self._answers_dirty = False
        self._files, self._results, self._derived = files, results, derived
        self._shards.update(shards)
        self._new_files, self._new_summaries, self._new_results, self._new_derived = {}, {}, {}, {}


def prepare_dir(directory: Path) -> None:
    """The cache folder ignores itself (a ``.gitignore`` of ``*``) and is tagged as a cache."""
    gitignore = directory / ".gitignore"
    if not gitignore.exists():
        write_atomic(gitignore, b"# Created by amplint automatically.\n*\n", make_parents=True)
    tag = directory / "CACHEDIR.TAG"
    if not tag.exists():
        write_atomic(tag, b"Signature: 8a477f597d28d172789f06886806bc55\n"
                          b"# This file is a cache directory tag created by amplint.\n", make_parents=True)


def clean(directory: Path) -> bool:
    """Remove an amplint cache folder (only one that looks like ours). True when one was removed."""
    import shutil
    if not directory.is_dir():
        return False
    if not ((directory / "CACHEDIR.TAG").exists() or directory.name == CACHE_DIR_NAME):
        return False
    shutil.rmtree(directory, ignore_errors=True)
    return True
