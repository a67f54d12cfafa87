"""AMP302 clip-before-unscale."""
from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from ..context.training import GRAD_SCALER_INIT_SCALE, Event, Step, insertion_anchor, scope_regions, training_steps
from ..findings import Location, Applicability, Confidence, Fix, Violation
from .base import Rule


def bf16_only(ctx, scope) -> bool:
    """The scope's autocast regions are all bfloat16 (a GradScaler there is normally disabled)."""
    regions = [r for r in scope_regions(ctx, scope) if r.region.enabled]
    return bool(regions) and all(r.region.dtype == "bfloat16" and r.dtype_literal for r in regions)


def unscale_statement(scaler: str, optimizer: cst.BaseExpression) -> cst.SimpleStatementLine:
    call = cst.Call(func=cst.parse_expression(f"{scaler}.unscale_"), args=[cst.Arg(value=optimizer.deep_clone())])
    return cst.SimpleStatementLine(body=[cst.Expr(value=call)])


def _optimizer_of(step: Step, clip: Event, scaler: str) -> Optional[cst.BaseExpression]:
    """The optimizer of the ``scaler.step(...)`` that follows the clip on its path, when there is
    exactly one (several optimizers: which to unscale is a judgement)."""
    following = step.following(clip, "scaler_step", scaler)
    texts = {cst.Module(body=[]).code_for_node(e.target) for e in following if e.target is not None}
    if len(texts) != 1:
        return None
    return following[0].target


class ClipBeforeUnscale(Rule):
    code = "AMP302"
    name = "clip-before-unscale"
    summary = "Gradient clipping after a scaled backward with no scaler.unscale_(optimizer) first"
    fix_safety = "safe"
    applies_under = "any precision with a GradScaler"

    def check(self, ctx) -> Iterable[Violation]:
        for scope, step in training_steps(ctx).items():
            clips = step.of_kind("clip")
            if not clips or bf16_only(ctx, scope):
                continue
            for clip in clips:
                scalers = sorted(step.clip_before_unscale(clip))
                if not scalers:
                    continue
                scaler = scalers[0]
                fn = ctx.code(clip.call.func)
                message = (f"`{fn}(...)` clips gradients that `{scaler}.scale(loss).backward()` multiplied by "
                           f"the loss scale ({GRAD_SCALER_INIT_SCALE:g} at the start): the threshold applies to scaled norms, so "
                           f"it clips almost every step or never")
                help = f"call `{scaler}.unscale_(optimizer)` before clipping"
                fix = None
                stmt = insertion_anchor(ctx, clip.call)
                optimizer = _optimizer_of(step, clip, scaler) if len(scalers) == 1 else None
                if optimizer is not None and stmt is not None:
                    opt_text = ctx.code(optimizer)
                    help = help.replace("unscale_(optimizer)", f"unscale_({opt_text})")
                    fix = Fix(f"Insert `{scaler}.unscale_({opt_text})` before the clip", Applicability.SAFE,
                              insert_before=[(stmt, [unscale_statement(scaler, optimizer)])])
                related = [Location(ctx.path, ctx.line_of(bw.call), "the scaled backward")
                           for bw in step.of_kind("backward") if bw.how == "scaled" and bw.scaler == scaler
                           and bw.index < clip.index]
                yield Violation(clip.call, message, Confidence.CERTAIN, fix=fix, help=help, related=related[-1:])
