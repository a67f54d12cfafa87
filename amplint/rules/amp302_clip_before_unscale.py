"""AMP302 clip-before-unscale."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import libcst as cst

from ..context.training import GRAD_SCALER_INIT_SCALE, Event, Step, bf16_only, insertion_anchor, training_steps
from ..findings import Location, Applicability, Confidence, Fix, Violation
from .base import Rule


def unscale_statement(scaler: str, optimizer: cst.BaseExpression, guarded: bool = False) -> cst.BaseStatement:
    call = cst.Call(func=cst.parse_expression(f"{scaler}.unscale_"), args=[cst.Arg(value=optimizer.deep_clone())])
    line = cst.SimpleStatementLine(body=[cst.Expr(value=call)])
    if not guarded:
        return line
    return cst.If(test=cst.parse_expression(f"{scaler} is not None"), body=cst.IndentedBlock(body=[line]))


def may_be_none(ctx, scope: cst.CSTNode, scaler: str) -> bool:
    """``scaler`` may be None in ``scope``: a parameter defaulting to None, or tested against None
    there (``if grad_scaler is not None:``); an unscale_ inserted for it is then guarded."""
    if isinstance(scope, cst.FunctionDef):
        for p in (*scope.params.params, *scope.params.kwonly_params):
            if p.name.value == scaler and isinstance(p.default, cst.Name) and p.default.value == "None":
                return True
    for comp in ctx.nodes(cst.Comparison):
        if ctx.is_ancestor(scope, comp) and ctx.code(comp.left) == scaler and any(
                isinstance(c.comparator, cst.Name) and c.comparator.value == "None" for c in comp.comparisons):
            return True
    return False


def entry_evidence(ctx, step: Step, scaler: str) -> Optional[Location]:
    """The caller's scaled backward, when the gradients reach this scope already scaled."""
    where = step.entry_scaled.get(scaler)
    if where is None:
        return None
    path, line = where
    shown = ctx.path if str(Path(ctx.path).resolve()) == path else (
        ctx.project.display(Path(path)) if ctx.project is not None else path)
    return Location(str(shown), line, "the caller's scaled backward")


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
    needs = r"clip"  # the clip reported (``clip_grad_norm_``, a helper of the file that clips)

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
                caller = entry_evidence(ctx, step, scaler)
                local = any(bw.how == "scaled" and bw.scaler == scaler for bw in step.of_kind("backward"))
                scaled_by = (f"`{scaler}.scale(loss).backward()`" if caller is None or local else
                             f"the caller's `.scale(loss).backward()` ({caller.path}:{caller.line}), scaled by "
                             f"`{scaler}`,")
                message = (f"`{fn}(...)` clips gradients that {scaled_by} multiplied by "
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
                              insert_before=[(stmt, [unscale_statement(scaler, optimizer,
                                                                       may_be_none(ctx, scope, scaler))])])
                related = [Location(ctx.path, ctx.line_of(bw.call), "the scaled backward")
                           for bw in step.of_kind("backward") if bw.how == "scaled" and bw.scaler == scaler
                           and bw.index < clip.index]
                related = related[-1:] or ([caller] if caller is not None else [])
                yield Violation(clip.call, message, Confidence.CERTAIN, fix=fix, help=help, related=related)
