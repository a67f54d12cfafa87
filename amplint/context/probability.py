"""Probabilities and their logs: where a value fed to ``log`` comes from.

Shared by AMP201 (log of a half-precision probability), AMP202 (hand-written BCE) and AMP102
(guards that vanish in float16), so that the three agree on who reports what:

- a ``log`` whose argument carries a guard (``log(p + eps)``, ``log(p.clamp(min=eps))``) is not
  AMP201's: a guard that survives keeps the log finite, and one that rounds to 0 is AMP102's;
- a hand-written binary cross-entropy (``y * log(p)`` and ``(1 - y) * log(1 - p)`` of the same
  ``p`` combined in one expression) is AMP202's, guards included: AMP201 and AMP102 skip its logs.

The dtypes come from the precision model; this module only follows values back (through local
names, indexing, reshaping and casts) to the sigmoid / softmax / normalising division that made
them. Results are memoised per file in ``ctx._cache``.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..fp16 import BFLOAT16, FLOAT16, Representation
from .precision import BF16, F16, DTypeFact, entry_key, precision_model

SIGMOID_NAMES = {"torch.sigmoid", "torch.nn.functional.sigmoid", "torch.special.expit", "torch.Tensor.sigmoid",
                 "torch.sigmoid_", "torch.Tensor.sigmoid_"}
SOFTMAX_NAMES = {"torch.softmax", "torch.nn.functional.softmax", "torch.special.softmax", "torch.Tensor.softmax"}
LOG_NAMES = {"torch.log": "log", "torch.log2": "log2", "torch.log10": "log10", "torch.log1p": "log1p",
             "torch.special.log1p": "log1p"}
LOG_METHODS = {"log", "log2", "log10", "log1p", "log_", "log2_", "log10_", "log1p_"}
# A log of either form as written in a file's text (the rules' prefilter needs: amplint.prefilter)
LOG_WORDS = r"\b(?:" + "|".join(sorted({n.rsplit(".", 1)[-1] for n in LOG_NAMES} | LOG_METHODS)) + r")\b"
# Clamps with a lower and / or an upper bound: (min, max) positions after the clamped value.
_BOUNDED_METHODS = {"clamp": "both", "clamp_": "both", "clip": "both", "clip_": "both", "clamp_min": "min",
                    "clamp_min_": "min", "clamp_max": "max", "clamp_max_": "max"}
_BOUNDED_FUNCTIONS = {"torch.clamp": "both", "torch.clip": "both", "torch.clamp_min": "min", "torch.clamp_max": "max"}
# Operations that pick, reshape or cast probabilities without moving them away from 0 and 1.
_PASS_METHODS = {"view", "reshape", "squeeze", "unsqueeze", "flatten", "contiguous", "gather", "index_select",
                 "select", "narrow", "t", "transpose", "permute", "float", "double", "half", "bfloat16", "to",
                 "type_as", "clone", "detach", "expand", "expand_as", "masked_select", "take_along_dim",
                 "view_as", "reshape_as", "movedim", "squeeze_", "unsqueeze_", "cpu", "cuda"}
_PASS_FUNCTIONS = {"torch.gather", "torch.index_select", "torch.take_along_dim", "torch.squeeze", "torch.unsqueeze",
                   "torch.flatten", "torch.reshape", "torch.select", "torch.narrow", "torch.masked_select",
                   "torch.transpose", "torch.permute"}
_SUM_NAMES = {"torch.sum"}
_CASTS = {"half", "bfloat16", "to", "type_as", "type"}


def _is_module_receiver(ctx, expr: cst.BaseExpression) -> bool:
    """``torch`` / ``F`` in ``torch.log(...)``: a receiver that names an imported module."""
    node = expr
    while isinstance(node, cst.Attribute):
        node = node.value
    return isinstance(node, cst.Name) and ctx.imports.binds(node.value)


def _first_arg(call: cst.Call, keyword: str = "input") -> Optional[cst.BaseExpression]:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    for a in call.args:
        if a.keyword is None and not a.star:
            return a.value
    return None


def method_of(ctx, call: cst.Call) -> Optional[Tuple[str, cst.BaseExpression]]:
    """``(name, receiver)`` of a tensor method call ``x.name(...)`` (not ``torch.name(...)``)."""
    func = call.func
    if isinstance(func, cst.Attribute) and not _is_module_receiver(ctx, func.value):
        if isinstance(func.value, cst.Name) and func.value.value == "self":
            return None  # self.sigmoid(x): a submodule, see probability_call
        return func.attr.value, func.value
    return None


@dataclass(frozen=True)
class ProbabilityCall:
    """A sigmoid / softmax producing probabilities, with its logits argument."""
    kind: str  # "sigmoid" | "softmax"
    call: cst.Call
    logits: Optional[cst.BaseExpression]
    # "function" (torch.sigmoid(x)) | "method" (x.sigmoid()) | "module" (self.act(x)) | "inplace"
    # (x.sigmoid_(), torch.sigmoid_(x): the logits are overwritten by the probabilities)
    form: str


def probability_call(ctx, expr: cst.BaseExpression) -> Optional[ProbabilityCall]:
    if not isinstance(expr, cst.Call):
        return None
    name = ctx.call_name(expr) or ""
    for kind, names in (("sigmoid", SIGMOID_NAMES), ("softmax", SOFTMAX_NAMES)):
        if name in names and (not isinstance(expr.func, cst.Attribute) or _is_module_receiver(ctx, expr.func.value)
                              or isinstance(expr.func, cst.Name)):
            return ProbabilityCall(kind, expr, _first_arg(expr), "inplace" if name.endswith("_") else "function")
    m = method_of(ctx, expr)
    if m is not None and m[0] in ("sigmoid", "softmax"):
        return ProbabilityCall(m[0], expr, m[1], "method")
    if m is not None and m[0] == "sigmoid_":
        return ProbabilityCall("sigmoid", expr, m[1], "inplace")
    cls = precision_model(ctx).module_class(expr.func) or ""
    if cls.startswith("torch.nn.") and cls.rsplit(".", 1)[-1] in ("Sigmoid", "Softmax"):
        return ProbabilityCall(cls.rsplit(".", 1)[-1].lower(), expr, _first_arg(expr), "module")
    return None


@dataclass(frozen=True)
class Source:
    """Where probabilities are computed, and in what dtype."""
    kind: str  # "sigmoid" | "softmax" | "division"
    node: cst.CSTNode  # the sigmoid / softmax call, or the division
    prob: Optional[ProbabilityCall]  # None for a division
    fact: DTypeFact  # dtype the probabilities are rounded to: where computed, or a later cast
    recast: bool = False  # the rounding dtype comes from a cast after the source (``.type_as(h)``)


@dataclass(frozen=True)
class Bound:
    """A clamp passed on the way from the source: ``p.clamp(max=1 - 1e-6)``. It keeps a log finite
    only if it survives rounding to the source's dtype (``1 - 1e-6`` is 1.0 in float16)."""
    side: str  # "min" | "max"
    value: Optional[float]  # None: not a constant (taken to keep the log finite)
    complement: bool  # the clamped value was 1 - p
    node: cst.CSTNode  # the clamp call


