"""AMP204 scale-after-fp16-product: a float16 contraction over a long axis (tokens, sequences,
samples), or another product, normalised only after it was summed."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from ..context import products as P
from ..context.precision import precision_model
from ..context.scaled_products import scaled_products
from ..findings import Confidence, Violation
from ..fp16 import FLOAT16, fmt
from ..prefilter import MATMUL, words
from .base import Rule, because

# The length of the contraction the message's example uses, and the size of the terms at which
# their sum reaches float16's largest value (sqrt(65504 / 1024) ≈ 8).
_EXAMPLE_N = 1024


class ScaleAfterFp16Product(Rule):
    code = "AMP204"
    name = "scale-after-fp16-product"
    summary = ("Float16 matmul / einsum over a long axis normalised only after the product, or divided by its "
               "depth row")
    fix_safety = "safe"
    applies_under = "fp16 (mixed or pure half)"
    # the product (``einsum``, ``matmul``, ``@``...) or a norm, and the ``*`` / ``/`` scaling it
    # afterwards or the ``**`` raising it
    needs = ((words(P.PRODUCTS), MATMUL, words({"norm", "vector_norm", "matrix_norm"})), r"\*|/")

    def check(self, ctx) -> Iterable[Violation]:
        for c in scaled_products(ctx):
            if c.textbook_attention:
                continue  # AMP205 (off by default): q·kᵀ over the head dimension
            what = f"`{P.short_code(ctx, c.product)}`"
            if c.named is not None:
                what = f"`{c.named.value}` (= {what})"
            scale_text = P.short_code(ctx, c.scale_side, 40)
            divide = isinstance(c.node.operator, (cst.Divide, cst.DivideAssign))
            after = f"divided by `{scale_text}`" if divide else f"multiplied by `{scale_text}`"
            if c.scale.value is not None:
                after += f" (×{fmt(c.scale.value)})"
            per_term = (FLOAT16.max / _EXAMPLE_N) ** 0.5
            summed = "is summed in float16"
            if c.upcast is not None:
                cast = P.short_code(ctx, c.upcast.func.attr) if isinstance(c.upcast.func, cst.Attribute) else "float"
                summed += f" (the `.{cast}()` after it comes too late: the sum overflows in the float16 product)"
            message = (f"{what} {summed} and only then {after}: {_EXAMPLE_N} products of entries "
                       f"≈ {per_term:.0f} along the contracted axis already reach float16's {fmt(FLOAT16.max)} (inf)")
            help = ("normalise an operand first (`einsum(eq, a / n, b)`), or contract in float32 "
                    "(`.float()` operands under `torch.autocast(..., enabled=False)`)")
            if c.upcast is not None:
                help = "cast the operands, not the product (`torch.mm(a.float(), b.float())` with autocast off), or " \
                       "normalise an operand first"
            yield Violation(c.node, message, Confidence.LIKELY, fix=c.fix, help=help,
                            evidence=because(c.fact, ctx, c.node))
        yield from self._powers_of_norms(ctx)
        yield from self._perspective_divides(ctx)

    def _perspective_divides(self, ctx) -> Iterable[Violation]:
        """``uvz[:2] /= uvz[2:3]`` of a float16 projection ``uvz = lidar2image[:3, :3].matmul(points)``
        (OpenPCDet's BEVFusion view transform under --use_amp, unseen set 14): before the perspective
        divide each row holds a pixel coordinate times the depth, u·z = fx·x + cx·z, which passes 65504
        for a focal length of ~1000 px and depths of tens of metres (1266·20 + 816·54 = 69,384): inf, and the
        point lands nowhere. Reported at the product, where the float32 belongs."""
        pm = precision_model(ctx)
        for node in [*ctx.nodes(cst.BinaryOperation), *ctx.nodes(cst.AugAssign)]:
            if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.Divide):
                num, den = node.left, node.right
            elif isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.DivideAssign):
                num, den = node.target, node.value
            else:
                continue
            if not (isinstance(num, cst.Subscript) and isinstance(den, cst.Subscript) and isinstance(num.value, cst.Name)
                    and isinstance(den.value, cst.Name) and num.value.value == den.value.value):
                continue
            if not P.perspective_divide(ctx, num, den):
                continue  # not coordinates divided by their depth row (linear attention's last row: above)
            product = _product_behind(ctx, pm, num.value)
            if product is None:
                continue
            fact = pm.dtype_of(product)
            if not fact.is_half:
                continue
            what = P.short_code(ctx, product)
            message = (f"perspective divide `{P.short_code(ctx, node, 40)}` of a float16 projection `{what}`: before the "
                       f"divide each coordinate is a pixel position times the depth (u·z = fx·x + cx·z), which passes "
                       f"float16's {fmt(FLOAT16.max)} (inf) for a focal length of ~1000 px and depths of tens of metres")
            help = ("project in float32 (`.float()` operands under `torch.autocast(..., enabled=False)`, mmcv's "
                    "`force_fp32`) and divide before casting back")
            yield Violation(product, message, Confidence.LIKELY, help=help, evidence=because(fact, ctx, product))

    def _powers_of_norms(self, ctx) -> Iterable[Violation]:
        """``local_norm ** norm_type`` with a float16 norm (fairscale's OSS.clip_grad_norm under
        --fp16: the norm of half gradients, squared to be summed across ranks): a norm is a sum of
        powers taken back to scale, so raising it again is the product before the normalisation,
        and any norm above sqrt(65504) ≈ 256 squared is inf. Under autocast ``norm`` and ``**``
        run in float32; a float32 norm (``dtype=torch.float32``) is the fix."""
        pm = precision_model(ctx)
        for node in ctx.nodes(cst.BinaryOperation):
            if not isinstance(node.operator, cst.Power) or not _raises(ctx, node.right):
                continue
            base = P.through_views(ctx, pm, node.left)
            norm = pm.value_of(base) if isinstance(base, cst.Name) else base
            if norm is None or P.op_of(ctx, pm, norm) not in _NORMS:
                continue
            fact = pm.dtype_of(node.left)
            if not fact.is_half:
                continue
            largest = FLOAT16.max ** 0.5
            what = P.short_code(ctx, node)
            message = (f"`{what}` raises a float16 norm to a power: any norm above {largest:.0f} squared "
                       f"is beyond float16's {fmt(FLOAT16.max)} (inf)")
            help = ("take the norm in float32 (`torch.norm(x, p, dtype=torch.float32)`, or `.float()` "
                    "before the norm) and raise that")
            yield Violation(node, message, Confidence.LIKELY, help=help, evidence=because(fact, ctx, node))


# Norms: the op names autocast knows them by (torch.norm, torch.linalg.vector_norm, x.norm()).
_NORMS = frozenset({"norm", "linalg_vector_norm", "vector_norm", "linalg_norm", "frobenius_norm", "linalg_matrix_norm"})


def _raises(ctx, exponent: cst.BaseExpression) -> bool:
    """An exponent that grows its base: a number of at least 2, or a name / attribute (the
    ``norm_type`` of a clip_grad_norm, 2.0 by default), not ``1 / p`` nor ``0.5``."""
    value = ctx.number(exponent)
    if value is not None:
        return value >= 2
    return isinstance(exponent, (cst.Name, cst.Attribute))


def _product_behind(ctx, pm, name: cst.Name, depth: int = 0):
    """The matrix product ``name`` holds where it is read, through ``+=`` / ``-=`` of a translation
    (``uvz += lidar2image[:3, 3:4]``); None when every binding reaching it is not one."""
    if depth > 3:
        return None
    for b in ctx.semantic.reaching(name.value, name):
        if b.kind == "augassign" and isinstance(b.value, cst.AugAssign) \
                and isinstance(b.value.operator, (cst.AddAssign, cst.SubtractAssign)):
            target = b.value.target
            found = _product_behind(ctx, pm, target, depth + 1) if isinstance(target, cst.Name) else None
        elif b.kind == "assign" and not b.part and isinstance(b.value, cst.BaseExpression):
            found = b.value if P.op_of(ctx, pm, b.value) in ("__matmul__", "matmul", "mm", "bmm") else None
        else:
            found = None
        if found is not None:
            return found
    return None
