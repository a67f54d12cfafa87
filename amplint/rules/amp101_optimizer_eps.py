"""AMP101 optimizer-eps-underflow."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from ..findings import Confidence, Violation
from ..fp16 import FLOAT16, Representation, describe_in_half, fmt
from .base import Rule

# class -> (default eps, index of eps among positional arguments, params included), from torch/optim/*.py
OPTIMIZERS = {
    "Adam": (1e-8, 3),
    "AdamW": (1e-8, 3),
    "Adamax": (1e-8, 3),
    "NAdam": (1e-8, 3),
    "RAdam": (1e-8, 3),
    "RMSprop": (1e-8, 3),
    "Adagrad": (1e-10, 5),
    "Adadelta": (1e-6, 3),
}


def optimizer_class(qualname) -> str:
    """``torch.optim.AdamW`` / ``torch.optim.adamw.AdamW`` -> ``AdamW``; '' otherwise."""
    if not qualname or not qualname.startswith("torch.optim."):
        return ""
    last = qualname.rsplit(".", 1)[-1]
    return last if last in OPTIMIZERS and qualname.count(".") <= 3 else ""


def eps_argument(call: cst.Call, position: int):
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for a in call.args:
        if a.keyword is not None and a.keyword.value == "eps":
            return a
    if len(positional) > position:
        return positional[position]
    return None


class OptimizerEpsUnderflow(Rule):
    code = "AMP101"
    name = "optimizer-eps-underflow"
    summary = "Optimizer eps that rounds to zero or a subnormal in float16, on half parameters"
    fix_safety = "safe"
    applies_under = "fp16 (pure half parameters)"

    def check(self, ctx) -> Iterable[Violation]:
        regime = ctx.project.regime if ctx.project is not None else None
        evidence = regime.half_params if regime is not None else None
        if evidence is None:
            # Under mixed precision the parameters and optimizer state are float32: eps is fine.
            return
        for call in ctx.nodes(cst.Call):
            cls = optimizer_class(ctx.call_name(call))
            if not cls:
                continue
            default, position = OPTIMIZERS[cls]
            arg = eps_argument(call, position)
            eps = default if arg is None else ctx.number(arg.value)
            if eps is None:
                continue
            kind = FLOAT16.classify(eps)
            if kind not in (Representation.ZERO, Representation.SUBNORMAL):
                continue
            where = "eps" if arg is not None else f"default eps"
            message = (f"{cls} {where}={fmt(eps)} on float16 parameters: {describe_in_half(eps)}, so "
                       f"Adam-style updates divide by ~0 and parameters become inf/NaN; use eps >= "
                       f"{fmt(FLOAT16.smallest_normal)} (e.g. 1e-4). Parameters are float16 because of {evidence}")
            yield Violation(arg.value if arg is not None else call.func, message, Confidence.CERTAIN)
