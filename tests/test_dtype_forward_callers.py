"""A module's ``forward`` is called through its instances (``miner = Miner(); miner(emb)``,
``self.loss_fn = Loss()`` then ``self.loss_fn(x)``): what those calls pass is what ``forward``'s
parameters hold, in this file and in the files that build the module (pytorch-metric-learning's
miner gets ``model(x).float()``, held-out bug B16; OpenRLHF's SFT loss, T5-1). Autocast casts the
inputs of its ops, never a forward's arguments. Near misses: a caller passing the model's float16
output; a module whose instance no file of the project calls (the regime decides, as before)."""
import textwrap

import pytest

from amplint.api import lint_source

LOSS = """
import torch
from torch import nn


class LogLoss(nn.Module):
    def forward(self, probs, target):
        return -(target * torch.log(probs + 1e-8)).mean()
"""
TRAIN = """
import torch
{imports}

def train(model, loader, opt):
    crit = LogLoss().cuda()
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = crit({passed}, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def same_file(passed):
    src = textwrap.dedent(LOSS + TRAIN.format(imports="", passed=passed))
    return [f.line for f in lint_source(src, filename="train.py") if f.code == "AMP102"]


def other_file(passed):
    files = {"losses.py": textwrap.dedent(LOSS)}
    src = textwrap.dedent(TRAIN.format(imports="from losses import LogLoss", passed=passed))
    files["train.py"] = src
    return [f.line for f in lint_source(textwrap.dedent(LOSS), filename="losses.py", extra_files={"train.py": src})
            if f.code == "AMP102"]


@pytest.mark.parametrize("where", [same_file, other_file])
def test_a_float32_value_passed_to_the_instance(where):
    assert where("model(x).float().sigmoid()") == []


@pytest.mark.parametrize("where", [same_file, other_file])
def test_near_miss_the_float16_model_output(where):
    assert where("torch.sigmoid(model(x) @ x)") == [8]


def test_near_miss_an_instance_nobody_calls():
    src = textwrap.dedent(LOSS + TRAIN.format(imports="", passed="x").replace("loss = crit(x, y)", "loss = model(x).mean()"))
    assert [f.line for f in lint_source(src, filename="train.py") if f.code == "AMP102"] == [8]
