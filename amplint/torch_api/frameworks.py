"""Deep-learning frameworks other than PyTorch whose APIs mirror torch's names (``paddle.amp.GradScaler``
with ``scale`` / ``step`` / ``update``, ``paddle.amp.auto_cast``, ``oneflow.amp.GradScaler``,
``mindspore.amp``): a file written for one of them is not PyTorch code, and amplint's rules, which
follow torch's behaviour (CUDA autocast's op lists, GradScaler's contract), say nothing true about it.
insightface keeps Paddle and OneFlow ports of its recognition training beside the PyTorch one.
"""
from __future__ import annotations

from typing import Iterable, Optional

# Top-level module names (as imported) of frameworks that are not PyTorch.
OTHER_FRAMEWORKS = frozenset({
    "paddle", "oneflow", "mindspore", "tensorflow", "jax", "flax", "megengine", "jittor", "mxnet", "caffe",
})

# Modules whose import means the file works with torch tensors.
TORCH_MODULES = frozenset({"torch", "torchvision", "torchaudio", "pytorch_lightning", "lightning", "accelerate",
                           "deepspeed", "apex", "transformers", "timm"})


def other_framework(imported: Iterable[str]) -> Optional[str]:
    """The framework a file is written for when it imports one that is not PyTorch and nothing of
    torch's (``imported``: the dotted names it imports); None otherwise. A file that imports both
    (TensorFlow's data pipeline feeding a torch model) is PyTorch code."""
    heads = {name.split(".", 1)[0] for name in imported}
    if heads & TORCH_MODULES:
        return None
    others = sorted(heads & OTHER_FRAMEWORKS)
    return others[0] if others else None
