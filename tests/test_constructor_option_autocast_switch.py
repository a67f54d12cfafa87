"""An autocast switched by a constructor option (insightface's jmlr, triage set 16, T16-5 part a): IResNet's forward
runs ``with torch.cuda.amp.autocast(is_fp16):`` after ``is_fp16 = self.fp16 > 0``, ``self.fp16 = fp16`` from
``__init__(..., fp16=0)``; the program builds it through ``get_model(name, **kwargs)`` -> ``iresnet50(pretrained,
**kwargs)`` -> ``_iresnet(..., **kwargs)`` -> ``IResNet(block, layers, **kwargs)`` and never passes ``fp16``: the
autocast is off in every run of the program and is not its evidence. Near misses (the evidence stays): a call on the
way passes ``fp16=1``; one passes ``fp16=cfg.fp16`` (a value not written out)."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

IRESNET = """
import torch
from torch import nn


class IResNet(nn.Module):
    def __init__(self, block, layers, input_size=112, fp16=0):
        super().__init__()
        self.fp16 = fp16
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        is_fp16 = self.fp16 > 0
        with torch.cuda.amp.autocast(is_fp16):
            x = self.conv(x)
        return x.float()


def _iresnet(arch, block, layers, pretrained, progress, **kwargs):
    return IResNet(block, layers, **kwargs)


def iresnet50(pretrained=False, progress=True, **kwargs):
    return _iresnet("iresnet50", None, [3, 4, 14, 3], pretrained, progress, **kwargs)


def iresnet120(pretrained=False, progress=True, **kwargs):
    return _iresnet("iresnet120", None, [3, 16, 37, 3], pretrained, progress, **kwargs)


def get_model(name, **kwargs):
    if name == "r50":
        return iresnet50(False, **kwargs)
    raise ValueError(name)
"""
NETWORK = """
import torch
from torch import nn

from .iresnet import get_model as arcface_get_model


class OneNetwork(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.net = nn.Conv2d(3, 8, 3)
        self.neta = arcface_get_model(cfg.arcface_model, input_size=cfg.input_size{extra})
        self.neta.requires_grad_(False)

    def forward(self, x):
        return self.net(x) + self.neta(x).mean()
"""
TRAIN = """
import torch

from backbones.network import OneNetwork


def main(cfg):
    net = OneNetwork(cfg).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    for img in []:
        loss = net(img).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main(None)
"""


def mode(tmp_path, extra):
    root = write_project(tmp_path / "p", {"backbones/__init__.py": "", "backbones/iresnet.py": IRESNET,
                                          "backbones/network.py": NETWORK.replace("{extra}", extra), "train.py": TRAIN})
    return Project(root).regime_for(root / "train.py").mode


def test_an_autocast_every_construction_switches_off_is_no_evidence(tmp_path):
    assert mode(tmp_path, "") == "fp32"


@pytest.mark.parametrize("extra", [", fp16=1", ", fp16=cfg.fp16"], ids=["fp16=1", "a value not written out"])
def test_near_miss_a_construction_may_switch_it_on(tmp_path, extra):
    assert mode(tmp_path, extra) == "fp16-mixed"
