"""The base class of rules: metadata beside the logic, in the manner of Fixit."""
from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Iterable, List, Optional

from ..findings import Location, Violation


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""  # kebab-case, e.g. optimizer-eps-underflow
    summary: ClassVar[str] = ""  # one line, for `amplint rule --all` and the README table
    fix_safety: ClassVar[str] = "none"  # "safe" | "unsafe" | "none" (what the rule's fix is, if any)
    applies_under: ClassVar[str] = "fp16"  # human description for the page header
    # False: off by default, enabled only by naming the exact code in select / extend-select (not by
    # ALL or a prefix), for shapes that are hazards only on some models.
    default_enabled: ClassVar[bool] = True
    # What a finding of this rule needs in the file that holds it, tested on the file's text before
    # it is parsed (amplint.prefilter): a regular expression, or a tuple of groups that must all
    # match; a file none of whose enabled rules' needs match skips the parse and the rules. The
    # words of the operation the rule reports or starts from, never of its operands (those may come
    # from other files). None: a finding may be anywhere.
    needs: ClassVar[object] = None

    def check(self, ctx) -> Iterable[Violation]:  # ctx: amplint.context.file_context.FileContext
        raise NotImplementedError

    @classmethod
    def page_path(cls) -> Path:
        from ..docs import page_path
        return page_path(cls.code)


def because(fact, ctx=None, node=None, dtype: Optional[str] = None) -> List[Location]:
    """A finding's evidence from a model fact (a DTypeFact): where the value became float16 and
    how the model got there, e.g. ``train.py:24: float16 because `x` is a tensor argument of
    `forward` in a pure-half project: `model.half()```. A fact with no evidence of its own is cited
    at ``node`` (its reason is about the code there)."""
    dtype = dtype or getattr(fact, "dtype", None) or "float16"
    why = getattr(fact, "why", "")
    evidence = getattr(fact, "evidence", None)
    if evidence is not None:
        return [Location.of(evidence, f"{dtype} because {why}" if why else f"{dtype} because of")]
    if why and ctx is not None and node is not None:
        return [Location(ctx.path, ctx.line_of(node), f"{dtype} because {why}")]
    return []


def cited(evidence, why: str) -> List[Location]:
    """A finding's evidence from a context ``Evidence`` (a region's or the regime's), or none."""
    return [] if evidence is None else [Location.of(evidence, why)]
