"""AMP103 fp16-overflow-constant."""
from __future__ import annotations

import math
from typing import Iterable, Optional

import libcst as cst

from ..edits import attribute_chain, find_arg, is_simple_reference, module_alias
from ..findings import Confidence, Fix, Violation
from ..fp16 import FLOAT16, Representation, finfo, fmt
from ..context.conditions import never_run_by_callers
from ..context.fill_helpers import project_fill_helper
from ..context.sentinels import only_added_or_selected
from ..context.precision import DTypeFact, precision_model
from ..torch_api.fill_helpers import FILL_HELPERS
from ..prefilter import words
from .base import Rule, because

# method name -> (index of the value among positional arguments, its keyword)
# (each checks the value against the tensor's dtype: "value cannot be converted to type c10::Half
# without overflow", measured for all of them)
METHODS = {"masked_fill": (1, "value"), "masked_fill_": (1, "value"), "fill_": (0, "value"),
           "fill_diagonal_": (0, "fill_value"), "new_full": (1, "fill_value"),
           "index_fill": (2, "value"), "index_fill_": (2, "value")}
# function -> positions/keywords of the values it writes into a tensor
FUNCTIONS = {
    "torch.full": ((1,), ("fill_value",)),
    "torch.full_like": ((1,), ("fill_value",)),
    "torch.masked_fill": ((2,), ("value",)),
    "torch.where": ((1, 2), ("input", "other")),
    "torch.nn.functional.pad": ((3,), ("value",)),
}


def _argument(call: cst.Call, position: int, keyword: str) -> Optional[cst.BaseExpression]:
    found = list(_arguments(call, (position,), (keyword,)))
    return found[0] if found else None


def _arguments(call: cst.Call, positions, keywords):
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for i in positions:
        if i < len(positional):
            yield positional[i].value
    for a in call.args:
        if a.keyword is not None and a.keyword.value in keywords:
            yield a.value


