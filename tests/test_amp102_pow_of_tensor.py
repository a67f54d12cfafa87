"""A tensor's ``**`` is on CUDA autocast's float32 list, whatever its input's dtype: YOLOP's box
regression ``pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchors[i]`` in a loop over its predictions (a
loop variable of no known dtype) is float32 under fp16 autocast, so ``bbox_iou(pbox)``'s default
``eps=1e-9`` guards float32 denominators (unseen set 22, T22-2). ``x ** 2`` of a value that may be a
Python number still says nothing; near misses: the same value without the power (``* 3``) and a
power of numbers (``* 2 ** 2``) keep the finding."""
import pytest

from amplint.api import lint_source

TRAIN = """
import torch
import torch.nn as nn


def ratio(x, eps=1e-9):
    return x[:, 0] / (x[:, 1] + eps)


def main(outputs_of):
    model = nn.Linear(16, 2).cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cuda")
    for step in range(100):
        x = torch.randn(8, 16, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = 0
            for out in outputs_of(model, x):
                {wh}
                loss = loss + ratio(wh).mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""

EPS_LINE = TRAIN.splitlines().index("def ratio(x, eps=1e-9):") + 1


def amp102(wh):
    findings = lint_source(TRAIN.replace("{wh}", wh), filename="train.py")
    assert not [f for f in findings if f.code.startswith("E9")]
    return [f.line for f in findings if f.code == "AMP102"]


@pytest.mark.parametrize("wh", [
    "wh = (out.sigmoid() * 2) ** 2",
    "wh = (out[:, :2].sigmoid() * 2) ** 2 * out[:, 2:4]",
    "s = out.sigmoid() * 2\n                wh = s ** 2",
])
def test_power_of_a_tensor_is_float32_under_autocast(wh):
    assert amp102(wh) == []


@pytest.mark.parametrize("wh", [
    "wh = out.sigmoid() * 3",
    "wh = out.sigmoid() * 2 ** 2",
])
def test_near_misses_stay_reported(wh):
    assert amp102(wh) == [EPS_LINE], wh
