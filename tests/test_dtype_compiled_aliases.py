"""A function called through a compiled alias (``focal_jit = torch.jit.script(focal)``,
``torch.compile(focal)``) takes its arguments' dtypes from the alias's calls: CenterNet2's fix casts at
the call sites, ``heatmap_focal_loss_jit(logits_pred.float(), ...)``, so the focal loss's
``log(1 - sigmoid)`` is float32 (B47b). Near misses: the alias called with the float16 logits (found,
in the same file and from another file), a name bound to something else than a compiled function."""
import textwrap

import pytest

from amplint.api import lint_source

LOSS = """
import torch


def focal(inputs, targets, sigmoid_clamp: float = 1e-4):
    pred = torch.clamp(inputs.sigmoid_(), min=sigmoid_clamp, max=1 - sigmoid_clamp)
    neg = torch.log(1 - pred) * (1 - targets)
    return -neg.sum()


focal_jit = {compiler}(focal)
"""

HEAD = """
import torch
from torch import nn

from pkg.loss import focal_jit


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x, hm):
        logits = self.conv(x)
        return focal_jit({logits}, hm.float())


def main(loader):
    model = Head().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for x, hm in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, hm)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


if __name__ == "__main__":
    main([])
"""


def amp201(logits, compiler="torch.jit.script", same_file=False):
    head = textwrap.dedent(HEAD).format(logits=logits)
    loss = textwrap.dedent(LOSS).replace("{compiler}", compiler)
    if same_file:
        source = loss + head.replace("from pkg.loss import focal_jit\n", "")
        files = {"pkg/__init__.py": ""}
    else:
        source = loss
        files = {"pkg/__init__.py": "", "pkg/head.py": head}
    return [f.line for f in lint_source(source, filename="pkg/loss.py", extra_files=files) if f.code == "AMP201"]


@pytest.mark.parametrize("same_file", [True, False])
@pytest.mark.parametrize("compiler", ["torch.jit.script", "torch.compile"])
def test_alias_called_with_float32_logits(compiler, same_file):
    assert amp201("logits.float()", compiler, same_file) == []


@pytest.mark.parametrize("same_file", [True, False])
def test_near_miss_alias_called_with_float16_logits(same_file):
    assert amp201("logits", same_file=same_file) == [7]


def test_near_miss_a_name_bound_to_something_else():
    # ``focal_jit = staticmethod(focal)``: not a compiled function; the call is not followed, and
    # the loss helper's argument is the regime's float16 guess as before
    assert amp201("logits.float()", compiler="staticmethod") == [7]
