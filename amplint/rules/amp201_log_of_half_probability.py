"""AMP201 log-of-half-probability."""
from __future__ import annotations

import math
from typing import Iterable, Optional

import libcst as cst

from ..context.precision import F16
from ..context.probability import LOG_WORDS, LogUse, in_handwritten_bce, log_uses
from ..edits.logits import as_float, bare, functional, logits_at, negated, stable
from ..findings import Applicability, Confidence, Fix, Violation
from ..fp16 import BFLOAT16, FLOAT16, fmt, pow2
from .base import Rule, because


def zero_logit() -> float:
    """sigmoid(x) ~ e^x rounds to 0 in float16 below this x."""
    return math.log(FLOAT16.underflow_threshold)


def one_logit(dtype: str) -> float:
    """sigmoid(x) rounds to 1.0 above this x: 1 - sigmoid(x) ~ e^-x is below half the spacing of
    the format just below 1."""
    f = FLOAT16 if dtype == F16 else BFLOAT16
    return -math.log(f.epsilon_below_one / 2)


def _logit(x: float) -> str:
    return f"{x:.1f}"


def _what(u: LogUse) -> str:
    """``log of a float16 sigmoid`` / ``log(1 - p) with p a bfloat16 sigmoid``."""
    src = u.trace.source
    d = src.fact.dtype
    p = {"sigmoid": "sigmoid", "softmax": "softmax", "division": "normalised weights"}[src.kind]
    if not u.trace.complement:
        return f"{u.fn} of a {d} {p}" if src.kind != "division" else f"{u.fn} of {d} {p}"
    shape = "log1p(-p)" if u.fn == "log1p" else f"{u.fn}(1 - p)"
    return f"{shape} with p a {d} {p}" if src.kind != "division" else f"{shape} with p {d} {p}"


def _mechanism(u: LogUse) -> str:
    src = u.trace.source
    d = src.fact.dtype
    if u.trace.complement:
        if src.kind == "sigmoid":
            return (f"sigmoid(x) rounds to 1.0 in {d} for x above about {_logit(one_logit(d))}, so 1 - p is 0, "
                    f"the log -inf")
        half_spacing = (FLOAT16 if d == F16 else BFLOAT16).epsilon_below_one / 2
        return (f"a probability within {pow2(half_spacing)} ≈ {fmt(half_spacing)} of 1 rounds to 1.0 in {d}, "
                f"so 1 - p is 0, the log -inf")
    if src.kind == "sigmoid":
        return f"sigmoid(x) rounds to 0 in float16 for x below about {_logit(zero_logit())}, so the log is -inf"
    return (f"probabilities below {pow2(FLOAT16.underflow_threshold)} ≈ {fmt(FLOAT16.underflow_threshold)} "
            f"round to 0 in float16" + (f" (a logit {_logit(-zero_logit())} below the row's largest)"
                                         if src.kind == "softmax" else "") + ", so the log is -inf")


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _advice(u: LogUse) -> str:
    kind = u.trace.source.kind
    if kind == "sigmoid":
        return "F.logsigmoid(-x)" if u.trace.complement else "F.logsigmoid(x)"
    if kind == "softmax" and not u.trace.complement:
        return "F.log_softmax(x, dim)"
    if kind == "softmax":
        return "the softmax computed in float32"
    return "log-space arithmetic or float32"


