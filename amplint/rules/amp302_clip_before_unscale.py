"""AMP302 clip-before-unscale."""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional

import libcst as cst

from ..context.training import (GRAD_SCALER_INIT_SCALE, Event, Step, bf16_only, clamping_gradient_hook,
                                clamping_hooks_elsewhere, insertion_anchor, scope_of, training_steps)
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
    # the clip reported (``clip_grad_norm_``, a helper that clips, a clamping hook, another object's
    # hook method that clips: ``task.on_before_optimization(i)``)
    needs = r"clip|register_hook|\.\w*optimi[sz]\w*\("

    def check(self, ctx) -> Iterable[Violation]:
        for hook in clamping_hooks_elsewhere(ctx):
            path, line, what = hook.backward
            shown = ctx.project.display(Path(path)) if ctx.project is not None else path
            message = (f"`{ctx.code(hook.call.func)}(...)` clamps each gradient as backward computes it, and the "
                       f"training that registers it scales its loss with a GradScaler ({what} at {shown}:{line}): "
                       f"the hook sees gradients multiplied by the loss scale ({GRAD_SCALER_INIT_SCALE:g} at the "
                       f"start), so the clip value applies to scaled values and clamps almost every gradient")
            yield Violation(hook.call, message, Confidence.LIKELY,
                            help="clip once per step instead, after `scaler.unscale_(optimizer)` "
                                 "(`torch.nn.utils.clip_grad_value_(params, c)`)",
                            related=[Location(str(shown), line, what)])
        for scope, step in training_steps(ctx).items():
            if not bf16_only(ctx, scope):
                yield from self._clamping_hooks(ctx, scope, step)
            clips = step.of_kind("clip")
            if not clips or bf16_only(ctx, scope):
                continue
            for clip in clips:
                scalers = sorted(step.clip_before_unscale(clip))
                if not scalers:
                    continue
                scaler = scalers[0]
                fn = ctx.code(clip.call.func)
                if scaler.startswith("<engine:"):
                    yield self._engine_clip(ctx, step, clip, scaler)
                    continue
                caller = entry_evidence(ctx, step, scaler)
                local = [bw for bw in step.of_kind("backward") if bw.how == "scaled" and bw.scaler == scaler]
                through = next((bw for bw in local if isinstance(bw.call.func, cst.Attribute)
                                and bw.call.func.attr.value != "backward"), None)
                scaled_by = (f"`{ctx.code(through.call.func)}(...)` (its `.scale(loss).backward()` on `{scaler}`)"
                             if through is not None else
                             f"`{scaler}.scale(loss).backward()`" if caller is None or local else
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

    def _engine_clip(self, ctx, step: Step, clip: Event, scaler: str) -> Violation:
        """A clip of this code's own after a framework's backward that scaled the loss (Lightning's
        ``self.manual_backward(loss)`` under ``precision="16-mixed"``, accelerate's and Fabric's
        ``backward``, a DeepSpeed fp16 engine's): the framework unscales in its optimizer step or its own
        clip, not before this one."""
        backward = [bw for bw in step.of_kind("backward") if bw.scaler == scaler and bw.index < clip.index][-1:]
        shown = f"`{ctx.code(backward[0].call)}`" if backward else "the framework's backward"
        message = (f"`{ctx.code(clip.call.func)}(...)` clips gradients that {shown} scaled by the float16 loss scale "
                   f"({GRAD_SCALER_INIT_SCALE:g} at the start; the framework unscales only in its optimizer step): the "
                   f"threshold applies to scaled norms, so it clips almost every step or never")
        engine = scaler[len("<engine:"):-1]
        help = {"lightning": "clip with `self.clip_gradients(optimizer, gradient_clip_val=..., "
                             "gradient_clip_algorithm=\"norm\")`, which unscales first",
                "accelerator": "clip with `accelerator.clip_grad_norm_(...)`, which unscales first",
                "fabric": "clip with `fabric.clip_gradients(model, optimizer, max_norm=...)`, which unscales first",
                "deepspeed": "drop this clip and set `\"gradient_clipping\": <max norm>` in the DeepSpeed config: the "
                             "engine unscales, then clips, in `step()`"}[engine]
        return Violation(clip.call, message, Confidence.CERTAIN, help=help,
                         related=[Location(ctx.path, ctx.line_of(bw.call), "the scaled backward") for bw in backward])

    def _clamping_hooks(self, ctx, scope, step: Step) -> Iterable[Violation]:
        """Gradient hooks that clamp (``p.register_hook(lambda g: g.clamp(-c, c))``), registered in
        this step's function before its scaled backward: they run during ``scaler.scale(loss)
        .backward()`` on the scaled gradients (allennlp's gradient clipping with use_amp, fixed
        upstream by clipping after unscale_)."""
        scaled = [bw for bw in step.of_kind("backward") if bw.how == "scaled" and bw.scaler]
        if not scaled:
            return
        # where the hooks may be registered: this function before its scaled backward, or a method of
        # its class before it calls this one (allennlp's _try_train registers, then runs _train_epoch)
        before = {scope: ctx.order(scaled[-1].call)}
        cls = ctx.enclosing_class(scope) if isinstance(scope, cst.FunctionDef) else None
        if cls is not None:
            for call in ctx.nodes(cst.Call):
                func = call.func
                if isinstance(func, cst.Attribute) and func.attr.value == scope.name.value \
                        and isinstance(func.value, cst.Name) and func.value.value == "self" \
                        and ctx.enclosing_class(call) is cls:
                    caller = scope_of(ctx, call)
                    if caller is not scope:
                        before[caller] = max(before.get(caller, -1), ctx.order(call))
        for call in ctx.nodes(cst.Call):
            if scope_of(ctx, call) not in before or ctx.order(call) > before[scope_of(ctx, call)]:
                continue
            hook = clamping_gradient_hook(ctx, call)
            if hook is None:
                continue
            bw = next((b for b in scaled if ctx.order(b.call) > ctx.order(call)), scaled[-1])
            what = "this hook" if _is_register(call) else f"`{ctx.code(call.func)}(...)` registers a gradient hook that"
            message = (f"{what} clamps every gradient during "
                       f"`{bw.scaler}.scale(loss).backward()`: the hook sees the gradients multiplied by the loss "
                       f"scale ({GRAD_SCALER_INIT_SCALE:g} at the start), so the clip value applies to scaled "
                       f"gradients and clips almost all of them")
            related = [Location(ctx.path, ctx.line_of(bw.call), "the scaled backward")]
            if hook is not call:
                related.insert(0, Location(ctx.path, ctx.line_of(hook), "the clamping hook"))
            # (a hook in another file: the call that registers it is reported, its file is not cited)
            yield Violation(call, message, Confidence.CERTAIN, related=related,
                            help=f"clip after `{bw.scaler}.unscale_(optimizer)` "
                                 f"(torch.nn.utils.clip_grad_value_) instead of in a gradient hook")


def _is_register(call: cst.Call) -> bool:
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_hook"
