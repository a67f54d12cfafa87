"""Cheap project-wide text questions: "is ``logit_scale`` clamped anywhere?", "does any file call
``scaler.update()``?".

Some facts that decide a finding live in another file of the project (the training loop clamps the
model's temperature; a trainer hook updates the scaler). Parsing every file for them would cost far
more than the answer is worth, so these are line greps over the project's Python files, cached on
the Project per pattern. The file being linted is read from its context (``ctx.source``), not from
disk, so a fix that has just changed it is seen.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

from ..summary import INDEXED_LINE

# A pattern naming one of the words of ``summary.INDEXED_LINE`` is answered from the files'
# summaries (only lines with such a word can match it); any other pattern reads the files.
INDEXED_WORD = re.compile(INDEXED_LINE.pattern.decode(), re.I)

Line = Tuple[str, int, str]  # (resolved path, 1-based line number, text of the line)


def _project_lines(project, pattern: str, record: bool = True) -> List[Line]:
    out = _lines(project, pattern)
    note = getattr(project, "note_fact", None)
    if record and note is not None:
        note("grep", (pattern,), out)  # a cached result depends on these lines
    return out


def _lines(project, pattern: str) -> List[Line]:
    cache: Dict[str, List[Line]] = project.memo("grep_lines")
    if pattern in cache:
        return cache[pattern]
    rx = re.compile(pattern.encode())
    indexed = getattr(project, "summary", None) is not None and INDEXED_WORD.search(pattern) is not None
    read = getattr(project, "read", None)
    out: List[Line] = []
    for f in project.files():
        if indexed:
            # The file's summary keeps its lines that mention an indexed word (read from the cache
            # when the file is unchanged): no need to read the file.
            hits = [(n, text) for n, text in project.summary(f).lines if rx.search(text.encode("utf-8", "replace"))]
            if hits:
                resolved = str(Path(f).resolve())
                out.extend((resolved, n, text) for n, text in hits)
            continue
        try:
            data = read(f) if read is not None else f.read_bytes()
        except OSError:
            continue
        if not rx.search(data):
            continue
        resolved = str(Path(f).resolve())
        for i, line in enumerate(data.splitlines(), 1):
            if rx.search(line):
                out.append((resolved, i, line.decode("utf-8", "replace")))
    cache[pattern] = out
    return out


def grep(ctx, pattern: str) -> List[Line]:
    """Lines of the project's Python files matching the regex ``pattern`` (this file's lines as
    the context has them)."""
    here = str(Path(ctx.path).resolve())
    rx = re.compile(pattern)
    out: List[Line] = []
    text = ctx.source.decode("utf-8", "replace") if isinstance(ctx.source, bytes) else str(ctx.source)
    for i, line in enumerate(text.splitlines(), 1):
        if rx.search(line):
            out.append((here, i, line))
    if ctx.project is not None:
        out.extend(l for l in _project_lines(ctx.project, pattern) if l[0] != here)
    return out


def strip_comment(line: str) -> str:
    """The code of a line without a trailing ``# comment`` (strings are not parsed: good enough
    for the greps here, which look for calls)."""
    i = line.find("#")
    return line if i < 0 else line[:i]


def exported(ctx, name: str) -> bool:
    """Is the module-level function ``name`` of this file part of its package's public API: a module
    outside any package, or one whose name an ``__init__.py`` of the project names (``from .hsv import
    rgb_to_hsv``, ``__all__``)? A public-looking helper the package never exports (audiolm's
    ``log(t, eps=1e-20)``) is called by the package's own code only."""
    if not (Path(ctx.path).parent / "__init__.py").is_file():
        return True
    pattern = rf"\b{re.escape(name)}\b"
    if any(path.endswith("__init__.py") for path, _, _ in grep(ctx, pattern)):
        return True
    # ``from .homography import *`` exports every public name the module's ``__all__`` (if any) lists
    stem = Path(ctx.path).stem
    star = rf"(?m)^\s*from\s+[\w.]*\b{re.escape(stem)}\s+import\s+\*"
    if not any(path.endswith("__init__.py") for path, _, _ in grep(ctx, star)):
        return False
    source = ctx.source.decode("utf-8", "replace") if isinstance(ctx.source, bytes) else str(ctx.source)
    listed = re.search(r"^__all__\s*[:=+]", source, re.M)
    return listed is None or re.search(rf"[\"']{re.escape(name)}[\"']", source) is not None
