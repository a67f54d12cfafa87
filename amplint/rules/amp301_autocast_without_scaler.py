"""AMP301 fp16-autocast-without-grad-scaler."""
from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from ..context.file_context import Evidence
from ..context.step_callers import fp16_region_of_callee, fp16_region_of_callers, scalers_never_given
from ..context.training import (exclusive_branches, fp16_region_before, is_benchmark_step, is_test_file,
                                training_steps)
from ..findings import Confidence, Location, Violation
from ..fp16 import FLOAT16, fmt, pow2
from .base import Rule


def loss_scaling_evidence(regime, flags: bool = True) -> Optional[Evidence]:
    """Evidence that float16 steps are loss-scaled: a GradScaler (directly, or constructed by a wrapper
    such as timm's NativeScaler), or, with ``flags``, a trainer / accelerator / apex fp16 flag (they bring
    their own scaler, for the steps they run)."""
    if regime is None:
        return None
    if regime.grad_scaler is not None:
        return regime.grad_scaler
    if not flags:
        return None
    for sig, ev in regime.signals:
        if sig.kind == "flag" and sig.dtype == "float16" and sig.enabled:
            return ev
    return None


class Fp16AutocastWithoutGradScaler(Rule):
    code = "AMP301"
    name = "fp16-autocast-without-grad-scaler"
    summary = "Training step under float16 autocast with no GradScaler anywhere in the project"
    fix_safety = "none"
    applies_under = "fp16 (autocast)"
    needs = r"backward"  # the backward reported (``loss.backward()``, ``torch.autograd.backward``)

    def check(self, ctx) -> Iterable[Violation]:
        if is_test_file(ctx):
            return
        regime = ctx.regime
        if loss_scaling_evidence(regime) is not None:
            return
        # a scaler built where no import shows it may be handed to the loop at run time; another program's
        # `Trainer(fp16=True)` scales the steps that trainer runs, not this loop's (FlagAI's DreamBooth
        # script beside its GLM / T5 trainers, set 12, M12-1)
        scaler_elsewhere = ctx.project is not None and loss_scaling_evidence(
            getattr(ctx.project, "evidence_anywhere", None), flags=False) is not None
        if regime is not None and regime.half_params is not None:
            return  # pure half: GradScaler cannot unscale float16 gradients; another problem
        for scope, step in training_steps(ctx).items():
            if step.is_test or is_benchmark_step(ctx, scope):
                continue
            scaling = [e for e in step.events if e.kind in ("scaler_step", "unscale", "update")
                       or e.how in ("scaled", "apex", "engine", "maybe_scaled")]
            for bw in step.backwards:
                if bw.how not in ("plain", "unknown"):
                    continue
                if any(not exclusive_branches(ctx, e.call, bw.call) for e in scaling):
                    continue  # a scaler (or an engine that scales) is handed in for this backward
                if scaling and not scalers_never_given(ctx, bw.call, scaling):
                    continue  # (``if scaler is not None:`` with a scaler some caller hands in)
                if scaler_elsewhere and not _stepped_here(ctx, step, bw):
                    continue
                region, where = fp16_region_before(ctx, scope, bw.call), ctx
                if region is None:
                    # the loop's autocast is the caller's: ``step(model, optimizer, loss)`` after the
                    # forward under it (the helper's own ``loss.backward(); optimizer.step()``)
                    root = _receiver_parameter(ctx, bw.call)
                    found = fp16_region_of_callers(ctx, bw.call, root) if root is not None else None
                    if found is not None:
                        region, where = found
                if region is None:
                    # or the callee's: ``loss = self.train_one_batch(batch)`` whose forward runs under it
                    root = _receiver_name(bw.call)
                    region = fp16_region_of_callee(ctx, bw.call, root) if root is not None else None
                    if region is None:
                        continue
                tiny = FLOAT16.smallest_subnormal
                nowhere = "this step" if scaler_elsewhere else "the project"
                message = (f"`{ctx.code(bw.call.func)}()` of a float16 autocast step with no GradScaler in "
                           f"{nowhere}: activation gradients below {pow2(tiny)} ≈ {fmt(tiny)} flush to 0 in "
                           f"float16, so small gradients vanish and training stalls")
                yield Violation(bw.call, message, Confidence.CERTAIN,
                                help=("scale the loss (`scaler.scale(loss).backward()`, `scaler.step(optimizer)`, "
                                      "`scaler.update()` with `torch.amp.GradScaler(\"cuda\")`)"),
                                evidence=[Location(region.region.evidence.path, region.region.evidence.line,
                                                   f"float16 autocast: `{region.region.evidence.what}`")])
                break  # one finding per training step


def _stepped_here(ctx, step, bw) -> bool:
    """The function of ``bw`` steps a plain optimizer after it on its path (``loss.backward()`` then
    ``optimizer.step()``): no scaler built elsewhere in the repository takes part in this step (physicsnemo
    AeroJEPA's loop beside other examples' GradScalers, real-bug set 16, B16-2)."""
    return any(e.kind == "opt_step" and ctx.order(e.call) > ctx.order(bw.call)
               and not exclusive_branches(ctx, e.call, bw.call) for e in step.events)


def _receiver_name(call) -> Optional[str]:
    """``loss`` for ``loss.backward()`` (``loss.mean().backward()``)."""
    expr = call.func.value if isinstance(call.func, cst.Attribute) else None
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    return expr.value if isinstance(expr, cst.Name) else None


def _receiver_parameter(ctx, call) -> Optional[str]:
    """``loss`` for ``loss.backward()`` (``loss.mean().backward()``) in a function taking ``loss``."""
    name, fn = _receiver_name(call), ctx.enclosing_function(call)
    if name is None or fn is None:
        return None
    params = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
    return name if name in params else None
