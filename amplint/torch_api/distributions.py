"""torch.distributions: the methods whose result CUDA autocast makes float32.

A distribution's methods are Python code over aten ops, so autocast's policy applies inside them: a
method every path of which ends in an op on autocast's float32 list (``autocast.FP32``), or combines
its value with one (float16 promotes to float32), returns float32 under fp16 autocast whatever the
dtype of the parameters and the value. Source: torch/distributions/normal.py (torch 2.x):

- ``cdf``: ``0.5 * (1 + torch.erf((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))``:
  ``reciprocal`` is on the float32 list, the product promotes;
- ``log_prob``: ``-((value - self.loc) ** 2) / (2 * var) - log_scale - ...`` with ``var = self.scale**2``
  and ``log_scale = self.scale.log()``: ``pow`` and ``log`` are on the float32 list;
- ``icdf``: ``self.loc + self.scale * torch.erfinv(2 * value - 1) * math.sqrt(2)``: ``erfinv``;
- ``entropy``: ``0.5 + 0.5 * math.log(2 * math.pi) + torch.log(self.scale)``: ``log``.

(``sample`` / ``rsample`` are ``torch.normal(...)`` / ``loc + eps * scale``: the parameters' dtype.)
Each entry names the float32-list op its source calls; tests/test_torch_api.py checks the installed
torch's source for it.
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

# class (as torch.distributions exports it) -> method -> the float32-list op its result goes through
FLOAT32_UNDER_AUTOCAST: Dict[str, Dict[str, str]] = {
    "Normal": {"cdf": "reciprocal", "log_prob": "log", "icdf": "erfinv", "entropy": "log"},
}

# where the classes live: torch.distributions.Normal, torch.distributions.normal.Normal
_MODULES = ("torch.distributions", "torch.distributions.normal")


def float32_method(cls_qualname: Optional[str], method: str) -> Optional[Tuple[str, str]]:
    """(class, float32-list op) when ``cls_qualname.method`` returns float32 under CUDA autocast."""
    if not cls_qualname:
        return None
    module, _, cls = cls_qualname.rpartition(".")
    op = FLOAT32_UNDER_AUTOCAST.get(cls, {}).get(method) if module in _MODULES else None
    return (cls, op) if op is not None else None
