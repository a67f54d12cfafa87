"""Float16 matrix products scaled down only after they were computed: found once, judged by two rules.

AMP204 (scale-after-fp16-product) reports the shapes that overflow in practice: a contraction over
a long axis (tokens, sequences, samples) normalised afterwards (``einsum("bsi,bsj->bij", a, b) /
n_seq``, a covariance ``x.T @ x / n``) and other products scaled down after the fact. AMP205
(attention-logits-scaled-after-product), off by default, reports the textbook attention shape
``(q @ k.transpose(-2, -1)) * head_dim ** -0.5``: it overflows only on some large models.
""" 
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Iterator, Optional, Tuple

import libcst as cst

from ..findings import Applicability, Fix
from . import products as P
from .precision import F32, precision_model

# Names that, when nothing tells their value, are down-scales by convention: a multiplier called
# ``scale`` in attention code is head_dim ** -0.5; a divisor called ``norm_factor`` is sqrt(d).
_MUL_SCALE_NAME = re.compile(r"^(scale|scaling|scale_factor|softmax_scale|sm_scale|attn_scale|attention_scale|"
                             r"qk_scale|inv_scale|inv_sqrt_d|inv_sqrt_dim|rsqrt_d)$")
_DIV_SCALE_NAME = re.compile(r"(^|_)sqrt(_|$)|^norm_factor$|^sqrt_d|^dk_sqrt$|^scale_sqrt$")
_SQRT = {"math.sqrt", "numpy.sqrt", "torch.sqrt", "np.sqrt"}
_RSQRT = {"torch.rsqrt"}
_SCALAR_WRAPPERS = {"torch.tensor", "torch.as_tensor", "float", "torch.scalar_tensor"}

# The head dimension the message's example uses, and the per-element size at which q·k reaches
# float16's largest value with it (sqrt(65504 / 64) ≈ 32).
_EXAMPLE_D = 64
# Divisors that count something when nothing else tells their value: ``n``, ``num_seq``, ``n_res``.
_COUNT_NAME = re.compile(r"^(n|N|num|num_\w+|n_\w+|\w+_count|count|\w+_len|seq_len|length|total|denom|norm)$")


# A constant factor above 1/4 is no normaliser of a long contraction: ``(a @ b) / 2`` (RecBole's KTUP:
# the mean of two embedding sums, unseen set 16) or ``* 0.5`` averages two or three terms and moves
# the product's overflow by a bit or so; a count of the terms of a sum over tokens, sequences or
# samples divides by far more (and 1/8 is the attention scale of a 64-wide head).
_LEAST_NORMALISING = 1 / 4


@dataclass(frozen=True)
class Candidate:
    """A float16 product scaled down after it was computed."""
    node: cst.CSTNode  # the scaling (``(a @ b) * s``, ``s /= c``)
    product: cst.CSTNode
    named: Optional[cst.Name]  # the name the product was bound to, for the two-statement form
    scale_side: cst.BaseExpression
    scale: Scale
    fact: object  # the product's DTypeFact
    fix: Optional[Fix]
    textbook_attention: bool  # q·kᵀ over the head dimension scaled by 1/sqrt(d) (AMP205)
    upcast: Optional[cst.Call] = None  # ``torch.mm(a, b).float()``: a cast up written after the product


@dataclass(frozen=True)
class Scale:
    value: Optional[float]  # the factor the product is multiplied by, when known
    how: str  # how we know it is a down-scale, for the message
    # "sqrt": 1 / sqrt(d), the attention scale (or a name for it); "count": a divisor that counts
    # the terms of the sum (a length, a size, the sum of a mask); "constant": a number below 1
    kind: str = "sqrt"


_NOT = Scale(None, "")
_FIX = "apply the scale to the first operand, before the float16 product"  # resolved to something that is not a down-scale


def _is_bound_here(ctx, name: cst.Name) -> bool:
    """Is this occurrence of a name one that binds it (an assignment target, a loop variable)?"""
    parent = ctx.parent(name)
    while isinstance(parent, (cst.Element, cst.Tuple, cst.List, cst.StarredElement)):
        parent = ctx.parent(parent)
    return isinstance(parent, (cst.AssignTarget, cst.AugAssign, cst.AnnAssign, cst.For, cst.NamedExpr,
                               cst.AsName, cst.CompFor))


