"""AMP304 on Lightning Fabric's ``clip_gradients(..., max_norm=...)`` left at its default
``error_if_nonfinite=True`` under ``precision="16-mixed"``: it raises on the inf / NaN gradients of
an overflowed step that the GradScaler would skip (lightly-train PR #653, every task model's clip
step; bug set 8, B41). Near misses: ``error_if_nonfinite=False``; a value clip (``clip_val=``);
bf16-mixed and fp32 Fabric runs."""
import pytest

from amplint.api import lint_source

TRAIN = """
import torch
from lightning.fabric import Fabric


def main():
    fabric = Fabric(accelerator="cuda", precision={precision})
    model = torch.nn.Linear(8, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model, optimizer = fabric.setup(model, optimizer)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        optimizer.zero_grad()
        fabric.backward(loss)
        fabric.clip_gradients({clip})
        optimizer.step()
"""


def amp304(clip, precision='"16-mixed"'):
    return [f.line for f in lint_source(TRAIN.replace("{clip}", clip).replace("{precision}", precision),
                                        filename="train.py") if f.code == "AMP304"]


@pytest.mark.parametrize("clip", ["model, optimizer, max_norm=1.0", "model, optimizer, None, 1.0",
                                  "model, optimizer, max_norm=1.0, error_if_nonfinite=True"])
def test_a_norm_clip_that_raises_under_16_mixed(clip):
    assert amp304(clip) == [15]


@pytest.mark.parametrize("clip", ["model, optimizer, max_norm=1.0, error_if_nonfinite=False",
                                  "model, optimizer, clip_val=0.5"])
def test_near_miss_a_clip_that_does_not_raise(clip):
    assert amp304(clip) == []


@pytest.mark.parametrize("precision", ['"bf16-mixed"', '"32-true"'])
def test_near_miss_no_float16_loss_scaling(precision):
    assert amp304("model, optimizer, max_norm=1.0", precision) == []
