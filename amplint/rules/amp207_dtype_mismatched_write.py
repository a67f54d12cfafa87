"""AMP207 dtype-mismatched-write: a scatter / index write of a tensor into one of another dtype, one of them float16."""
from __future__ import annotations

from typing import Iterable

import libcst as cst

from ..context.conditions import never_run_by_callers
from ..context.precision import F16, precision_model
from ..findings import Confidence, Violation
from ..torch_api import grad_mode
from .base import Rule, because

# What torch says (aten/src/ATen/native/TensorAdvancedIndexing.cpp and the masked_scatter check).
_ERRORS = {"scatter": "scatter(): Expected self.dtype to be equal to src.dtype",
           "index_add": "index_add_(): self (Half) and source (Float) must have the same scalar type",
           "index_copy": "index_copy_(): self and source expected to have the same dtype",
           "index_put": "Index put requires the source and destination dtypes match",
           "masked_scatter": "masked_scatter: expected self and source to have same dtypes"}


class DtypeMismatchedWrite(Rule):
    code = "AMP207"
    name = "dtype-mismatched-write"
    summary = ("scatter_ / index_add_ / index_put_ / masked_scatter_ of a float32 tensor into a float16 one (or the "
               "reverse) under float16: raises (off by default)")
    fix_safety = "none"
    applies_under = "fp16 autocast or pure fp16"
    # A crash at the first float16 step is loud, not silent (like AMP206): named to be run.
    default_enabled = False
    needs = r"scatter|index_add|index_copy|index_put|masked_scatter"

    def check(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for call in ctx.nodes(cst.Call):
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in grad_mode.SAME_DTYPE_WRITES:
                continue
            found = pm.mismatched_write(call)
            if found is None or never_run_by_callers(ctx, call) or pm.raised_in_half_before(call) is not None:
                continue  # (after a write that raises already, this one never runs in float16)
            op, dest, dest_fact, source, source_fact = found
            if dest_fact.assumed or source_fact.assumed:
                continue  # the regime's guess that an argument is an activation: a crash needs both dtypes known
            half, other = (dest_fact, source_fact) if dest_fact.dtype == F16 else (source_fact, dest_fact)
            error = _ERRORS["scatter" if op.startswith("scatter") else op.rstrip("_")]
            message = (f"`{op}` writes {source_fact.dtype} `{ctx.code(source)}` into {dest_fact.dtype} "
                       f"`{ctx.code(dest)}`: these ops need one dtype and do not promote, so this raises "
                       f"RuntimeError \"{error}\" whenever it runs in float16")
            help = (f"cast one side to the other's dtype: `src.to(dest.dtype)`, or build the destination "
                    f"from the source (`torch.zeros_like(src)`, `src.new_zeros(...)`)")
            weakest = Confidence.CERTAIN if Confidence.of(half) == Confidence.of(other) == Confidence.CERTAIN \
                else Confidence.LIKELY
            yield Violation(call, message, weakest, None, help=help,
                            evidence=because(half, ctx, call) + because(other, ctx, call, other.dtype))