class ScaledProducts:
    """Finds the scaled products (one finder per file, shared by AMP204 and AMP205)."""

    def candidates(self, ctx) -> Iterator[Candidate]:
        """Every float16 matrix product scaled down after it was computed, with its fix."""
        pm = precision_model(ctx)
        for node, product_side, scale_side, scale_first in self._scaled_products(ctx):
            found = self._product(ctx, pm, product_side)
            if found is None:
                continue
            product, named, upcast = found
            fact = pm.dtype_of(product)
            if not fact.is_half:
                continue
            divide = isinstance(node.operator, (cst.Divide, cst.DivideAssign))
            scale = self._downscale(ctx, pm, scale_side, divide, 0)
            if scale is None and divide:
                scale = self._total_weight(ctx, pm, scale_side, product)
            if scale is None or scale is _NOT:
                continue
            if scale.kind == "count" and _size_of_the_product(ctx, pm, scale_side, product):
                continue  # a count of the product's own (free) axes, not of the terms it summed
            if P.bounded_product(ctx, pm, product):
                continue  # cosine similarities, softmax-weighted averages
            if P.standardised_contraction(ctx, pm, product):
                continue  # a cross-correlation of standardised columns: every entry at most the batch size
            if P.weight_product(ctx, pm, product):
                continue  # x @ self.weight: a layer's projection, not q·kᵀ logits
            fix = None
            if ctx.enclosing_function(product) is not ctx.enclosing_function(node):
                pass  # the product is in a helper that returns it: moving the scale there is no local edit
            elif named is None and isinstance(node, cst.BinaryOperation):
                fix = self._fix(ctx, pm, node, product, scale_side, scale_first)
            elif named is not None:
                fix = self._fix_named(ctx, pm, node, named, product, scale_side, scale_first)
            # A product cast up to float32 right after it was computed (bolts' AMDIM NCE loss:
            # ``torch.mm(r_src, r_trg).float() / emb_dim ** 0.5``) says its author wanted float32
            # range for it, which the float16 product never had: not the textbook attention shape
            # whatever its scale, AMP204's.
            textbook = upcast is None and textbook_attention(ctx, pm, product, scale, scale_side)
            if scale.kind == "constant" and not textbook and upcast is None and scale.value is not None \
                    and abs(scale.value) > _LEAST_NORMALISING:
                continue  # ``(a @ b) / 2``: a mean of two terms, no normaliser of a long contraction
            yield Candidate(node, product, named, scale_side, scale, fact, fix, textbook, upcast)
        yield from self._self_normalised(ctx, pm)

    def _self_normalised(self, ctx, pm) -> Iterator[Candidate]:
        """``out[..., :-1] / (out[..., -1:] + eps)`` with ``out`` a float16 product: linear attention,
        whose values carry a row of ones, so the product's last row is the sum over the tokens that
        normalises the others (efficientvit's LiteMLA: ``vk = v @ kᵀ``, ``out = vk @ q``, both
        contracting over H*W tokens; held-out bug B31). The normaliser is known only after the sums
        were taken in float16, and a ``.float()`` of ``out`` in between comes too late."""
        for node in ctx.nodes(cst.BinaryOperation):
            if not isinstance(node.operator, cst.Divide):
                continue
            divisor = node.right
            if isinstance(divisor, cst.BinaryOperation) and isinstance(divisor.operator, cst.Add) \
                    and _is_number_like(ctx, divisor.right):
                divisor = divisor.left  # ``out[..., -1:] + self.eps``
            if not (isinstance(node.left, cst.Subscript) and isinstance(divisor, cst.Subscript)):
                continue
            if P.perspective_divide(ctx, node.left, divisor):
                continue  # ``uv = uvz[:2] / uvz[2:3]``: a perspective divide (AMP204's own look), not a sum's row
            base, norm = node.left.value, divisor.value
            if not (isinstance(base, cst.Name) and isinstance(norm, cst.Name) and base.value == norm.value):
                continue
            for value, _ in P.reaching_bindings(ctx, pm, base)[:1]:
                upcast = None
                expr = value
                if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
                        and expr.func.attr.value in ("float", "double", "to") and isinstance(expr.func.value, cst.Name):
                    upcast = expr  # ``out = out.float()``: the product is the binding before it
                    earlier = [v for v, _ in P.reaching_bindings(ctx, pm, expr.func.value)]
                    expr = earlier[0] if earlier else None
                if expr is None or P.op_of(ctx, pm, expr) not in P.PRODUCTS:
                    continue
                fact = pm.dtype_of(expr)
                if not fact.is_half:
                    continue
                scale = Scale(None, f"`{P.short_code(ctx, node.right)}` (a slice of the same product: the sum "
                                    "over what it contracted)", "count")
                yield Candidate(node, expr, base, node.right, scale, fact, None, False, upcast)

    # ---- where products are scaled ------------------------------------------------------------
    @staticmethod
    def _scaled_products(ctx) -> Iterator[Tuple[cst.CSTNode, cst.BaseExpression, cst.BaseExpression, bool]]:
        """(the scaling node, the product side, the scale side, whether the scale is written first)."""
        for b in ctx.nodes(cst.BinaryOperation):
            if isinstance(b.operator, cst.Multiply):
                yield b, b.left, b.right, False
                yield b, b.right, b.left, True
            elif isinstance(b.operator, cst.Divide):
                yield b, b.left, b.right, False
        for a in ctx.nodes(cst.AugAssign):
            if isinstance(a.operator, (cst.MultiplyAssign, cst.DivideAssign)) and isinstance(a.target, cst.Name):
                yield a, a.target, a.value, False

    @staticmethod
    def _product(ctx, pm, expr: cst.BaseExpression) -> Optional[Tuple[cst.CSTNode, Optional[cst.Name], Optional[cst.Call]]]:
        """The matrix product ``expr`` is, directly or through a local name bound to it, and the
        cast up to float32 written right after it (``torch.mm(a, b).float()``), if any."""
        named = None
        if isinstance(expr, cst.Name):
            bound = P.single_binding(ctx, pm, expr)
            if bound is None:
                return None
            named, expr = expr, bound[0]
        upcast = None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and pm.dtype_of(expr).dtype == F32 \
                and expr.func.attr.value in ("float", "double", "to", "type"):
            upcast, expr = expr, expr.func.value
        if P.op_of(ctx, pm, expr) in P.PRODUCTS:
            return expr, named, upcast
        inner = ScaledProducts._returned_product(ctx, pm, expr) if named is not None else None
        if inner is not None:
            return inner, named, upcast
        return None

    @staticmethod
    def _returned_product(ctx, pm, call: cst.BaseExpression) -> Optional[cst.CSTNode]:
        """The product a helper of this file returns, through views and a final ``nn.Linear``
        (openfold's ``outer = self._opm(a, b)`` with ``_opm`` returning ``self.linear_out(einsum(...)
        .reshape(...))``, then ``outer / norm`` in the caller): the float16 sum overflowed in the
        helper, before the caller's normaliser. One return, one level deep."""
        if not isinstance(call, cst.Call):
            return None
        fn = pm._callee(call)
        if fn is None:
            return None
        returns = [r for r in ctx.nodes(cst.Return) if r.value is not None and ctx.enclosing_function(r) is fn]
        if len(returns) != 1:
            return None
        expr = returns[0].value
        if isinstance(expr, cst.Call) and P.op_of(ctx, pm, expr) == "linear" and P.positional(expr):
            expr = P.positional(expr)[0].value  # self.linear_out(x): a linear map of the product
        for _ in range(3):
            expr = P.through_views(ctx, pm, expr)
            if isinstance(expr, cst.Name):
                bound = P.single_binding(ctx, pm, expr)
                if bound is None:
                    return None
                expr = bound[0]
                continue
            break
        return expr if P.op_of(ctx, pm, expr) in P.PRODUCTS else None

    # ---- is the scale a down-scale? ---------------------------------------------------------------
    def _downscale(self, ctx, pm, expr: cst.BaseExpression, divide: bool, depth: int) -> Optional[Scale]:
        """A Scale when ``expr`` evidently shrinks the product (a factor below 1, a divisor above 1),
        _NOT when it evidently does not (or is a tensor, e.g. a learnable temperature), None when
        nothing is known."""
        if depth > 12:
            return None
        v = ctx.number(expr)
        if v is not None:
            if v == 0 or math.isinf(v) or math.isnan(v):
                return _NOT
            factor = 1 / v if divide else v
            kind = "sqrt" if self._written_as_sqrt(ctx, pm, expr, 0) else "constant"
            return Scale(factor, "", kind) if abs(factor) < 1 else _NOT
        if isinstance(expr, cst.BinaryOperation):
            op = expr.operator
            if divide and (isinstance(op, cst.Add) or isinstance(op, cst.Subtract) and ctx.number(expr.right) is not None):
                # ``count + eps`` / ``eps + count`` / ``batch_size - 1``: the guarded (or unbiased) count
                sides = [s for s in (expr.left, expr.right) if ctx.number(s) is None]
                if len(sides) == 1:
                    s = self._downscale(ctx, pm, sides[0], divide, depth + 1)
                    return s if s is not None and s.kind == "count" else None
                return None
            if isinstance(op, cst.Power):
                e = ctx.number(expr.right)
                if e is not None and e != 0:
                    # d ** -0.5 multiplies down; d ** 0.5 divides down (d >= 1 for any dimension)
                    kind = "sqrt" if abs(e) == 0.5 else "count"
                    return Scale(None, f"`{P.short_code(ctx, expr)}`", kind) if (e < 0) != divide else _NOT
                return None
            if isinstance(op, cst.Divide) and not divide:
                n = ctx.number(expr.left)
                if n is not None and 0 < abs(n) <= 1:
                    # ``* (1 / math.sqrt(d))`` is ``/ math.sqrt(d)``: a down-scale when the divisor
                    # is one by what it is (a sqrt, a count), not for any ``1 / s`` (peft's
                    # ``weight * (1 / boft_s)`` undoes a per-channel scale near 1)
                    inner = self._downscale(ctx, pm, expr.right, True, depth + 1)
                    if inner is None or inner is _NOT:
                        return inner
                    kind = "sqrt" if re.search(r"sqrt|\*\*\s*0?\.5", ctx.code(expr.right)) else inner.kind
                    return Scale(None, f"`{P.short_code(ctx, expr)}`", kind)  # 1 / math.sqrt(d)
                return None
            if isinstance(op, cst.Multiply):
                # (d * k) ** 0.5 style products of two down-scales stay a down-scale
                a = self._downscale(ctx, pm, expr.left, divide, depth + 1)
                b = self._downscale(ctx, pm, expr.right, divide, depth + 1)
                if a is not None and a is not _NOT and b is not None and b is not _NOT:
                    return Scale(None, f"`{P.short_code(ctx, expr)}`")
                return None
            return None
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, cst.Or):
            # timm's ``self.scale = qk_scale or head_dim ** -0.5``
            for side in (expr.left, expr.right):
                s = self._downscale(ctx, pm, side, divide, depth + 1)
                if s is not None and s is not _NOT:
                    return s
            return None
        if isinstance(expr, cst.IfExp):
            for side in (expr.body, expr.orelse):
                s = self._downscale(ctx, pm, side, divide, depth + 1)
                if s is not None and s is not _NOT:
                    return s
            return None
        if isinstance(expr, cst.Call):
            name = ctx.call_name(expr) or ""
            args = P.positional(expr)
            method = expr.func.attr.value if isinstance(expr.func, cst.Attribute) else None
            if divide and (name in _SQRT or name == "sqrt" or (method == "sqrt" and not args)):
                return Scale(None, f"`{P.short_code(ctx, expr)}`")
            if not divide and (name in _RSQRT or (method == "rsqrt" and not args)):
                return Scale(None, f"`{P.short_code(ctx, expr)}`")
            if (name in _SCALAR_WRAPPERS or name == "torch.full") and args:
                value = args[-1].value if name == "torch.full" and len(args) >= 2 else args[0].value
                return self._downscale(ctx, pm, value, divide, depth + 1)
            if method == "exp" or name.endswith("Parameter"):
                return _NOT  # a learnable logit scale / temperature: not a constant down-scale
            if divide and (name == "len" or method in ("size", "numel") or self._mask_count(ctx, pm, expr)):
                return Scale(None, f"`{P.short_code(ctx, expr)}`", "count")
            return None
        if divide and isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) \
                and expr.value.attr.value == "shape":
            return Scale(None, f"`{P.short_code(ctx, expr)}`", "count")  # x.shape[1]
        # A name goes by what it is bound to; only a name bound to nothing seen here (a parameter,
        # an attribute set elsewhere) goes by its name: ``scale = torch.as_tensor(logit_scale)``
        # is not a down-scale because it is called ``scale``.
        if isinstance(expr, cst.Name):
            value = pm.value_of(expr)
            if value is not None:
                return self._downscale(ctx, pm, value, divide, depth + 1)
            return self._by_name(expr.value, divide)
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                value = pm.init_attribute(expr, expr.attr.value)
                if value is not None:
                    s = self._downscale(ctx, pm, value, divide, depth + 1)
                    if s is None and isinstance(value, cst.Call):
                        return _NOT  # an nn.Parameter, a tensor buffer: learnable or per-element
                    return s
            return self._by_name(expr.attr.value, divide)
        return None

    @staticmethod
    def _by_name(name: str, divide: bool) -> Optional[Scale]:
        pattern = _DIV_SCALE_NAME if divide else _MUL_SCALE_NAME
        if pattern.search(name):
            return Scale(None, f"`{name}` (by its name)")
        if divide and _COUNT_NAME.match(name):
            return Scale(None, f"`{name}` (a count, by its name)", "count")
        return None

    def _written_as_sqrt(self, ctx, pm, expr: cst.BaseExpression, depth: int) -> bool:
        """A constant written as ``d ** -0.5`` / ``1 / math.sqrt(d)`` (directly, or as the value of a
        name or ``self`` attribute): the attention scale, whatever number it comes to."""
        if depth > 4:
            return False
        if isinstance(expr, cst.Name):
            value = pm.value_of(expr)
            return value is not None and self._written_as_sqrt(ctx, pm, value, depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            value = pm.init_attribute(expr, expr.attr.value)
            return value is not None and self._written_as_sqrt(ctx, pm, value, depth + 1)
        return bool(re.search(r"sqrt|\*\*\s*\(?-?0?\.5\b", ctx.code(expr)))

    def _total_weight(self, ctx, pm, expr: cst.BaseExpression, product: cst.CSTNode) -> Optional[Scale]:
        """A weighted mean's normaliser: the sum of one operand of the product over the axis the
        product contracts, ``bmm(w, v) / w.sum(-1).clamp(min=1e-6)[:, :, None]`` (SparseInst's
        instance features: sigmoid masks over H·W pixels times the features, held-out bug M13-2),
        or a mask's sum, seen through a guard (``+ eps``, ``.clamp(min=...)``), ``[:, :, None]`` /
        ``.unsqueeze(-1)`` and local names. A count of the terms, known only after the float16 sum."""
        for _ in range(8):
            if isinstance(expr, cst.Name):
                value = pm.value_of(expr)
                if value is None:
                    return None
                expr = value
            elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) \
                    and _is_number_like(ctx, expr.right):
                expr = expr.left  # ``w.sum(-1) + eps``
            elif isinstance(expr, cst.Subscript) or isinstance(expr, cst.Call) and P.op_of(ctx, pm, expr) in P.VIEWS:
                expr = P.through_views(ctx, pm, expr)  # ``[:, :, None]``, ``.unsqueeze(-1)``
            elif isinstance(expr, cst.Call) and P.op_of(ctx, pm, expr) in P.LOWER_GUARDS \
                    and isinstance(expr.func, cst.Attribute):
                expr = expr.func.value  # ``w.sum(-1).clamp(min=1e-6)``
            else:
                break
        if not isinstance(expr, cst.Call):
            return None
        if self._mask_count(ctx, pm, expr) or _sums_operand_over_contraction(ctx, pm, expr, product):
            return Scale(None, f"`{P.short_code(ctx, expr)}`", "count")
        return None

    @staticmethod
    def _mask_count(ctx, pm, call: cst.Call) -> bool:
        """``mask.sum(...)``, ``torch.einsum("...", mask, mask)``: how many terms a masked sum has."""
        op = P.op_of(ctx, pm, call)
        if op not in ("sum", "einsum"):
            return False
        operands = P.tensor_operands(ctx, pm, call)
        return bool(operands) and all("mask" in P.short_code(ctx, o).lower() for o in operands)

    # ---- fix: scale the first operand instead -------------------------------------------------
    def _fix(self, ctx, pm, node: cst.BinaryOperation, product: cst.CSTNode, scale: cst.BaseExpression,
             scale_first: bool) -> Optional[Fix]:
        """``(a @ b) * s`` -> ``(a * s) @ b``; ``torch.einsum(eq, a, b) / s`` ->
        ``torch.einsum(eq, a / s, b)``. Only for scales that are numbers or scalar expressions (a
        tensor scale could broadcast differently against an operand than against the product)."""
        new_product = self._scaled_product(ctx, pm, node.operator, product, scale, scale_first)
        if new_product is None:
            return None
        return Fix(_FIX, Applicability.SAFE, replacements=[(node, new_product.with_changes(lpar=node.lpar, rpar=node.rpar))])

    def _fix_named(self, ctx, pm, node, named: cst.Name, product: cst.CSTNode, scale: cst.BaseExpression,
                   scale_first: bool) -> Optional[Fix]:
        """``s = q @ k.T`` ... ``s = s / math.sqrt(d)`` -> ``s = (q / math.sqrt(d)) @ k.T`` with the
        second statement removed: only when it rebinds the same name, both statements are in the
        same block, and nothing between them reads the name or rebinds what the scale reads."""
        if isinstance(node, cst.AugAssign):
            small, op = node, (cst.Multiply() if isinstance(node.operator, cst.MultiplyAssign) else cst.Divide())
        else:
            small, op = ctx.parent(node), node.operator
            if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and small.value is node
                    and isinstance(small.targets[0].target, cst.Name) and small.targets[0].target.value == named.value):
                return None
        line = ctx.parent(small)
        bound = P.single_binding(ctx, pm, named)
        if bound is None or not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            return None
        first = bound[1]
        block = ctx.parent(line)
        if ctx.parent(first) is not block or any(l.comment is not None for l in line.leading_lines):
            return None
        start, end = ctx.order(first), ctx.order(line)
        reads = {n.value for n in ctx.nodes(cst.Name) if ctx.is_ancestor(scale, n)} | ({scale.value} if isinstance(scale, cst.Name) else set())
        for n in ctx.nodes(cst.Name):
            o = ctx.order(n)
            if not (start < o < end) or ctx.is_ancestor(first, n):
                continue
            if n.value == named.value or (n.value in reads and _is_bound_here(ctx, n)):
                return None  # the product is read, or the scale's inputs are rebound, in between
        new_product = self._scaled_product(ctx, pm, op, product, scale, scale_first)
        if new_product is None:
            return None
        new_product = new_product.with_changes(lpar=product.lpar, rpar=product.rpar)
        return Fix(_FIX, Applicability.SAFE, replacements=[(product, new_product), (line, cst.RemoveFromParent())])

    def _scaled_product(self, ctx, pm, operator, product: cst.CSTNode, scale: cst.BaseExpression,
                        scale_first: bool) -> Optional[cst.BaseExpression]:
        if not self._scalar(ctx, pm, scale, 0):
            return None

        def scaled(operand: cst.BaseExpression, parens: bool) -> cst.BaseExpression:
            left, right = (scale, operand) if scale_first else (operand, scale)
            new = cst.BinaryOperation(left=left, operator=operator, right=right)
            return new.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()]) if parens else new

        if isinstance(product, cst.BinaryOperation):
            new_product: cst.BaseExpression = product.with_changes(left=scaled(self._operand(product.left), True))
        elif isinstance(product, cst.Call):
            op, is_method = P.call_op(ctx, pm, product)
            if any(a.star for a in product.args):
                return None
            if is_method:
                receiver = product.func.value  # type: ignore[attr-defined]
                new_product = product.with_changes(func=product.func.with_changes(value=scaled(self._operand(receiver), True)))
            else:
                args = list(product.args)
                positions = [i for i, a in enumerate(args) if a.keyword is None]
                index = positions[1] if op == "einsum" and len(positions) > 1 else (positions[0] if positions else None)
                if index is None:
                    return None
                if op == "einsum" and not isinstance(args[positions[0]].value, (cst.SimpleString, cst.ConcatenatedString)):
                    return None
                args[index] = args[index].with_changes(value=scaled(self._operand(args[index].value), False))
                new_product = product.with_changes(args=args)
        else:
            return None
        return new_product

    @staticmethod
    def _operand(expr: cst.BaseExpression) -> cst.BaseExpression:
        """An operand that can stand as the left side of ``* s`` without changing its meaning."""
        if expr.lpar or isinstance(expr, (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float)):
            return expr
        if isinstance(expr, cst.BinaryOperation) and isinstance(
                expr.operator, (cst.Multiply, cst.Divide, cst.MatrixMultiply, cst.FloorDivide, cst.Modulo, cst.Power)):
            return expr
        return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def _scalar(self, ctx, pm, expr: cst.BaseExpression, depth: int) -> bool:
        """Python numbers and expressions of them (``head_dim ** -0.5``, ``math.sqrt(d)``,
        ``q.size(-1)``, ``self.scale`` set from such in ``__init__``): moving them is exact."""
        if depth > 16:
            return False
        if ctx.number(expr) is not None:
            return True
        if isinstance(expr, cst.BinaryOperation):
            return self._scalar(ctx, pm, expr.left, depth + 1) and self._scalar(ctx, pm, expr.right, depth + 1)
        if isinstance(expr, cst.UnaryOperation):
            return self._scalar(ctx, pm, expr.expression, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self._scalar(ctx, pm, expr.left, depth + 1) and self._scalar(ctx, pm, expr.right, depth + 1)
        if isinstance(expr, cst.IfExp):
            return self._scalar(ctx, pm, expr.body, depth + 1) and self._scalar(ctx, pm, expr.orelse, depth + 1)
        if isinstance(expr, cst.Call):
            name = ctx.call_name(expr) or ""
            method = expr.func.attr.value if isinstance(expr.func, cst.Attribute) else None
            if name in _SQRT or name in ("math.pow", "float", "int", "round", "abs", "min", "max", "sqrt",
                                         "math.log", "math.exp"):
                return all(self._scalar(ctx, pm, a.value, depth + 1) for a in expr.args)
            return method in ("size", "dim", "numel", "item")
        if isinstance(expr, cst.Subscript):
            # q.shape[-1]
            return isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape"
        if isinstance(expr, cst.Name):
            if expr.value == "None":
                return True
            value = pm.value_of(expr)
            if value is not None:
                return self._scalar(ctx, pm, value, depth + 1)
            binding = pm.binding_at(expr.value, expr)
            if isinstance(binding, tuple) and binding[0] == "param":
                param = binding[2]
                if param.annotation is not None:
                    return "Tensor" not in ctx.code(param.annotation.annotation)
                return pm.dtype_of(expr).dtype is None  # a number by its name or default
            return False
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                value = pm.init_attribute(expr, expr.attr.value)
                if value is None:
                    return False
                if isinstance(value, cst.Name):
                    # self.scale = scale: an __init__ argument; numbers by convention unless it
                    # is a tensor by annotation
                    return pm.dtype_of(value).dtype is None
                return self._scalar(ctx, pm, value, depth + 1)
            return False
        return False


def head_dim_contraction(ctx, pm, product: cst.CSTNode) -> bool:
    """``a @ b.transpose(-2, -1)`` / ``a @ b.T`` / ``einsum("bhid,bhjd->bhij", q, k)``: both operands
    are contracted over their last axis, the feature (head) dimension of q·kᵀ."""
    if isinstance(product, cst.BinaryOperation) or P.op_of(ctx, pm, product) in ("matmul", "bmm", "mm"):
        operands = P.tensor_operands(ctx, pm, product)
        return len(operands) == 2 and _last_two_swapped(ctx, pm, operands[1]) and not _last_two_swapped(ctx, pm, operands[0])
    if isinstance(product, cst.Call) and P.op_of(ctx, pm, product) == "einsum":
        args = P.positional(product)
        if not args or not isinstance(args[0].value, cst.SimpleString):
            return False
        equation = str(args[0].value.evaluated_value).replace(" ", "")
        inputs, _, output = equation.partition("->")
        terms = inputs.split(",")
        if len(terms) != 2 or not all(terms) or not output:
            return False
        last = {t[-1] for t in terms}
        return len(last) == 1 and last.pop() not in output
    return False


def _last_two_swapped(ctx, pm, expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT"):
        return True
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("transpose", "swapaxes"):
        dims = sorted(ctx.number(a.value) for a in P.positional(expr) if ctx.number(a.value) is not None)
        return dims in ([-2, -1], [2, 3])
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        return value is not None and _last_two_swapped(ctx, pm, value)
    return False


def textbook_attention(ctx, pm, product: cst.CSTNode, scale: Scale, scale_side=None) -> bool:
    """Scaled by 1 / sqrt(d) (the attention scale), by a constant after a head-dim contraction, or
    by the length of the contracted feature axis itself (``x @ y.transpose(-2, -1)`` then
    ``/ x.shape[-1]``: a mean over the features, the 1/d of muP attention and of k-diffusion's KID
    polynomial kernel). A contraction over tokens, sequences or samples (``x.T @ x / x.size(0)``)
    stays AMP204's."""
    if scale.kind == "sqrt":
        return True
    if scale.kind == "count" and scale_side is not None and head_dim_contraction(ctx, pm, product):
        return _feature_length_of(ctx, pm, scale_side, product)
    return scale.kind == "constant" and head_dim_contraction(ctx, pm, product)


def _size_of(ctx, pm, expr: cst.BaseExpression, depth: int = 0) -> Optional[Tuple[cst.BaseExpression, Optional[float]]]:
    """(tensor, axis) when ``expr`` is a size of a tensor, directly or through names bound to one:
    ``x.shape[i]`` / ``x.size(i)`` give ``i`` (None when it is not a number), ``x.numel()`` /
    ``x.size()`` None."""
    if depth > 4:
        return None
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        return _size_of(ctx, pm, value, depth + 1) if value is not None else None
    if isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute) and expr.value.attr.value == "shape":
        index = expr.slice[0].slice if len(expr.slice) == 1 else None
        return expr.value.value, ctx.number(index.value) if isinstance(index, cst.Index) else None
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in ("size", "numel"):
        args = P.positional(expr)
        return expr.func.value, ctx.number(args[0].value) if len(args) == 1 else None
    return None


def _feature_length_of(ctx, pm, expr: cst.BaseExpression, product: cst.CSTNode) -> bool:
    """``x.shape[-1]`` / ``x.size(-1)`` (or a name bound to one) of an operand of ``product``."""
    size = _size_of(ctx, pm, expr)
    if size is None or size[1] != -1:
        return False
    operands = {ctx.code(P.through_views(ctx, pm, o)) for o in P.tensor_operands(ctx, pm, product)}
    return ctx.code(size[0]) in operands


def _size_of_the_product(ctx, pm, expr: cst.BaseExpression, product: cst.CSTNode) -> bool:
    """``expr`` is a size of ``product`` itself (``f.size(-1)``, ``f.shape[1]``, ``f.numel()`` with
    ``f`` bound to it, directly or through a name): the product's axes are the free ones, the
    contracted axis is gone, so such a divisor counts positions (fast-reid's non-local block:
    ``f = matmul(theta_x, phi_x)`` over channels, then ``f / f.size(-1)``, the number of positions),
    not the terms of the sum it normalises."""
    size = _size_of(ctx, pm, expr)
    receiver = size[0] if size is not None else None
    if receiver is product:
        return True
    if isinstance(receiver, cst.Name):
        bound = P.single_binding(ctx, pm, receiver)
        return bound is not None and bound[0] is product
    return False


def _sums_operand_over_contraction(ctx, pm, call: cst.Call, product: cst.CSTNode) -> bool:
    """``w.sum(-1)`` / ``torch.sum(w, dim=-1)`` (or ``w.sum()``) with ``w`` an operand of the product
    ``bmm(w, v)`` / ``w @ v`` / ``matmul`` summed over the axis the product contracts (the last of the
    left operand, the one before it of the right one)."""
    if P.op_of(ctx, pm, call) != "sum":
        return False
    func = call.func
    args = P.positional(call)
    if isinstance(func, cst.Attribute) and (ctx.call_name(call) or "").startswith("torch."):
        summed, rest = (args[0].value, args[1:]) if args else (None, [])
    elif isinstance(func, cst.Attribute):
        summed, rest = func.value, args
    else:
        return False
    dim = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("dim", "axis")),
               rest[0].value if rest else None)
    axis = ctx.number(dim) if dim is not None else None
    if summed is None or (dim is not None and axis is None) or P.op_of(ctx, pm, product) not in ("__matmul__", "matmul", "bmm"):
        return False
    code = ctx.code(P.through_views(ctx, pm, summed))
    operands = [ctx.code(P.through_views(ctx, pm, o)) for o in P.tensor_operands(ctx, pm, product)]
    if len(operands) != 2 or code not in operands:
        return False
    contracted = -1 if code == operands[0] else -2
    return dim is None or axis == contracted


def _is_number_like(ctx, expr: cst.BaseExpression) -> bool:
    """An eps added to a normaliser: a number, or a name / ``self.eps`` (not a tensor slice)."""
    return ctx.number(expr) is not None or isinstance(expr, (cst.Name, cst.Attribute))


def scaled_products(ctx) -> list:
    """The file's candidates, found once and shared by AMP204 and AMP205."""
    found = ctx._cache.get("scaled_products")
    if found is None:
        found = ctx._cache["scaled_products"] = list(ScaledProducts().candidates(ctx))
    return found  # type: ignore[return-value]
