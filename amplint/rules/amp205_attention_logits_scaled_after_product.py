"""AMP205 attention-logits-scaled-after-product (off by default): the textbook q·kᵀ, contracted
over the head dimension, scaled by 1/sqrt(d) after the float16 product."""
from __future__ import annotations

import math
from typing import Iterable

import libcst as cst

from ..context import products as P
from ..context.scaled_products import scaled_products
from ..findings import Confidence, Violation
from ..fp16 import FLOAT16, fmt
from ..prefilter import MATMUL, words
from .base import Rule, because

# The head dimension the message's example uses, and the per-element size at which q·k reaches
# float16's largest value with it (sqrt(65504 / 64) ≈ 32).
_EXAMPLE_D = 64


class AttentionLogitsScaledAfterProduct(Rule):
    code = "AMP205"
    name = "attention-logits-scaled-after-product"
    summary = "Attention logits q·kᵀ scaled by 1/sqrt(d) after the float16 product (off by default)"
    fix_safety = "safe"
    applies_under = "fp16 (mixed or pure half)"
    default_enabled = False  # overflows only on some large models: `amplint verify` settles it
    needs = ((words(P.PRODUCTS), MATMUL), r"\*|/")  # as AMP204: the product and its scaling

    def check(self, ctx) -> Iterable[Violation]:
        for c in scaled_products(ctx):
            if not c.textbook_attention:
                continue  # AMP204
            what = f"`{P.short_code(ctx, c.product)}`"
            if c.named is not None:
                what = f"`{c.named.value}` (= {what})"
            scale_text = P.short_code(ctx, c.scale_side, 40)
            if isinstance(c.node.operator, (cst.Divide, cst.DivideAssign)):
                after = f"divided by `{scale_text}`"
            else:
                after = f"multiplied by `{scale_text}`"
            if c.scale.value is not None:
                after += f" (×{fmt(c.scale.value)})"
            per_elem = math.sqrt(FLOAT16.max / _EXAMPLE_D)
            message = (f"{what} is computed in float16 and only then {after}: with d={_EXAMPLE_D} and entries "
                       f"≈ {per_elem:.0f} the unscaled product already reaches float16's {fmt(FLOAT16.max)} (inf)")
            yield Violation(c.node, message, Confidence.LIKELY, fix=c.fix,
                            help=("scale an operand first (`(q * scale) @ k.T`), or use `baddbmm(..., alpha=scale)` / "
                                  "`F.scaled_dot_product_attention`"),
                            evidence=because(c.fact, ctx, c.node))
