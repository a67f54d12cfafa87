"""AMP304 nan-check-raises."""
from __future__ import annotations

import re
from typing import Iterable, Optional

import libcst as cst

from ..context.nonfinite_stops import NONFINITE_CHECKS, NONFINITE_METHODS, nonfinite_stops
from ..context.training import engine_loss_scaling, is_test_file
from ..findings import Confidence, Location, Violation
from ..torch_api.trainers import LIGHTNING_FP16_SCALED, LIGHTNING_TRAINERS, TERMINATE_ON_NAN
from ..prefilter import words
from .base import Rule

# The receiver of Lightning Fabric's ``clip_gradients`` (``fabric``, ``self.fabric``)
FABRIC_RECEIVER = re.compile(r"fabric", re.I)


def _keyword(call: cst.Call, name: str) -> Optional[cst.Arg]:
    return next((a for a in call.args if a.keyword is not None and a.keyword.value == name), None)


def _scaled_fp16_precision(ctx, call: cst.Call) -> Optional[Location]:
    """Evidence that the Lightning ``Trainer(...)`` call trains in float16 with a GradScaler: its
    ``precision=`` written as 16 / "16" / "16-mixed" (or a module constant of 16), or, when
    computed, the entry point's precision: float16 by a trainer flag, with no bf16 and no half
    parameters among its evidence."""
    arg = _keyword(call, "precision")
    if arg is None:
        return None
    value = arg.value
    if isinstance(value, cst.Integer):
        text = value.value
    elif isinstance(value, cst.SimpleString):
        text = value.evaluated_value if isinstance(value.evaluated_value, str) else ""
    else:
        defined = ctx.constant_definition(value)
        if isinstance(defined, cst.Integer):
            text = defined.value
        else:
            # Not written here (``precision=args.precision``): the precision the entry point
            # trains in, when it is float16 with a scaler by a flag and bf16 is not among them.
            regime = ctx.regime
            if regime is None or regime.bf16 is not None or regime.half_params is not None:
                return None
            for sig, ev in regime.signals:
                if sig.kind == "flag" and sig.dtype == "float16" and sig.enabled and not sig.pure:
                    return Location.of(ev, "float16 training flag")
            return None
    if text.lower() in LIGHTNING_FP16_SCALED:
        return Location(ctx.path, ctx.line_of(arg), f"float16 mixed precision: `precision={ctx.code(value)}`")
    return None


class NanCheckRaises(Rule):
    code = "AMP304"
    name = "nan-check-raises"
    summary = "Training stops on the first NaN/inf loss or gradient under float16 autocast"
    fix_safety = "none"
    applies_under = "fp16 (autocast with loss scaling)"
    # the non-finite check (``torch.isnan``, ``x.isinf()``...) or Lightning's ``terminate_on_nan``
    needs = words([*NONFINITE_CHECKS, *NONFINITE_METHODS, TERMINATE_ON_NAN, "clip_gradients"])

    def check(self, ctx) -> Iterable[Violation]:
        if is_test_file(ctx):
            return
        yield from self._trainer_flag(ctx)
        yield from self._clip_raises(ctx)
        for found in nonfinite_stops(ctx):
            if found.fail_fast:
                continue  # AMP305 (off by default): the authors' own fail-fast on the forward loss
            via, where = "", ""
            if found.site is not None:
                site_ctx = found.site_ctx
                where = (f"line {site_ctx.line_of(found.site)}" if site_ctx is ctx
                         else f"{site_ctx.path}:{site_ctx.line_of(found.site)}")
                via = f" (in `{site_ctx.code(found.site.func)}`, called from the training step at {where})"
            message = (f"{found.how}{via} stops the run at the first non-finite `{found.checked}`, which float16 "
                       f"training with loss scaling expects now and then (GradScaler skips such a step and "
                       f"lowers the scale)")
            yield Violation(found.stop, message, found.confidence,
                            help=("count non-finite steps, fail only past a threshold, and save the batch and "
                                  "state for analysis; amplint.runtime.AmpGuard does this and names the layers "
                                  "whose gradients overflow (see `amplint rule AMP304`)"),
                            evidence=[found.evidence], related=found.related)

    def _trainer_flag(self, ctx) -> Iterable[Violation]:
        """Lightning ``Trainer(precision=16, terminate_on_nan=True)``: the trainer raises at the
        first non-finite loss or parameter, the step its GradScaler would have skipped."""
        for call in ctx.nodes(cst.Call):
            if ctx.call_name(call) not in LIGHTNING_TRAINERS:
                continue
            flag = _keyword(call, TERMINATE_ON_NAN)
            if flag is None or not (isinstance(flag.value, cst.Name) and flag.value.value == "True"):
                continue
            evidence = _scaled_fp16_precision(ctx, call)
            if evidence is None:
                continue
            message = (f"`{TERMINATE_ON_NAN}=True` stops the run (ValueError) at the first non-finite loss, "
                       f"which float16 training with loss scaling expects now and then (the trainer's "
                       f"GradScaler skips such a step and lowers the scale)")
            yield Violation(flag, message, Confidence.CERTAIN,
                            help=(f"drop `{TERMINATE_ON_NAN}`: the GradScaler handles overflowed steps; to find "
                                  f"where NaNs come from, `detect_anomaly=True` in a debugging run"),
                            evidence=[evidence])


    def _clip_raises(self, ctx) -> Iterable[Violation]:
        """Fabric's ``fabric.clip_gradients(module, optimizer, max_norm=...)`` leaves
        ``error_if_nonfinite`` at its default True: under ``precision="16-mixed"`` it unscales and
        then raises on the inf / NaN gradients of an overflowed step, the step the GradScaler would
        skip (lightly-train fixed it with ``error_if_nonfinite=False``). A value clip
        (``clip_val=``) does not raise."""
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not (isinstance(func, cst.Attribute) and func.attr.value == "clip_gradients"
                    and FABRIC_RECEIVER.search(ctx.code(func.value).rpartition(".")[2])):
                continue
            positional = [a for a in call.args if a.keyword is None and not a.star]
            norm = _keyword(call, "max_norm") or (positional[3] if len(positional) > 3 else None)
            if norm is None or (isinstance(norm.value, cst.Name) and norm.value.value == "None") \
                    or any(a.star for a in call.args):
                continue
            flag = _keyword(call, "error_if_nonfinite") or (positional[5] if len(positional) > 5 else None)
            if flag is not None and not (isinstance(flag.value, cst.Name) and flag.value.value == "True"):
                continue  # False, or a value the caller chooses
            evidence = engine_loss_scaling(ctx)
            if evidence is None:
                continue
            message = ("`clip_gradients` raises (its `error_if_nonfinite` defaults to True) at the first non-finite "
                       "gradient norm, which float16 training with loss scaling expects now and then (the "
                       "GradScaler skips such a step and lowers the scale)")
            yield Violation(call, message, Confidence.LIKELY, help="pass `error_if_nonfinite=False`",
                            evidence=[Location.of(evidence, "float16 training flag")])