class LogOfHalfProbability(Rule):
    code = "AMP201"
    name = "log-of-half-probability"
    summary = "log of a float16 sigmoid / softmax / 1 - p that can round to 0 (or 1) before the log"
    fix_safety = "safe"
    applies_under = "fp16 (mixed or pure half); log(1 - p) also bf16"
    # Library code is looked at again as under fp16 autocast (the library policy, docs/precision.md):
    # what this rule reports there is a hazard under any float16 use of the code.
    any_fp16_use = True
    # the log reported (``torch.log(p)``, ``p.log1p_()``...); the probability may come from elsewhere
    needs = LOG_WORDS

    def check(self, ctx) -> Iterable[Violation]:
        for u in log_uses(ctx):
            if u.guard is not None:
                continue  # a guard that survives keeps the log finite; one that vanishes is AMP102's
            if not u.can_reach_log_zero():
                continue
            vanished = u.vanished_bound()
            if vanished is not None and vanished.side == "min":
                continue  # a lower clamp that rounds to 0 is AMP102's, as a guard added to p is
            if in_handwritten_bce(ctx, u.call) is not None:
                continue  # AMP202 reports the whole hand-written binary cross-entropy
            fact = u.trace.source.fact
            fix = _fix(ctx, u)
            message = f"{_what(u)}: {_mechanism(u)} and its gradient NaN"
            if vanished is not None:
                # p.clamp(max=1 - 1e-6) under log(1 - p): the bound is 1.0 in the dtype, no guard.
                bound = vanished.node
                message += (f"; `{_text(bound)}` does not prevent it: its upper bound rounds to 1.0 in "
                            f"{fact.dtype}")
                if fix is not None:
                    fix = Fix(fix.description, Applicability.UNSAFE, replacements=fix.replacements,
                              imports=fix.imports)  # the clamp also capped the loss: dropping it changes values
            conf = Confidence.of(fact)
            yield Violation(u.call, message, conf, fix, help=f"use {_advice(u)}", evidence=because(fact, ctx, u.call))


def _replace_log(u: LogUse, new: cst.BaseExpression, imports) -> Fix:
    new = new.with_changes(lpar=u.call.lpar, rpar=u.call.rpar)
    return Fix(f"Use `{_text(new)}`", Applicability.SAFE, replacements=[(u.call, new)], imports=list(imports))


def _fix(ctx, u: LogUse) -> Optional[Fix]:
    """``F.logsigmoid(x)`` / ``F.logsigmoid(-x)`` / ``log_softmax`` in place of the log (safe: the
    same function, computed without the rounding); else ``.float()`` on the logits (unsafe: the
    probabilities, and what is computed from them, become float32)."""
    prob = u.trace.source.prob
    if prob is None or u.trace.source.recast or u.trace.crossed:
        return None  # normalised weights (rewrite by hand), rounded by a later cast, or made in another function
    logits = logits_at(ctx, u.trace, u.call)
    if logits is not None and prob.kind == "sigmoid" and (u.fn == "log" or (u.fn == "log1p" and u.trace.complement)):
        name = functional(ctx, "logsigmoid")
        if name is not None:
            func, imports = name
            arg = negated(logits) if u.trace.complement else bare(logits)
            return _replace_log(u, cst.Call(func=func, args=[cst.Arg(arg)]), imports)
    if logits is not None and prob.kind == "softmax" and u.fn == "log" and not u.trace.complement \
            and prob.form != "module" and _args_stable(ctx, prob.call, u.call):
        func = prob.call.func
        imports: list = []
        if isinstance(func, cst.Attribute):
            func = func.with_changes(attr=cst.Name("log_softmax"))
        else:
            name = functional(ctx, "log_softmax")
            func, imports = name if name is not None else (None, [])
        if func is not None:
            return _replace_log(u, prob.call.deep_clone().with_changes(func=func, lpar=[], rpar=[]), imports)
    if prob.logits is None or prob.form == "inplace":
        return None  # (``x.float().sigmoid_()`` would no longer overwrite ``x``: rewrite by hand)
    new_logits = as_float(prob.logits)
    return Fix(f"Compute the {prob.kind} in float32: `{_text(new_logits)}`", Applicability.UNSAFE,
               replacements=[(prob.logits, new_logits)])


def _args_stable(ctx, call: cst.Call, at: cst.CSTNode) -> bool:
    """Every argument of ``call`` means the same at ``at``: constants, strings, torch names, or
    names whose binding is unchanged. Trivially so when the call is inside ``at``."""
    if any(a is at for a in ctx.ancestors(call)):
        return True
    for a in call.args:
        if a.star:
            return False
        if ctx.number(a.value) is not None or isinstance(a.value, cst.SimpleString):
            continue
        q = ctx.qualname(a.value) if isinstance(a.value, (cst.Name, cst.Attribute)) else None
        if q and q.startswith("torch."):
            continue  # dtype=torch.float32
        if not stable(ctx, a.value, call, at):
            return False
    return True