@dataclass(frozen=True)
class Trace:
    source: Source
    complement: bool  # the value is 1 - p
    direct: bool  # nothing but local names between the value and the source (or ``1 - source``)
    names: Tuple[cst.Name, ...] = ()  # the local names followed
    bounds: Tuple[Bound, ...] = ()  # clamps on the way
    # followed into a helper's return or out to what a function's callers pass (the source and the
    # bounds may lie in another function or file: no fix rewrites them from here)
    crossed: bool = False


def _is_one(ctx, expr) -> bool:
    return ctx.number(expr) == 1.0


def _normalising_division(ctx, e: cst.BinaryOperation) -> bool:
    """``a / a.sum(dim, keepdim=True)`` (or ``torch.sum(a, ...)``): weights normalised to sum 1."""
    if not isinstance(e.operator, cst.Divide) or not isinstance(e.right, cst.Call):
        return False
    right = e.right
    m = method_of(ctx, right)
    if m is not None and m[0] == "sum":
        base = m[1]
    elif ctx.call_name(right) in _SUM_NAMES:
        base = _first_arg(right)
    else:
        return False
    return base is not None and ctx.code(base) == ctx.code(e.left)


def _clamp_bounds(ctx, call: cst.Call):
    """``(clamped value, [(side, bound expression)])`` of a clamp of a value with constant or named
    bounds (``x.clamp(min=a, max=b)``, ``x.clamp_max(b)``, ``torch.clamp(x, a, b)``); None otherwise."""
    m = method_of(ctx, call)
    name = ctx.call_name(call) or ""
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if m is not None and m[0] in _BOUNDED_METHODS:
        value, kind, rest = m[1], _BOUNDED_METHODS[m[0]], positional
    elif name in _BOUNDED_FUNCTIONS and (isinstance(call.func, cst.Name) or _is_module_receiver(ctx, call.func.value)):
        value, kind = _first_arg(call), _BOUNDED_FUNCTIONS[name]
        rest = positional[1:] if positional and positional[0] is value else positional
    else:
        return None
    if value is None or any(a.star for a in call.args):
        return None
    sides = ["min", "max"] if kind == "both" else [kind]
    bounds = dict(zip(sides, rest))
    for a in call.args:
        if a.keyword is not None and a.keyword.value in sides:
            bounds[a.keyword.value] = a.value
    if not bounds:
        return None
    return value, [(side, b) for side, b in bounds.items() if not (isinstance(b, cst.Name) and b.value == "None")]


