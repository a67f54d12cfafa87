"""AMP103 fp16-overflow-constant."""
from __future__ import annotations

import math
from typing import Iterable, Optional

import libcst as cst

from ..findings import Confidence, Violation
from ..fp16 import FLOAT16, Representation, fmt
from .base import Rule

# method name -> (index of the value among positional arguments, its keyword)
METHODS = {"masked_fill": (1, "value"), "masked_fill_": (1, "value"), "fill_": (0, "value")}
# function -> positions/keywords of the values it writes into a tensor
FUNCTIONS = {
    "torch.full": ((1,), ("fill_value",)),
    "torch.full_like": ((1,), ("fill_value",)),
    "torch.masked_fill": ((2,), ("value",)),
    "torch.where": ((1, 2), ("input", "other")),
}


def _arguments(call: cst.Call, positions, keywords):
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for i in positions:
        if i < len(positional):
            yield positional[i].value
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keywords:
            yield a.value


def overflowing(ctx, expr: cst.BaseExpression) -> Optional[float]:
    v = ctx.number(expr)
    if v is None or math.isinf(v) or math.isnan(v):
        return None  # float("-inf") is representable in float16
    return v if FLOAT16.classify(v) is Representation.OVERFLOW else None


class Fp16OverflowConstant(Rule):
    code = "AMP103"
    name = "fp16-overflow-constant"
    summary = "Fill / mask constant beyond float16's ±65504 written into float16 tensors"
    fix_safety = "safe"
    applies_under = "fp16 (mixed or pure half)"

    def _targets(self, ctx):
        """(call or assignment, the tensor written to or None, the constant expression)."""
        for call in ctx.nodes(cst.Call):
            func = call.func
            name = ctx.call_name(call)
            if name in FUNCTIONS:
                positions, keywords = FUNCTIONS[name]
                for value in _arguments(call, positions, keywords):
                    yield call, name, value
            elif isinstance(func, cst.Attribute) and func.attr.value in METHODS and not (name or "").startswith("torch."):
                pos, kw = METHODS[func.attr.value]
                for value in _arguments(call, (pos,), (kw,)):
                    yield call, func.attr.value, value
        for assign in ctx.nodes(cst.Assign):
            if any(isinstance(t.target, cst.Subscript) for t in assign.targets):
                yield assign, "x[mask] =", assign.value

    def check(self, ctx) -> Iterable[Violation]:
        for node, what, value in self._targets(ctx):
            v = overflowing(ctx, value)
            if v is None:
                continue
            if what in ("torch.full", "torch.full_like") and not self._creates_half(ctx, node):
                continue  # a float32 tensor holds the value fine; promotion keeps it float32
            status = ctx.fp16_status(node)
            if not status.fp16:
                continue
            bound = "min" if v < 0 else "max"
            message = (f"{what} with {fmt(v)}: beyond float16's largest finite value ±{fmt(FLOAT16.max)}, "
                       f"so on a float16 tensor it raises 'value cannot be converted to type c10::Half "
                       f"without overflow' or becomes inf; use torch.finfo(x.dtype).{bound}. "
                       f"float16 because of {status.evidence}")
            conf = Confidence.CERTAIN if status.confidence == "certain" else Confidence.LIKELY
            yield Violation(value, message, conf)

    @staticmethod
    def _creates_half(ctx, call) -> bool:
        dtype = None
        for a in call.args:
            if a.keyword is not None and a.keyword.value == "dtype":
                dtype = a.value
        if dtype is None:
            # torch.full_like keeps its input's dtype; torch.full uses the default dtype.
            regime = ctx.project.regime if ctx.project is not None else None
            if ctx.call_name(call) == "torch.full_like":
                return True
            return bool(regime and regime.half_params)
        name = ctx.qualname(dtype)
        if name in ("torch.float16", "torch.half"):
            return True
        # dtype=x.dtype follows a tensor that is float16 in fp16 code
        return isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype"
