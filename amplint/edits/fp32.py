"""The float32 rewrite shared by the fixes of AMP203 and AMP204: run a float16 product or reduction
in float32 (``torch.autocast(..., enabled=False)`` around it, ``.float()`` on its operands)."""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

import libcst as cst

from ..context.imports import dotted_name
from ..context.products import SUMS, VIEWS, call_op, op_of, tensor_operands
from ..findings import Applicability, Fix
from ..torch_api import autocast as autocast_ops


# ---- the float32 rewrite -------------------------------------------------------------------------
class _Replace(cst.CSTTransformer):
    def __init__(self, table: Dict[cst.CSTNode, cst.CSTNode]) -> None:
        super().__init__()
        self.table = table

    def on_leave(self, original_node, updated_node):  # type: ignore[override]
        return self.table.get(original_node, updated_node)


_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def as_float(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr.float()``, with parentheses around ``expr`` unless it is an atom."""
    if not isinstance(expr, _ATOMS) and not expr.lpar:
        expr = expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    return cst.Call(func=cst.Attribute(value=expr, attr=cst.Name("float")))


_HALF_DTYPES = {"torch.float16", "torch.half"}


def _half_cast(ctx, pm, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The value cast in ``x.type_as(q)``, ``x.half()``, ``x.to(q.dtype)`` or
    ``x.to(torch.float16)`` (casts to the float16 of the surrounding code), else None."""
    if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute)):
        return None
    op, is_method = call_op(ctx, pm, expr)
    if not is_method:
        return None
    if op == "half" and not expr.args:
        return expr.func.value
    if op == "type_as" and len(expr.args) == 1:
        return expr.func.value
    if op == "to" and len(expr.args) == 1:
        arg = expr.args[0]
        if arg.keyword is not None and arg.keyword.value != "dtype":
            return None
        value = arg.value
        if (isinstance(value, cst.Attribute) and value.attr.value == "dtype") or ctx.qualname(value) in _HALF_DTYPES:
            return expr.func.value
    return None


def float_replacements(ctx, pm, core: cst.CSTNode) -> List[Tuple[cst.BaseExpression, cst.BaseExpression]]:
    """How ``core`` runs in float32: ``.float()`` on each tensor operand, below the views and sums
    applied to it (``K.sum(dim=1)`` -> ``K.float().sum(dim=1)``: the sum must not run in float16
    first); a cast back to float16 (``k.type_as(q)``) becomes ``k.float()``; in ``k + eps`` only
    the tensor gets the cast."""
    out: List[Tuple[cst.BaseExpression, cst.BaseExpression]] = []

    def visit(operand: cst.BaseExpression, depth: int) -> None:
        target = operand
        for _ in range(12):
            if isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute):
                op, is_method = call_op(ctx, pm, target)
                if is_method and (op in VIEWS or op in SUMS or op == "mean"):
                    target = target.func.value
                    continue
            break
        cast = _half_cast(ctx, pm, target)
        if cast is not None:
            out.append((target, as_float(cast)))
            return
        if isinstance(target, cst.BinaryOperation) and depth < 4 and isinstance(target.operator, (cst.Add, cst.Subtract)):
            tensors = [side for side in (target.left, target.right) if ctx.number(side) is None]
            if len(tensors) == 1:
                visit(tensors[0], depth + 1)
                return
        fact = pm.dtype_of(target)
        if fact.dtype == "float32" and fact.confidence == "certain":
            return  # already cast
        out.append((target, as_float(target)))

    for operand in tensor_operands(ctx, pm, core):
        visit(operand, 0)
    return out


def _base_reference(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The tensor a chain of method calls and subscripts starts from (``k`` in
    ``k.float().sum(1)``), when it is a name or a dotted attribute."""
    for _ in range(16):
        if dotted_name(expr) is not None:
            return expr
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.Subscript):
            expr = expr.value
        else:
            return None
    return None


def _lower_ops_in(ctx, pm, stmt: cst.CSTNode) -> List[cst.CSTNode]:
    """Nodes of ``stmt`` that run in float16 under autocast (products, layers, module calls)."""
    found: List[cst.CSTNode] = []
    for kind in (cst.Call, cst.BinaryOperation):
        for node in ctx.nodes(kind):
            if not ctx.is_ancestor(stmt, node):
                continue
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and isinstance(node.func.value, cst.Name) and node.func.value.value == "self":
                found.append(node)  # a submodule: it would see float16 inputs and float32 weights
                continue
            op = op_of(ctx, pm, node)
            if op is not None and autocast_ops.policy(op) == "lower":
                found.append(node)
    return found


def fp32_block_fix(ctx, pm, stmt: cst.SimpleStatementLine, core: cst.CSTNode, description: str) -> Optional[Fix]:
    """Move ``stmt`` into ``with torch.autocast(device_type=<t>.device.type, enabled=False):`` with
    ``.float()`` on ``core``'s tensor operands. None where that is not certainly correct: under
    pure half (no autocast to leave), when the statement holds other float16 ops that would then
    mix float16 and float32 inputs, or when the line holds several statements."""
    from ..edits import (
        module_alias,  # the fix helpers; imported here to keep `check` light
    )

    if len(stmt.body) != 1 or not isinstance(ctx.parent(stmt), (cst.IndentedBlock, cst.Module)):
        return None
    state = pm.autocast_at(core)
    if not state.active:
        return None
    if any(node is not core for node in _lower_ops_in(ctx, pm, stmt)):
        return None
    replacements = float_replacements(ctx, pm, core)
    device = next((d for d in map(_base_reference, tensor_operands(ctx, pm, core)) if d is not None), None)
    if device is None:
        return None
    torch_name, imports = module_alias(ctx, "torch")
    if torch_name is None:
        return None
    new_stmt = stmt.visit(_Replace(dict(replacements)))
    assert isinstance(new_stmt, cst.SimpleStatementLine)
    autocast = cst.Call(
        func=cst.Attribute(value=cst.Name(torch_name), attr=cst.Name("autocast")),
        args=[
            _kw("device_type", cst.Attribute(value=cst.Attribute(value=device.deep_clone(), attr=cst.Name("device")),
                                             attr=cst.Name("type")), comma=True),
            _kw("enabled", cst.Name("False")),
        ],
    )
    block = cst.With(
        items=[cst.WithItem(item=autocast)],
        body=cst.IndentedBlock(body=[new_stmt.with_changes(leading_lines=[])]),
        leading_lines=stmt.leading_lines,
    )
    return Fix(description, Applicability.UNSAFE, replacements=[(stmt, block)], imports=list(imports))


def _kw(name: str, value: cst.BaseExpression, comma: bool = False) -> cst.Arg:
    return cst.Arg(
        value=value, keyword=cst.Name(name),
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
        comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")) if comma else cst.MaybeSentinel.DEFAULT,
    )