def trace(ctx, expr: cst.BaseExpression, _depth: int = 0) -> Optional[Trace]:
    """The probability source of ``expr``, through names, indexing, reshaping and casts."""
    if _depth > 12 or expr is None:
        return None
    pm = precision_model(ctx)
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        if value is None:
            return _passed_trace(ctx, pm, expr, _depth)
        t = trace(ctx, value, _depth + 1)
        if t is None:
            return None
        direct = t.direct and isinstance(pm.binding_at(expr.value, expr), cst.BaseExpression)
        return replace(t, direct=direct, names=(expr, *t.names))
    prob = probability_call(ctx, expr)
    if prob is not None:
        return Trace(Source(prob.kind, prob.call, prob, pm.dtype_of(prob.call)), False, True)
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, cst.Subtract) and _is_one(ctx, expr.left):
            t = trace(ctx, expr.right, _depth + 1)
            return replace(t, complement=not t.complement) if t is not None else None
        if _normalising_division(ctx, expr):
            return Trace(Source("division", expr, None, pm.dtype_of(expr)), False, True)
        if isinstance(expr.operator, cst.Multiply):
            # ``torch.sigmoid(logits) * valid_mask.to(logits.dtype)`` (GLiNER2): a 0/1 mask keeps the
            # probabilities it lets through as they are, rounding included
            for side, other in ((expr.left, expr.right), (expr.right, expr.left)):
                if _is_mask(ctx, other):
                    t = trace(ctx, side, _depth + 1)
                    return replace(t, direct=False) if t is not None else None
        return None
    if isinstance(expr, cst.Subscript):
        key = entry_key(expr)
        held = pm.entry_value(expr.value, key, expr) if key is not None and isinstance(expr.value, cst.Name) else None
        if isinstance(held, cst.BaseExpression):
            # ``pred_dict["hm"] = self.sigmoid(pred_dict["hm"])``, then ``loss(pred_dict["hm"], gt)``
            t = trace(ctx, held, _depth + 1)
            return replace(t, direct=False) if t is not None else None
        t = trace(ctx, expr.value, _depth + 1)
        return replace(t, direct=False) if t is not None else None
    if isinstance(expr, cst.Call):
        bounded = _clamp_bounds(ctx, expr)
        if bounded is not None:
            clamped, bounds = bounded
            t = trace(ctx, clamped, _depth + 1)
            if t is None:
                return None
            new = tuple(Bound(side, None if b is None else ctx.number(b), t.complement, expr) for side, b in bounds)
            return replace(t, direct=False, bounds=(*t.bounds, *new))
        returned = _returned_trace(ctx, pm, expr, _depth)
        if returned is not None:
            return returned
        m = method_of(ctx, expr)
        inner = None
        if m is not None and m[0] in _PASS_METHODS:
            inner = m[1]
        elif ctx.call_name(expr) in _PASS_FUNCTIONS:
            inner = _first_arg(expr)
        if inner is not None:
            t = trace(ctx, inner, _depth + 1)
            if t is None:
                return None
            source = t.source
            if m is not None and m[0] in _CASTS:
                # softmax(x.float()).type_as(x): the probabilities are rounded at the cast
                d = pm.dtype_of(expr)
                if d.dtype == F16 and source.fact.dtype != F16 or d.dtype == BF16 and source.fact.dtype not in (F16, BF16):
                    source = Source(source.kind, source.node, source.prob, d, True)
            return replace(t, source=source, direct=False)
    return None