def _big_literal(expr: cst.BaseExpression) -> bool:
    """A number written out (``-1e20``, ``1e7``) beyond float16's range: the cheap test before a call is
    looked up as a project fill helper."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, (cst.Minus, cst.Plus)):
        expr = expr.expression
    if not isinstance(expr, (cst.Float, cst.Integer)):
        return False
    try:
        return abs(float(expr.value.replace("_", ""))) > FLOAT16.max
    except ValueError:
        return False


def overflowing(ctx, expr: cst.BaseExpression) -> Optional[float]:
    v = ctx.number(expr)
    if v is None or math.isinf(v) or math.isnan(v):
        return None  # float("-inf") is representable in float16
    return v if FLOAT16.classify(v) is Representation.OVERFLOW else None


def another_dtypes_limit(ctx, expr: cst.BaseExpression) -> Optional[float]:
    """``torch.finfo(x.dtype).max`` (``.min``; or ``torch.finfo(dtype)`` with ``dtype = x.dtype``)
    where ``x`` is float32: the float32 limit, written into another tensor (pytorch-metric-learning's
    miner took ``dtype = embeddings.dtype`` and filled a float16 distance matrix with it)."""
    if not (isinstance(expr, cst.Attribute) and expr.attr.value in ("max", "min") and isinstance(expr.value, cst.Call)
            and len(expr.value.args) == 1 and ctx.call_name(expr.value) == "torch.finfo"):
        return None
    pm = precision_model(ctx)
    dtype = expr.value.args[0].value
    if isinstance(dtype, cst.Name):
        dtype = pm.value_of(dtype) or dtype
    if not (isinstance(dtype, cst.Attribute) and dtype.attr.value == "dtype"):
        return None
    fact = pm.dtype_of(dtype.value)
    if fact.dtype != "float32" or fact.assumed:
        return None
    return finfo("torch.float32", expr.attr.value)


class Fp16OverflowConstant(Rule):
    code = "AMP103"
    name = "fp16-overflow-constant"
    summary = "Fill / mask constant beyond float16's ±65504 written into float16 tensors"
    fix_safety = "safe"
    applies_under = "fp16 (mixed or pure half)"
    # Library code is looked at again as under fp16 autocast (the library policy, docs/precision.md):
    # a float16 tensor cannot hold the value under any float16 use of the code (linformer's
    # masked_fill_(~mask, -1e10), GAU-alpha's -1e12: users training in fp16 hit the error).
    any_fp16_use = True
    # the call or method writing the value, or ``x[...] = value``; the value may be imported
    # (or a project's own fill helper, called with a number written out beyond float16's range: 1e5 and up)
    needs = words([*FUNCTIONS, *FILL_HELPERS, *METHODS]) + r"|\](?:[\s\\)]|#[^\n]*(?=\n))*=(?!=)" \
        + r"|\d[eE]\+?0*(?:[5-9]|[1-9]\d)\b|\b\d{5,}\b"

    def _targets(self, ctx):
        """(node, what, the tensor written to, the constant expression)."""
        for call in ctx.nodes(cst.Call):
            func = call.func
            name = ctx.call_name(call)
            if name in FUNCTIONS:
                positions, keywords = FUNCTIONS[name]
                for value in _arguments(call, positions, keywords):
                    yield call, name, self._function_tensor(ctx, call, name, value), value
            elif name in FILL_HELPERS:
                helper = FILL_HELPERS[name]
                if helper.only_if is not None:
                    switch = _argument(call, *helper.only_if)
                    if not (isinstance(switch, cst.Name) and switch.value == "True"):
                        continue  # the value is not written (allennlp's masked_softmax multiplies by the mask)
                value = _argument(call, *helper.value)
                if value is not None:
                    yield call, f"`{name.rsplit('.', 1)[-1]}(...)` (a masked_fill)", _argument(call, *helper.tensor), value
            elif isinstance(func, cst.Attribute) and func.attr.value in METHODS and not (name or "").startswith("torch."):
                pos, kw = METHODS[func.attr.value]
                tensor = func.value
                if func.attr.value == "new_full":
                    tensor = _argument(call, 99, "dtype") or tensor  # x.new_full(size, c, dtype=...)
                for value in _arguments(call, (pos,), (kw,)):
                    yield call, func.attr.value, tensor, value
            elif any(_big_literal(a.value) for a in call.args):
                # the project's own helper of that kind (``replace_masked_values(scores, mask, -1e20)``, B14-2)
                helper = project_fill_helper(ctx, call)
                value = _argument(call, *helper.value) if helper is not None else None
                if value is not None:
                    what = ctx.code(call.func).rsplit(".", 1)[-1]
                    yield call, f"`{what}(...)` (a masked_fill)", _argument(call, *helper.tensor), value
        for assign in ctx.nodes(cst.Assign):
            for t in assign.targets:
                if isinstance(t.target, cst.Subscript):
                    yield assign, "x[mask] =", t.target.value, assign.value

    @staticmethod
    def _function_tensor(ctx, call, name, value):
        """The tensor whose dtype the written value takes."""
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if name == "torch.where":
            # torch.where(cond, x, c): the scalar takes the dtype of the other branch
            others = [v for v in positional[1:3] if v is not value]
            return others[0] if others else None
        if name in ("torch.masked_fill", "torch.nn.functional.pad"):
            return positional[0] if positional else _argument(call, 99, "input")
        if name == "torch.full_like":
            for a in call.args:
                if a.keyword is not None and a.keyword.value == "dtype":
                    return a.value
            return positional[0] if positional else None
        for a in call.args:  # torch.full(size, c, dtype=...)
            if a.keyword is not None and a.keyword.value == "dtype":
                return a.value
        return None

    def _tensor_dtype(self, ctx, what, tensor):
        pm = precision_model(ctx)
        if tensor is None:
            if what == "torch.full":
                # No dtype: the default dtype, float16 only when the project sets it so.
                regime = ctx.regime
                if regime is not None and regime.half_params is not None:
                    return DTypeFact("float16", "likely", "the default dtype is float16 in this pure-half project",
                                     regime.half_params)
            return None
        name = ctx.qualname(tensor)
        if name in ("torch.float16", "torch.half"):
            return DTypeFact("float16", "certain", f"dtype={name}")
        if isinstance(tensor, cst.Attribute) and tensor.attr.value == "dtype":
            tensor = tensor.value  # dtype=x.dtype follows x
        return pm.dtype_of(tensor)

    def check(self, ctx) -> Iterable[Violation]:
        for node, what, tensor, value in self._targets(ctx):
            v = overflowing(ctx, value)
            if v is None:
                v = another_dtypes_limit(ctx, value)
            if v is None:
                continue
            fact = self._tensor_dtype(ctx, what, tensor)
            if fact is None or not fact.is_half:
                continue  # only a float16 tensor cannot hold the value
            if never_run_by_callers(ctx, value):
                continue  # a branch of a helper that no caller's literal argument takes
            if what == "x[mask] =" and v < 0 and only_added_or_selected(ctx, ctx.parent(tensor)):
                continue  # -inf as a "dead entry" sentinel, only added to scores and top-k'd (beam search)
            bound = "min" if v < 0 else "max"
            message = (f"{what} with {fmt(v)} on a float16 tensor: beyond float16's largest value "
                       f"±{fmt(FLOAT16.max)}, it raises 'value cannot be converted to type c10::Half "
                       f"without overflow' or becomes inf")
            conf = Confidence.of(fact)
            yield Violation(value, message, conf, _fix(ctx, node, tensor, value, bound),
                            help=f"use torch.finfo(x.dtype).{bound}", evidence=because(fact, ctx, value))


def _fix(ctx, node, tensor, value, bound: str) -> Optional[Fix]:
    """``torch.finfo(<tensor>.dtype).min`` (or ``.max``; ``torch.finfo(<dtype>)`` where the call
    names the dtype) in place of the constant. No fix when the tensor is not a plain name or
    attribute (repeating a call would compute it twice) or its dtype is not written out."""
    if tensor is None or not is_simple_reference(tensor):
        return None
    if isinstance(node, cst.Assign) and len(node.targets) != 1:
        return None  # ``a[m] = b[m] = c``: one value, two tensors
    dtype_arg = find_arg(node, "dtype") if isinstance(node, cst.Call) else None
    if dtype_arg is not None and dtype_arg.value is tensor:
        dtype = tensor.deep_clone()  # torch.full(..., dtype=torch.float16) / dtype=x.dtype
    else:
        dtype = cst.Attribute(value=tensor.deep_clone(), attr=cst.Name("dtype"))
    torch, imports = module_alias(ctx, "torch")
    if torch is None:
        return None
    finfo = cst.Attribute(value=cst.Call(func=attribute_chain(f"{torch}.finfo"), args=[cst.Arg(dtype)]),
                          attr=cst.Name(bound))
    return Fix(f"Use `{ctx.code(finfo)}`", replacements=[(value, finfo)], imports=imports)
