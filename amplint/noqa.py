"""Suppression comments: ``# noqa``, ``# noqa: AMP101, AMP103`` and ``# amplint: ignore[AMP101]`` on
a line, ``# amplint: noqa`` / ``# amplint: noqa: AMP101`` on a line of its own for the whole file."""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, Optional, Set

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_AMPLINT = re.compile(r"#\s*amplint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
# ``# amplint: noqa`` / ``# amplint: noqa: AMP101, AMP102`` on a line of its own: the whole file.
_FILE = re.compile(r"^#\s*amplint:\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?\s*$", re.IGNORECASE)
FILE_LEVEL = 0  # the key of file-level suppressions in a suppression table
_MAYBE = re.compile(rb"noqa|amplint:", re.IGNORECASE)


def line_codes(source: bytes):
    """The ``# noqa: CODES`` / ``# amplint: ignore[CODES]`` comments that name codes: (line,
    [codes as written]) for each, for the unused-suppression check (AMP100)."""
    if not _MAYBE.search(source):
        return []
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return []
    out = []
    for tok in tokens:
        if tok.type != tokenize.COMMENT or _FILE.match(tok.string):
            continue
        for rx in (_NOQA, _AMPLINT):
            m = rx.search(tok.string)
            if m and m.group("codes"):
                out.append((tok.start[0], [c for c in re.split(r"[,\s]+", m.group("codes")) if c]))
    return out  # cheap test before tokenizing
ALL = "*"


def _codes(text: Optional[str]) -> Set[str]:
    if not text:
        return {ALL}
    return {c.strip().upper() for c in re.split(r"[,\s]+", text) if c.strip()}


def suppressions(source: bytes) -> Dict[int, Set[str]]:
    """line number -> codes suppressed on that line (``*`` for all). Only real comments count:
    the text is tokenized, so ``"# noqa"`` inside a string suppresses nothing."""
    if not _MAYBE.search(source):
        return {}
    out: Dict[int, Set[str]] = {}
    try:
        tokens = list(tokenize.tokenize(io.BytesIO(source).readline))
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return {}
    for tok in tokens:
        if tok.type != tokenize.COMMENT:
            continue
        whole = _FILE.match(tok.string)
        if whole and tok.line.strip() == tok.string.strip():
            out.setdefault(FILE_LEVEL, set()).update(_codes(whole.group("codes")))
            continue
        for rx in (_NOQA, _AMPLINT):
            m = rx.search(tok.string)
            if m:
                out.setdefault(tok.start[0], set()).update(_codes(m.group("codes")))
    return out


def suppressed_at_uses(code: str, use_lines, table: Dict[int, Set[str]]) -> bool:
    """A finding reported at a constant's definition (``EPS = 1e-8``) is suppressed too by a comment
    on every line that uses the constant, where such a finding used to be reported."""
    return bool(use_lines) and all(is_suppressed(code, (line,), table) for line in use_lines)


def is_suppressed(code: str, lines, table: Dict[int, Set[str]]) -> bool:
    for line in (FILE_LEVEL, *lines):
        codes = table.get(line)
        if codes and (ALL in codes or code in codes):
            return True
    return False