def _passed_trace(ctx, pm, name: cst.Name, depth: int) -> Optional[Trace]:
    """A parameter of a function whose calls pass probabilities: ``heat_loss(pred, gt)`` called with
    ``pred = clamp_sigmoid(self.conv(feats))`` (OpenPCDet's CenterHead: the clamp in one helper,
    the ``log(1 - pred)`` in a focal loss, M14-1). The calls are those of the file, and for a
    module-level function or a module's ``forward`` those of the project's other files too
    (``callers.passed_values``: ``neg_loss_cornernet(hm, gt)`` in the head's module; the loss
    object's ``self.hm_loss_func(pred_dict["hm"], gt)``, its forward handing ``out`` on to
    ``self.neg_loss = neg_loss_cornernet``). The first call's trace, crossed; None when there is no
    call, when one passes something else, or when the function is a public method other code may
    call. A call passing on a parameter of a function nothing calls (a loss class built but never
    run) is no path the value takes: left out."""
    from .callers import passed_values  # noqa: PLC0415 (callers imports the precision model)
    bound = pm.binding_at(name.value, name)
    if not (isinstance(bound, tuple) and len(bound) == 3 and bound[0] == "param"):
        return None
    fn, param = bound[1], bound[2]
    if param.default is not None or depth > 8:
        return None
    owner = ctx.parent(ctx.parent(fn))
    forward = fn.name.value == "forward" and isinstance(owner, cst.ClassDef) and ctx.parent(owner) is ctx.module
    if ctx.parent(fn) is not ctx.module and not forward and not fn.name.value.startswith("_"):
        return None
    passed = passed_values(pm, fn, name.value, elsewhere=ctx.parent(fn) is ctx.module or forward)
    traces = []
    for p in passed:
        if p.value is None:
            return None
        t = trace(p.model.ctx, p.value, depth + 1)
        if t is None:
            if _passes_on_uncalled(p, depth):
                continue
            return None
        traces.append(t)
    if not traces:
        return None
    return replace(traces[0], direct=False, names=(), crossed=True)


def _passes_on_uncalled(p, depth: int) -> bool:
    """Does the call ``p`` (a ``callers.Passed``) pass on a parameter of its function that no call
    gives a value (``forward(self, out, target)`` of a loss module nothing runs)?"""
    from .callers import passed_values  # noqa: PLC0415
    model, value = p.model, p.value
    if not isinstance(value, cst.Name) or depth > 8:
        return False
    bound = model.binding_at(value.value, value)
    if not (isinstance(bound, tuple) and len(bound) == 3 and bound[0] == "param"):
        return False
    fn = bound[1]
    ctx = model.ctx
    owner = ctx.parent(ctx.parent(fn))
    elsewhere = ctx.parent(fn) is ctx.module or (isinstance(owner, cst.ClassDef) and ctx.parent(owner) is ctx.module)
    return not passed_values(model, fn, value.value, elsewhere=elsewhere)


