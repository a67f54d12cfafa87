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
    summary = "Float16 matmul / einsum over a long axis normalised only after the product"
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
