"""What a loop over a data loader binds is input data (``for x, y in loader:``): float32 batches (or
integer labels) that autocast does not cast. A loss module's ``target`` that every call passes from
such a loop is not float16 by the regime's guess (``target / (target.amax(...) + 1e-8)`` on the
loader's targets). Near misses: the prediction (a layer's output) normalised the same way, a loop over
something else (a list of activations), and a target computed by a layer."""
import textwrap

import pytest

from amplint.api import lint_source

LOSS = """
import torch
from torch import nn


class WeightedLoss(nn.Module):
    def forward(self, pred, target):
        weights = {normalised} / ({normalised}.amax(dim=-1, keepdim=True) + 1e-8)
        return ((pred - target) ** 2 * weights).mean()
"""

TRAIN = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from loss import WeightedLoss

model = nn.Linear(16, 4).cuda()
head = nn.Linear(4, 4).cuda()
criterion = WeightedLoss()
opt = torch.optim.Adam(model.parameters())
scaler = torch.amp.GradScaler("cuda")
{loader}
for step, (x, y) in enumerate({iterable}):
    x, y = x.cuda(), y.cuda()
    with torch.amp.autocast("cuda"):
        loss = criterion(model(x), {target})
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""

DATALOADER = "train_data = DataLoader(TensorDataset(torch.randn(64, 16), torch.rand(64, 4)), batch_size=8)"


def codes(normalised="target", loader=DATALOADER, iterable="train_data", target="y"):
    files = {"train.py": textwrap.dedent(TRAIN).format(loader=loader, iterable=iterable, target=target)}
    return [f.code for f in lint_source(textwrap.dedent(LOSS).format(normalised=normalised), filename="loss.py",
                                        extra_files=files, select=("AMP102",))]


@pytest.mark.parametrize("name, kwargs, expected", [
    ("targets from a DataLoader", {}, []),
    ("targets from a loader named so", {"loader": "", "iterable": "train_loader"}, []),
    ("near miss: the prediction normalised", {"normalised": "pred"}, ["AMP102"]),
    ("near miss: a loop over something else", {"loader": "pairs = [(torch.randn(8, 16), torch.rand(8, 4))]",
                                                "iterable": "pairs"}, ["AMP102"]),
    ("near miss: a target computed by a layer", {"target": "head(y)"}, ["AMP102"]),
])
def test_loader_loops(name, kwargs, expected):
    assert codes(**kwargs) == expected, name
