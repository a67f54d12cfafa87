"""Edits shared by the fixes of AMP201 and AMP202: naming ``torch.nn.functional`` in the file being
fixed, reusing a sigmoid's logits elsewhere, negating and casting expressions."""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from ..context.imports import dotted_name
from ..context.precision import precision_model
from ..context.probability import ProbabilityCall, Trace
from . import _module_level, attribute_chain, module_alias

FUNCTIONAL = "torch.nn.functional"


def functional(ctx, attr: str) -> Optional[Tuple[cst.BaseExpression, List[str]]]:
    """``F.<attr>`` spelled the way this file can: through its own module-level alias of
    ``torch.nn.functional`` (``F``, ``nnf``, ``functional``), else ``F`` with ``import
    torch.nn.functional as F`` added when the name ``F`` is free, else
    ``torch.nn.functional.<attr>`` through the file's ``torch``. None when none of these works."""
    for node in ctx.nodes(cst.Import):
        if not _module_level(ctx, node):
            continue
        for alias in node.names:
            if dotted_name(alias.name) == FUNCTIONAL and alias.asname is not None \
                    and isinstance(alias.asname.name, cst.Name):
                return attribute_chain(f"{alias.asname.name.value}.{attr}"), []
    for node in ctx.nodes(cst.ImportFrom):
        if not _module_level(ctx, node) or node.relative or isinstance(node.names, cst.ImportStar):
            continue
        if dotted_name(node.module) != "torch.nn":
            continue
        for alias in node.names:
            if dotted_name(alias.name) == "functional":
                local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) \
                    else "functional"
                return attribute_chain(f"{local}.{attr}"), []
    if not ctx.imports.binds("F") and not any(n.value == "F" for n in ctx.nodes(cst.Name)):
        return attribute_chain(f"F.{attr}"), ["import torch.nn.functional as F"]
    torch, imports = module_alias(ctx, "torch")
    if torch is None:
        return None
    return attribute_chain(f"{torch}.nn.functional.{attr}"), imports


def bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """A copy of ``expr`` without its outer parentheses (for use as a call argument)."""
    clone = expr.deep_clone()
    if getattr(clone, "lpar", None):
        clone = clone.with_changes(lpar=[], rpar=[])
    return clone


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


def parenthesized(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` ready to be an operand of a unary minus or the receiver of ``.float()``."""
    if isinstance(expr, _ATOMS) or getattr(expr, "lpar", None):
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def negated(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``-expr`` (``-(a + b)``; ``x`` for ``-x``)."""
    inner = bare(expr)
    if isinstance(inner, cst.UnaryOperation) and isinstance(inner.operator, cst.Minus):
        return bare(inner.expression)
    return cst.UnaryOperation(cst.Minus(), parenthesized(inner))


def as_float(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr.float()``, keeping the expression's own parentheses."""
    return cst.Call(func=cst.Attribute(value=parenthesized(expr.deep_clone()), attr=cst.Name("float")))


def stable(ctx, expr: cst.BaseExpression, origin: cst.CSTNode, at: cst.CSTNode) -> bool:
    """Does ``expr``, written at ``origin``, mean the same value at ``at``? Names (and attribute
    chains and constant subscripts on them) whose binding is the same at both places."""
    pm = precision_model(ctx)
    node = expr
    while isinstance(node, (cst.Attribute, cst.Subscript)):
        if isinstance(node, cst.Subscript):
            if not all(isinstance(e.slice, cst.Index) and ctx.number(e.slice.value) is not None for e in node.slice):
                return False
        node = node.value
    if not isinstance(node, cst.Name):
        return False
    if node.value == "self":
        return isinstance(expr, cst.Attribute)
    return pm.binding_at(node.value, origin) == pm.binding_at(node.value, at)


def logits_at(ctx, trace: Trace, at: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The logits of the sigmoid / softmax behind ``trace``, as an expression to write at ``at``:
    the argument itself when the call is inside ``at``; when the probabilities were bound to a
    local name, only logits that still hold the same value at ``at``. None otherwise."""
    prob: Optional[ProbabilityCall] = trace.source.prob
    if prob is None or prob.logits is None or not trace.direct or prob.form == "inplace":
        return None  # (``x.sigmoid_()`` overwrote the logits with the probabilities)
    if any(a is at for a in ctx.ancestors(prob.call)):
        return prob.logits
    if stable(ctx, prob.logits, prob.call, at):
        return prob.logits
    return None
