"""``if init is True:`` (``is False``) of a parameter every caller leaves at a literal default or
passes a literal for is a branch no caller takes (``conditions.never_run_by_callers``): OpenNMT-py's
weight-norm layers have a data-dependent initialisation (``torch.sqrt(v_init + 1e-10)``) under
``forward(self, x, init=False)`` that nothing in the project asks for. Near misses: a caller passing
``init=True``; a caller passing a value that is no literal."""
import textwrap

import pytest

from amplint.api import lint_source

LAYER = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class WeightNormLinear(nn.Linear):
    def __init__(self, i, o):
        super().__init__(i, o)
        self.g = nn.Parameter(torch.ones(o))

    def forward(self, x, init=False):
        if init {test}:
            x_init = F.linear(x, self.weight)
            scale = 1.0 / torch.sqrt(x_init.var(0) + 1e-10)
            self.g.data.copy_(scale)
            return scale * x_init
        w = self.g[:, None] * self.weight / self.weight.norm(dim=1, keepdim=True)
        return F.linear(x, w, self.bias)
"""
TRAIN = """
import torch
from layers import WeightNormLinear

net = WeightNormLinear(16, 4).cuda()
opt = torch.optim.Adam(net.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, flag in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = net(x{passed}).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp102(test, passed):
    return [f.line for f in lint_source(textwrap.dedent(LAYER).replace("{test}", test), filename="layers.py",
                                        extra_files={"train.py": TRAIN.replace("{passed}", passed)})
            if f.code == "AMP102"]


@pytest.mark.parametrize("test, passed", [("is True", ""), ("is True", ", init=False"), ("is not False", "")])
def test_an_init_branch_no_caller_asks_for(test, passed):
    assert amp102(test, passed) == []


@pytest.mark.parametrize("passed", [", init=True", ", init=flag"])
def test_near_miss_a_caller_may_ask_for_it(passed):
    assert amp102("is True", passed) == [15]


VAE = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class DiscreteVAE(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(3, 8, 1)
        self.decoder = nn.Conv2d(8, 3, 1)

    @torch.no_grad()
    def get_codebook_indices(self, images):
        logits = self.forward(images, return_logits=True)
        return logits.argmax(dim=1)

    def forward(self, img, return_loss=False, return_logits=False):
        logits = self.encoder(img)
        if return_logits:
            return logits
        out = self.decoder(F.softmax(logits, dim=1))
        if not return_loss:
            return out
        qy = torch.sigmoid(logits)
        log_qy = torch.log(qy + 1e-10)
        return F.mse_loss(out, img) + log_qy.mean()
"""
VAE_TRAIN = """
import torch
from vae import DiscreteVAE

vae = DiscreteVAE().cuda()
net = torch.nn.Linear(16, 8).cuda()
opt = torch.optim.Adam(net.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, flag in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        target = vae.get_codebook_indices(x){extra}
        loss = torch.nn.functional.cross_entropy(net(x.flatten(1)), target.flatten())
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def vae_amp102(extra):
    return [f.line for f in lint_source(textwrap.dedent(VAE), filename="vae.py",
                                        extra_files={"train.py": VAE_TRAIN.replace("{extra}", extra)})
            if f.code == "AMP102"]


def test_a_loss_branch_behind_early_returns_no_caller_passes():
    """unilm BEiT's DiscreteVAE (T7-18): the only call passes ``return_logits=True``, which returns
    before the KL term's ``torch.log(qy + 1e-10)``."""
    assert vae_amp102("") == []


@pytest.mark.parametrize("extra", ["; rec = vae(x, return_loss=True)", "; rec = vae(x, return_loss=flag)"])
def test_near_miss_a_caller_asks_for_the_loss(extra):
    assert vae_amp102(extra) == [26]
