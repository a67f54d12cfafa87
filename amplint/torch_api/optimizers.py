"""torch.optim classes whose update divides by ``sqrt(state) + eps``, with their eps defaults.

Source: the ``__init__`` signatures in torch/optim/{adam,adamw,adamax,nadam,radam,rmsprop,adagrad,
adadelta}.py (checked against the installed torch by tests/test_torch_api.py).
"""
from __future__ import annotations

from typing import Dict, Tuple

# class -> (default eps, index of eps among the positional arguments, params included)
OPTIMIZERS: Dict[str, Tuple[float, int]] = {
    "Adam": (1e-8, 3),
    "AdamW": (1e-8, 3),
    "Adamax": (1e-8, 3),
    "NAdam": (1e-8, 3),
    "RAdam": (1e-8, 3),
    "RMSprop": (1e-8, 3),
    "Adagrad": (1e-10, 5),
    "Adadelta": (1e-6, 3),
}
