"""Helpers of common libraries that write a caller's value into a tensor (a masked_fill under
another name): a literal beyond float16's range passed to them overflows like one passed to
``masked_fill`` itself.

Source: allennlp/nn/util.py (allennlp 0.9 - 2.10): ``replace_masked_values(tensor, mask,
replace_with)`` is ``tensor.masked_fill(~mask, replace_with)``; in 0.9 ``masked_max(vector, mask,
dim, keepdim=False, min_val=-1e7)`` fills with ``min_val``, and ``masked_softmax(vector, mask,
dim=-1, memory_efficient=False, mask_fill_value=-1e32)`` fills with ``mask_fill_value`` only when
``memory_efficient`` is true (otherwise it multiplies by the mask). Later releases take the fill
from ``min_value_of_dtype`` and drop those parameters. ``masked_log_softmax`` takes no fill value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional, Tuple

Param = Tuple[int, str]  # (index among the positional arguments, keyword)


@dataclass(frozen=True)
class FillHelper:
    tensor: Param  # the tensor written to (the value takes its dtype)
    value: Param  # the value written
    only_if: Optional[Param] = None  # a boolean argument that must be true for the value to be written


FILL_HELPERS: Dict[str, FillHelper] = {
    "allennlp.nn.util.replace_masked_values": FillHelper((0, "tensor"), (2, "replace_with")),
    "allennlp.nn.util.masked_max": FillHelper((0, "vector"), (4, "min_val")),
    "allennlp.nn.util.masked_softmax": FillHelper((0, "vector"), (4, "mask_fill_value"),
                                                  only_if=(3, "memory_efficient")),
}
