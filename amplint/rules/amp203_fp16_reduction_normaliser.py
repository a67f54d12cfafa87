"""AMP203 fp16-reduction-normaliser."""
from __future__ import annotations

import re
from typing import Iterable, Iterator, Optional, Tuple

import libcst as cst

from ..context import products as P
from ..context.precision import precision_model
from ..edits.fp32 import fp32_block_fix
from ..findings import Confidence, Violation
from ..fp16 import FLOAT16, fmt
from ..prefilter import MATMUL, words
from .base import Rule, because

# Sums of these are counts or bounded weights, not normalisers that can overflow (and mostly not
# float tensors at all: ``mask.sum()`` of a bool mask is int64).
_COUNT_NAME = re.compile(r"mask|len|count|num|valid|label|target|index|idx|ones|weight", re.IGNORECASE)
_EPS_NAME = re.compile(r"eps|epsilon|tiny|delta|smooth", re.IGNORECASE)


class Fp16ReductionNormaliser(Rule):
    code = "AMP203"
    name = "fp16-reduction-normaliser"
    summary = "Float16 einsum / matmul / sum used as a denominator or normaliser"
    fix_safety = "unsafe"
    applies_under = "fp16 (mixed or pure half)"
    # a division (``/``, ``div``, ``reciprocal``) and the sum or product used as its denominator
    needs = (r"/|div|reciprocal", (words(P.SUMS | P.PRODUCTS), MATMUL))

    def check(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        fixes = {}
        for site, denominator in self._normaliser_sites(ctx):
            found = self._reduction(ctx, pm, denominator)
            if found is None:
                continue
            core, named, binding = found
            fact = pm.dtype_of(core)
            if not fact.is_half:
                continue
            op = P.op_of(ctx, pm, core)
            if op in P.SUMS and self._harmless_sum(ctx, pm, core):
                continue
            if op in P.PRODUCTS and P.bounded_product(ctx, pm, core):
                continue  # a product of unit vectors or softmax weights cannot overflow
            if op in P.PRODUCTS and self._mask_product(ctx, pm, core):
                continue  # einsum(mask, mask): a count of the valid pairs, at most the contraction's length
            if op in P.PRODUCTS and self._own_component(ctx, pm, site, denominator, core, named):
                continue  # a perspective division: homogeneous coordinates over their last one
            message = self._message(ctx, core, op, named, binding, fact)
            stmt = binding if binding is not None else ctx.statement_of(site)
            fix = None
            if isinstance(stmt, cst.SimpleStatementLine):
                # one Fix object per statement: a normaliser used twice is moved once
                if stmt not in fixes:
                    fixes[stmt] = fp32_block_fix(ctx, pm, stmt, core, "compute the normaliser in float32 "
                                                   "(autocast disabled, `.float()` operands)")
                fix = fixes[stmt]
            conf = Confidence.of(fact)
            node = named if named is not None else core
            yield Violation(node, message, conf, fix=fix,
                            help=("compute the normaliser in float32 (`with torch.autocast(device_type=..., "
                                  "enabled=False):` and `.float()` on its operands)"),
                            evidence=because(fact, ctx, node))

    @staticmethod
    def _mask_product(ctx, pm, core) -> bool:
        """A product of 0/1 masks (openfold's ``einsum("...abc,...adc->...bdc", mask, mask)``): it
        counts, and a count is exact in float16 up to 2048 and finite up to 65504."""
        operands = P.tensor_operands(ctx, pm, core)
        return len(operands) >= 2 and all("mask" in P.short_code(ctx, o).lower() for o in operands)

    def _own_component(self, ctx, pm, site, denominator, core, named) -> bool:
        """The denominator is one entry of the product itself, picked by a literal position, and
        the numerator is the same product (``uvw[:, :2] / uvw[:, 2:3]``, ``H / H[..., -1:, -1:]``,
        ``1 / flow[:, 2]`` then ``flow[:, 0] * z``): homogeneous coordinates (a projection, a
        homography) normalised by their last one. The contraction runs over the 3 or 4 coordinates
        of a point (kornia's ``K @ cam``, ``torch.stack([x, y, ones], -1) @ tilt.T``), not over a
        long axis, and the ratio does not depend on the product's scale."""
        if not _picks_component(ctx, self._outer_subscript(ctx, pm, denominator)):
            return False
        if not isinstance(site, cst.BinaryOperation):
            return isinstance(site, cst.AugAssign)  # ``H /= H[..., 2:, 2:]``
        numerator = site.left
        if ctx.number(numerator) is not None:
            return True  # ``z = 1 / flow[:, 2]``: the reciprocal of the last coordinate
        base = P.through_views(ctx, pm, numerator)
        target = named if named is not None else core
        return ctx.code(base) == ctx.code(target)

    def _outer_subscript(self, ctx, pm, denominator) -> Optional[cst.Subscript]:
        """The subscript the denominator reads, through ``+ eps`` and views (``w[:, :, [2]] + 1e-4``)."""
        expr = denominator
        for _ in range(8):
            if isinstance(expr, cst.Subscript):
                return expr
            if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)) \
                    and self._is_guard(ctx, expr.right):
                expr = expr.left
                continue
            if isinstance(expr, cst.Call):
                op, is_method = P.call_op(ctx, pm, expr)
                if is_method and (op in P.VIEWS or op in P.CASTS or op in P.LOWER_GUARDS):
                    expr = expr.func.value  # type: ignore[attr-defined]
                    continue
            return None
        return None

    # ---- where normalisers are used -------------------------------------------------------------
    @staticmethod
    def _normaliser_sites(ctx) -> Iterator[Tuple[cst.CSTNode, cst.BaseExpression]]:
        """(the use, the denominator): ``a / d``, ``a /= d``, ``torch.div(a, d)``, ``a.div(d)``,
        ``torch.reciprocal(d)``, ``d.reciprocal()``."""
        for b in ctx.nodes(cst.BinaryOperation):
            if isinstance(b.operator, cst.Divide):
                yield b, b.right
        for a in ctx.nodes(cst.AugAssign):
            if isinstance(a.operator, cst.DivideAssign):
                yield a, a.value
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call) or ""
            args = P.positional(call)
            if name in ("torch.div", "torch.true_divide", "torch.divide"):
                if len(args) >= 2:
                    yield call, args[1].value
            elif name == "torch.reciprocal":
                if args:
                    yield call, args[0].value
            elif isinstance(call.func, cst.Attribute) and not name.startswith("torch."):
                method = call.func.attr.value
                if method in ("div", "div_", "true_divide", "divide") and args:
                    yield call, args[0].value
                elif method in ("reciprocal", "reciprocal_") and not args:
                    yield call, call.func.value

    # ---- what the denominator is ----------------------------------------------------------------
    def _reduction(self, ctx, pm, denominator) -> Optional[Tuple[cst.CSTNode, Optional[cst.Name], Optional[cst.SimpleStatementLine]]]:
        """The product or sum a denominator is, seen through ``+ eps``, clamps, views, casts and
        ``sqrt``, and through one local name (``denom = einsum(...); x / denom``): (the
        reduction, the name it was bound to, the binding statement)."""
        core = self._strip(ctx, pm, denominator)
        named = binding = None
        if isinstance(core, cst.Name):
            # the name's last binding, or one on another branch that may reach the division
            for value, binding in P.reaching_bindings(ctx, pm, core):
                inner = self._strip(ctx, pm, value)
                if P.op_of(ctx, pm, inner) in P.PRODUCTS or P.op_of(ctx, pm, inner) in P.SUMS:
                    return inner, core, binding
            return None
        op = P.op_of(ctx, pm, core)
        if op in P.PRODUCTS or op in P.SUMS:
            return core, named, binding
        return None

    def _strip(self, ctx, pm, expr: cst.BaseExpression) -> cst.BaseExpression:
        for _ in range(16):
            if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
                if self._is_guard(ctx, expr.right):
                    expr = expr.left
                    continue
                if isinstance(expr.operator, cst.Add) and self._is_guard(ctx, expr.left):
                    expr = expr.right
                    continue
                break
            if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
                # a constant factor does not change what the product did before it
                if ctx.number(expr.right) is not None:
                    expr = expr.left
                    continue
                if isinstance(expr.operator, cst.Multiply) and ctx.number(expr.left) is not None:
                    expr = expr.right
                    continue
                break
            if isinstance(expr, cst.Subscript):
                expr = expr.value
                continue
            if isinstance(expr, cst.Call):
                op, is_method = P.call_op(ctx, pm, expr)
                if is_method and (op in P.VIEWS or op in P.CASTS or op in P.LOWER_GUARDS or op == "sqrt"):
                    expr = expr.func.value  # type: ignore[attr-defined]
                    continue
                args = P.positional(expr)
                if not is_method and op in ("clamp", "clamp_min", "clip", "sqrt") and args:
                    expr = args[0].value
                    continue
            break
        return expr

    @staticmethod
    def _is_guard(ctx, expr: cst.BaseExpression) -> bool:
        """A small constant added against division by zero: a number, or a name like ``eps``."""
        if ctx.number(expr) is not None:
            return True
        last = expr
        if isinstance(expr, cst.Attribute):
            last = expr.attr
        return isinstance(last, cst.Name) and bool(_EPS_NAME.search(last.value))

    def _harmless_sum(self, ctx, pm, core: cst.CSTNode) -> bool:
        """A sum of a mask or count (an integer tensor, or a float one bounded by its length), or
        of values in [0, 1] (softmax / sigmoid outputs)."""
        for operand in P.tensor_operands(ctx, pm, core):
            base = P.through_views(ctx, pm, operand)
            text = P.short_code(ctx, base, 200)
            if _COUNT_NAME.search(text) or P.bounded(ctx, pm, base):
                return True
            if not isinstance(base, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.BinaryOperation)):
                return True  # a comparison (``(labels != -100).sum()``): a count
        return False

    # ---- the message ------------------------------------------------------------------------------
    def _message(self, ctx, core, op, named, binding, fact) -> str:
        what = f"`{P.short_code(ctx, core)}`"
        if named is not None:
            what = f"`{named.value}` (= {what}, line {ctx.line_of(binding)})"
        if op in P.SUMS:
            kind = "a float16 sum"
            risk = f"a sum of many terms can pass float16's {fmt(FLOAT16.max)} and become inf (then 0·inf = NaN)"
        else:
            kind = "a float16 product"
            risk = (f"each entry sums many products and can pass float16's {fmt(FLOAT16.max)} (inf, then NaN) "
                    f"or cancel to 0 (1/0 = inf)")
        return f"{what} is {kind} used as a denominator: {risk}"


def _picks_component(ctx, sub: Optional[cst.Subscript]) -> bool:
    """Does ``sub`` pick entries at literal positions (``[:, 2]``, ``[..., 2:3]``, ``[..., -1:, -1:]``,
    ``[:, :, [2]]``) rather than only viewing (``[..., None]``, ``[:, :n]``)?"""
    if sub is None:
        return False

    def literal(e) -> bool:
        if isinstance(e, cst.UnaryOperation) and isinstance(e.operator, cst.Minus):
            e = e.expression
        return isinstance(e, cst.Integer)

    for el in sub.slice:
        index = el.slice
        if isinstance(index, cst.Index):
            v = index.value
            if literal(v) or (isinstance(v, cst.List) and v.elements and all(literal(x.value) for x in v.elements)):
                return True
        elif isinstance(index, cst.Slice) and (literal(index.lower) or literal(index.upper)) \
                and all(b is None or literal(b) for b in (index.lower, index.upper)):
            return True
    return False
