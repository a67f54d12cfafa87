"""The deprecated AMP API and its torch.amp replacement.

Source: the deprecation warnings in torch/cuda/amp/autocast_mode.py, torch/cuda/amp/grad_scaler.py,
torch/cpu/amp/autocast_mode.py and torch/cpu/amp/grad_scaler.py (``torch.cuda.amp.X(args...)`` is
deprecated, use ``torch.amp.X("cuda", args...)``), PyTorch 2.4 and later.
"""
from __future__ import annotations

from typing import Dict, Tuple

# deprecated name -> (what it is in torch.amp, device)
DEPRECATED: Dict[str, Tuple[str, str]] = {
    "torch.cuda.amp.autocast": ("autocast", "cuda"),
    "torch.cuda.amp.GradScaler": ("GradScaler", "cuda"),
    "torch.cuda.amp.custom_fwd": ("custom_fwd", "cuda"),
    "torch.cuda.amp.custom_bwd": ("custom_bwd", "cuda"),
    "torch.cpu.amp.autocast": ("autocast", "cpu"),
    "torch.cpu.amp.GradScaler": ("GradScaler", "cpu"),
    "torch.cuda.amp.autocast_mode.autocast": ("autocast", "cuda"),
    "torch.cuda.amp.grad_scaler.GradScaler": ("GradScaler", "cuda"),
}
DEPRECATED_SINCE = "2.4"
# The torch release from which each replacement exists (a project supporting an older torch needs
# the old name): torch.amp.autocast(device_type, ...) from 1.12, when autocast_mode.py moved into the
# new torch/amp package (the 1.12 docs' "Automatic Mixed Precision package - torch.amp" page, source
# torch/amp/autocast_mode.py; 1.10 and 1.11 have only torch/autocast_mode.py, i.e. torch.autocast);
# torch.amp.GradScaler from 2.3 (torch/amp/grad_scaler.py moved there in 2.3); custom_fwd /
# custom_bwd with ``device_type=`` from 2.4, the release that deprecated the old names.
REPLACEMENT_SINCE: Dict[str, Tuple[int, ...]] = {
    "autocast": (1, 12), "GradScaler": (2, 3), "custom_fwd": (2, 4), "custom_bwd": (2, 4),
}
