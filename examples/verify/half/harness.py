"""Harness for `amplint verify` in pure float16 (half parameters, no autocast): Adam's default eps
is 0 in float16, so a parameter whose squared gradient underflows is divided by 0 within a few steps.
`amplint verify examples/verify/half/harness.py:adam_half --steps 3`."""
import torch
from torch import nn

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


# --- pure float16 training with Adam's default eps (1e-8 is 0 in float16)
def _half_run(eps):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)).to(DEVICE).half()
    x = torch.randn(64, 8, device=DEVICE, dtype=torch.float16)
    if eps is None:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    else:
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, eps=eps)
    return (lambda: model(x).float().mean() * 1e-2), optimizer


def adam_half():
    return _half_run(None)


def adam_half_safe():
    return _half_run(1e-4)