def _returned_trace(ctx, pm, call: cst.Call, depth: int) -> Optional[Trace]:
    """A call of a function of this file whose one ``return`` gives probabilities (``def
    clamp_sigmoid(x): return torch.clamp(x.sigmoid(), min=1e-4, max=1 - 1e-4)``): that return's
    trace, crossed; None otherwise."""
    if depth > 8:
        return None
    fn = pm._callee(call)
    if fn is None or ctx.enclosing_function(call) is fn:
        return None
    values = pm.return_values(fn)
    if len(values) != 1:
        return None
    t = trace(ctx, values[0], depth + 1)
    return replace(t, direct=False, names=(), crossed=True) if t is not None else None


_MASK_NAME = re.compile(r"(?i)mask")


def _is_mask(ctx, expr: cst.BaseExpression) -> bool:
    """A 0/1 mask: a name or attribute called so, or a comparison, possibly cast
    (``valid_mask.to(x.dtype)``, ``(lengths > 0).float()``)."""
    for _ in range(4):
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and \
                expr.func.attr.value in ("to", "float", "half", "type_as", "type", "bfloat16", "unsqueeze"):
            expr = expr.func.value
            continue
        break
    if isinstance(expr, cst.Comparison):
        return True
    if isinstance(expr, cst.Name):
        return bool(_MASK_NAME.search(expr.value))
    if isinstance(expr, cst.Attribute):
        return bool(_MASK_NAME.search(expr.attr.value))
    if isinstance(expr, cst.Subscript):
        return _is_mask(ctx, expr.value)
    return False


# ---- logs ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Guard:
    """A constant keeping a log's argument off zero: ``p + c`` or ``p.clamp(min=c)``."""
    node: cst.CSTNode  # the BinaryOperation or clamp Call
    constant: cst.BaseExpression
    value: float


@dataclass(frozen=True)
class LogUse:
    call: cst.Call
    fn: str  # log | log2 | log10 | log1p
    form: str  # "function" | "method"
    arg: cst.BaseExpression  # what the log is applied to (the receiver for ``.log()``)
    guard: Optional[Guard]
    trace: Trace  # where the (unguarded part of the) argument comes from

    @property
    def dtype(self) -> Optional[str]:
        return self.trace.source.fact.dtype

    def can_reach_log_zero(self) -> bool:
        """The probability can round to 0 (``p`` in float16) or to 1 (``1 - p`` in float16 or
        bfloat16: bfloat16 has float32's range but only 8 bits of precision)."""
        d = self.dtype
        if not (d == F16 or (d == BF16 and self.trace.complement)):
            return False
        return not any(self._keeps_finite(b) for b in self.trace.bounds)

    def _keeps_finite(self, bound: "Bound") -> bool:
        """Whether a clamp on the way keeps the log's argument above 0 once rounded to the dtype: a
        lower bound on the argument itself, or an upper bound on what the argument is 1 minus."""
        if bound.value is None:
            return True  # a bound held in a name or a tensor: not judged
        fmt = FLOAT16 if self.dtype == F16 else BFLOAT16
        if bound.complement == self.trace.complement:
            return bound.side == "min" and fmt.round(bound.value) > 0
        return bound.side == "max" and fmt.round(bound.value) < 1.0

    def vanished_bound(self) -> Optional["Bound"]:
        """A clamp meant to keep the log finite that rounds away in the dtype (``p.clamp(max=1 - 1e-6)``
        under ``log(1 - p)``: 1 - 1e-6 is 1.0 in float16), when no other bound keeps it finite."""
        if any(self._keeps_finite(b) for b in self.trace.bounds):
            return None
        for b in self.trace.bounds:
            if b.value is not None and (b.side == "max") != (b.complement == self.trace.complement):
                return b
        return None

    def guard_survives(self) -> bool:
        if self.guard is None:
            return False
        fmt = FLOAT16 if self.dtype == F16 else BFLOAT16
        return fmt.classify(self.guard.value) is not Representation.ZERO


