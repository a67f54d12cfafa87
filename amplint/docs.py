"""Rule pages (``rules/AMPxxx.md``): where they are, their parts, and their examples.

The pages are the one text for a rule: ``amplint rule CODE`` prints them, the tests run their
examples, and the wheel ships them (as ``amplint/_rules``; from a source checkout they are read
from ``rules/`` beside the package).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Optional

_PACKAGED = Path(__file__).resolve().parent / "_rules"
_SOURCE = Path(__file__).resolve().parent.parent / "rules"


def pages_dir() -> Path:
    return _PACKAGED if _PACKAGED.is_dir() else _SOURCE


def page_path(code: str) -> Path:
    return pages_dir() / f"{code}.md"


def read_page(code: str) -> Optional[str]:
    p = page_path(code)
    return p.read_text(encoding="utf-8") if p.is_file() else None


_SECTION = re.compile(r"^## (.+)$", re.MULTILINE)
_FENCE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def sections(text: str) -> Dict[str, str]:
    parts = _SECTION.split(text)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def examples(text: str, section: str) -> List[str]:
    """The ```python blocks of one section of a page."""
    return _FENCE.findall(sections(text).get(section, ""))
