"""AMP100 unused-noqa: a ``# noqa: AMPxxx`` that suppresses nothing, or names no rule."""
from __future__ import annotations

from typing import Iterable, List, Set

import libcst as cst

from ..findings import Confidence, Violation
from ..noqa import line_codes, suppressed_at_uses, suppressions
from .base import Rule


class UnusedNoqa(Rule):
    code = "AMP100"
    name = "unused-noqa"
    summary = "`# noqa: AMP...` that suppresses no finding of an enabled rule, or names an unknown AMP code"
    fix_safety = "none"
    applies_under = "any precision"
    default_enabled = False  # as ruff's RUF100: enable it by its code (--extend-select AMP100)
    needs = r"(?i:noqa|amplint:)"  # the suppression comments it judges (noqa.line_codes)

    def check(self, ctx) -> Iterable[Violation]:
        return ()  # judged after the other rules ran: check_results

    def check_results(self, ctx, violations: List[Violation], enabled: Set[str]) -> Iterable[Violation]:
        from . import all_rules

        comments = line_codes(ctx.source)
        if not comments:
            return
        table = suppressions(ctx.source)
        known = set(all_rules())
        used = set()
        for v in violations:
            line = ctx.line_of(v.node)
            used.add((v.code, line))
            used.add((v.code, ctx.line_of(ctx.statement_of(v.node))))
            if suppressed_at_uses(v.code, v.use_lines, table):
                used.update((v.code, use) for use in v.use_lines)
        anchors = _line_anchors(ctx)
        for line, codes in comments:
            node = anchors.get(line)
            if node is None:
                continue
            for written in codes:
                c = written.upper()
                if not c.startswith("AMP") or c == self.code:
                    continue  # other tools' codes (E501) are theirs to judge
                if c not in known:
                    yield Violation(node, f"unknown code `{written}` in a suppression comment: no amplint rule has it",
                                    Confidence.CERTAIN, help=f"remove `{written}` (`amplint rule --all` lists the codes)")
                elif c in enabled and (c, line) not in used:
                    yield Violation(node, f"unused suppression of {c}: no {c} finding on this line",
                                    Confidence.CERTAIN, help=f"remove `{written}` from the comment")


def _line_anchors(ctx) -> dict:
    """line -> the first statement that starts on it (what a finding on a comment's line points at)."""
    out = {}
    for node in (*ctx.nodes(cst.SimpleStatementLine), *ctx.nodes(cst.If), *ctx.nodes(cst.With),
                 *ctx.nodes(cst.For), *ctx.nodes(cst.While), *ctx.nodes(cst.FunctionDef), *ctx.nodes(cst.ClassDef),
                 *ctx.nodes(cst.Try)):
        line = ctx.line_of(node)
        if line not in out:
            out[line] = node
    return out
