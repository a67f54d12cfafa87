"""Suppression comments: ``# noqa``, ``# noqa: AMP101, AMP103`` and ``# amplint: ignore[AMP101]``."""
from __future__ import annotations

import io
import re
import tokenize
from typing import Dict, Optional, Set

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)
_AMPLINT = re.compile(r"#\s*amplint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
_MAYBE = re.compile(rb"noqa|amplint:", re.IGNORECASE)  # cheap test before tokenizing
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
        for rx in (_NOQA, _AMPLINT):
            m = rx.search(tok.string)
            if m:
                out.setdefault(tok.start[0], set()).update(_codes(m.group("codes")))
    return out


def is_suppressed(code: str, lines, table: Dict[int, Set[str]]) -> bool:
    for line in lines:
        codes = table.get(line)
        if codes and (ALL in codes or code in codes):
            return True
    return False