def clamp_min(ctx, call: cst.Call) -> Optional[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    """``(clamped value, min argument)`` of ``x.clamp(min=c)``, ``x.clamp(c, ...)``,
    ``x.clamp_min(c)``, ``torch.clamp(x, min=c)``, ``torch.clamp(x, c)``; None otherwise."""
    bounded = _clamp_bounds(ctx, call)
    if bounded is None:
        return None
    value, bounds = bounded
    low = dict(bounds).get("min")
    return (value, low) if low is not None else None


def _guard_of(ctx, arg: cst.BaseExpression) -> Tuple[Optional[Guard], cst.BaseExpression]:
    if isinstance(arg, cst.BinaryOperation) and isinstance(arg.operator, cst.Add):
        for const, other in ((arg.right, arg.left), (arg.left, arg.right)):
            v = ctx.number(const)
            if v is not None and v > 0 and ctx.number(other) is None:
                return Guard(arg, const, v), other
    if isinstance(arg, cst.Call):
        cm = clamp_min(ctx, arg)
        if cm is not None:
            v = ctx.number(cm[1])
            if v is not None and v > 0:
                return Guard(arg, cm[1], v), cm[0]
    return None, arg


def log_call(ctx, call: cst.Call) -> Optional[Tuple[str, str, cst.BaseExpression]]:
    """``(fn, form, argument)`` of ``torch.log(x)`` / ``x.log()`` and their log2/log10/log1p kin."""
    name = ctx.call_name(call) or ""
    if name in LOG_NAMES and (isinstance(call.func, cst.Name) or _is_module_receiver(ctx, call.func.value)):
        arg = _first_arg(call)
        return (LOG_NAMES[name], "function", arg) if arg is not None else None
    m = method_of(ctx, call)
    if m is not None and m[0] in LOG_METHODS and not call.args:
        return m[0].rstrip("_"), "method", m[1]
    return None


def log_uses(ctx) -> List[LogUse]:
    """Every log of a traced probability in the file (memoised)."""
    key = "probability.log_uses"
    if key in ctx._cache:
        return ctx._cache[key]  # type: ignore[return-value]
    out: List[LogUse] = []
    for call in ctx.nodes(cst.Call):
        lc = log_call(ctx, call)
        if lc is None:
            continue
        fn, form, arg = lc
        guard, inner = _guard_of(ctx, arg)
        complement_flip = False
        if fn == "log1p":
            # log1p(-p) is log(1 - p); log1p(p) of a probability cannot reach log(0).
            if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus) and guard is None:
                inner = inner.expression
                complement_flip = True
            else:
                continue
        t = trace(ctx, inner)
        if t is None:
            continue
        if complement_flip:
            t = replace(t, complement=not t.complement)
        out.append(LogUse(call, fn, form, arg, guard, t))
    ctx._cache[key] = out
    return out


# ---- hand-written binary cross-entropy ----------------------------------------------------------
@dataclass(frozen=True)
class HandwrittenBCE:
    node: cst.BaseExpression  # what is reported: the sum, or the unary minus negating it (through
    # ``.mean()`` / ``.sum()``: ``-(y * log(p) + (1 - y) * log(1 - p)).mean()``)
    combine: cst.BinaryOperation  # the + / - joining the two terms
    positive: LogUse  # log(p)
    negative: LogUse  # log(1 - p)

    @property
    def logs(self) -> Tuple[LogUse, LogUse]:
        return self.positive, self.negative

    def hazardous(self) -> bool:
        return any(u.can_reach_log_zero() and not u.guard_survives() for u in self.logs)


def _lowest_common_ancestor(ctx, a: cst.CSTNode, b: cst.CSTNode) -> Optional[cst.CSTNode]:
    above_a = {id(n) for n in ctx.ancestors(a)}
    for n in ctx.ancestors(b):
        if id(n) in above_a:
            return n
    return None


_REDUCTIONS = {"mean", "sum"}


