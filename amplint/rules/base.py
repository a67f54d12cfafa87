"""The base class of rules: metadata beside the logic, in the manner of Fixit."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Iterable

from ..findings import Violation


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, e.g. optimizer-eps-underflow
    summary: ClassVar[str] = ""  # one line, for `amplint rule --all` and the README table
    fix_safety: ClassVar[str] = "none"  # "safe" | "unsafe" | "none" (what the rule's fix is, if any)
    applies_under: ClassVar[str] = "fp16"  # human description for the page header

    def check(self, ctx) -> Iterable[Violation]:  # ctx: amplint.context.file_context.FileContext
        raise NotImplementedError

    @classmethod
    def page_path(cls) -> Path:
        from ..docs import page_path
        return page_path(cls.code)