def _through_reductions(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """``(...).mean()``, ``(...).sum(-1).mean()``, ``torch.mean(...)`` around ``node`` (linear, so
    a minus outside them negates ``node``): the outermost of them, or ``node``."""
    cur = node
    while True:
        parent = ctx.parent(cur)
        grand = ctx.parent(parent) if parent is not None else None
        if isinstance(parent, cst.Attribute) and parent.value is cur and isinstance(grand, cst.Call) \
                and grand.func is parent and parent.attr.value in _REDUCTIONS:
            cur = grand
        elif isinstance(parent, cst.Arg) and parent.value is cur and parent.keyword is None \
                and isinstance(grand, cst.Call) and ctx.call_name(grand) in ("torch.mean", "torch.sum") \
                and grand.args and grand.args[0] is parent:
            cur = grand
        else:
            return cur


def handwritten_bces(ctx) -> List[HandwrittenBCE]:
    """``y * log(p) + (1 - y) * log(1 - p)`` (any sign, order and factors) of one ``p`` in one
    expression (memoised)."""
    key = "probability.bce"
    if key in ctx._cache:
        return ctx._cache[key]  # type: ignore[return-value]
    uses = log_uses(ctx)
    out: List[HandwrittenBCE] = []
    by_source: Dict[int, List[LogUse]] = {}
    for u in uses:
        if u.fn == "log" and not u.trace.crossed:  # (one expression of one function's p)
            by_source.setdefault(id(u.trace.source.node), []).append(u)
    taken = set()
    for group in by_source.values():
        for pos in group:
            if pos.trace.complement:
                continue
            for neg in group:
                if not neg.trace.complement or id(neg.call) in taken or id(pos.call) in taken:
                    continue
                lca = _lowest_common_ancestor(ctx, pos.call, neg.call)
                if not (isinstance(lca, cst.BinaryOperation) and isinstance(lca.operator, (cst.Add, cst.Subtract))):
                    continue
                node: cst.BaseExpression = lca
                top = _through_reductions(ctx, lca)
                parent = ctx.parent(top)
                if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
                    node = parent
                out.append(HandwrittenBCE(node, lca, pos, neg))
                taken.update((id(pos.call), id(neg.call)))
    ctx._cache[key] = out
    return out


def in_handwritten_bce(ctx, node: cst.CSTNode) -> Optional[HandwrittenBCE]:
    """The hazardous hand-written BCE (AMP202's) that ``node`` (a log call or a guard) belongs to."""
    for bce in handwritten_bces(ctx):
        if not bce.hazardous():
            continue
        for u in bce.logs:
            if node is u.call or (u.guard is not None and (node is u.guard.node or node is u.guard.constant)):
                return bce
    return None


# Random draws in [0, 1): sampled, never computed from the data.
_UNIFORM_FUNCTIONS = {"torch.rand", "torch.rand_like"}
_UNIFORM_METHODS = {"uniform_"}


def uniform_draw(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Is ``expr`` a uniform random draw (``torch.rand_like(x)``, ``torch.zeros_like(t).uniform_(0, 1)``),
    or the exponential draw ``-log(u)`` of one (positive for u < 1), through local names and the project's
    own ``log(t, eps)`` helpers? Gumbel noise ``-log(-log(u + eps) + eps)`` is built from them: a draw is 0
    with probability below 2^-24 per element, and then one candidate's noise is -inf (it is not sampled),
    a sampling detail rather than a hazard of the data."""
    if depth > 6:
        return False
    if isinstance(expr, cst.Name):
        value = precision_model(ctx).value_of(expr)
        return value is not None and uniform_draw(ctx, value, depth + 1)
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add):
        # u + eps: the guarded draw itself
        for a, b in ((expr.left, expr.right), (expr.right, expr.left)):
            if ctx.number(b) is not None and uniform_draw(ctx, a, depth + 1):
                return True
        return False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = expr.expression
        if isinstance(inner, cst.Call) and inner.args and _is_log_call(ctx, inner):
            return uniform_draw(ctx, inner.args[0].value, depth + 1)
        return False
    if isinstance(expr, cst.Call):
        if ctx.call_name(expr) in _UNIFORM_FUNCTIONS:
            return True
        return isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _UNIFORM_METHODS
    return False


def _is_log_call(ctx, call: cst.Call) -> bool:
    name = ctx.call_name(call) or ""
    if name in LOG_NAMES or name.rsplit(".", 1)[-1] == "log" and "." not in name:
        return True  # torch.log, or a project's own ``log(t, eps=1e-20)`` helper
    return isinstance(call.func, cst.Attribute) and call.func.attr.value == "log" and not call.args
