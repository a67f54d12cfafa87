"""A module-level class nothing in the project builds or names runs in none of its trainings: its findings
are judged as library code (docs/precision.md), not by its file's precision (triage T8-4: EVA's
eva_model.Attention, whose only construction is commented out, judged under a DeepSpeed fp16 training)."""
import json
import textwrap

import pytest

from cliutil import run, write_project

TRAIN = """
import deepspeed
import torch
from model import Net


def train(loader):
    model = Net()
    ds_config = {"train_batch_size": 8, "fp16": {"enabled": True}}
    engine, _, _, _ = deepspeed.initialize(model=model, model_parameters=model.parameters(), config=ds_config)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(engine(x), y)
        engine.backward(loss)
        engine.step()
"""

MODEL = """
from torch import nn
from layers import convert


class Net(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        return self.head(x)
"""

# a cosine attention no file builds, in a module the model imports (the default eps of F.normalize is 0 in
# float16 under a half model)
LAYERS = """
import torch
import torch.nn.functional as F
from torch import nn


{decorator}class CosineAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        q, k, v = F.linear(x, self.qkv.weight, self.qkv.bias).chunk(3, dim=-1)
        attn = torch.bmm(F.normalize(x, dim=-1), k.transpose(-1, -2))
        return torch.bmm(attn.softmax(-1), v)


def convert(module):
    if isinstance(module, (nn.MultiheadAttention, CosineAttention)):
        module.half()
{extra}"""


def _findings(tmp_path, name, *argv, decorator="", extra="", **files):
    layers = LAYERS.replace("{decorator}", decorator).replace("{extra}", extra)
    root = write_project(tmp_path / name, {k: textwrap.dedent(v) for k, v in
                                           {"train.py": TRAIN, "model.py": MODEL, "layers.py": layers, **files}.items()})
    r = run(["check", "--no-cache", "--output-format", "json", *argv, "."], root)
    return [(f["filename"].replace("\\", "/").rsplit("/", 1)[-1], f["code"])
            for f in json.loads(r.out) if f["code"] != "AMP501"]


def test_a_class_nothing_builds_is_not_judged_by_the_trainings_precision(tmp_path):
    # (an isinstance test names the class but builds none)
    assert _findings(tmp_path, "nowhere") == []


@pytest.mark.parametrize("files, extra, decorator", [
    ({}, "\n\ndef build(dim):\n    return CosineAttention(dim)\n", ""),  # built in its file
    ({"model.py": "from layers import CosineAttention\n" + MODEL}, "", ""),  # imported by another file
    ({"model.py": MODEL.replace("from layers import convert", "")}, "", ""),  # a file nothing imports (a registry's)
    ({"zoo.py": "import layers\n\ndef make(name, dim):\n    return getattr(layers, name)(dim)\n"}, "", ""),  # a lookup by name
    ({"conf/attn.yaml": "_target_: layers.CosineAttention\ndim: 8\n"}, "", ""),  # a config builds it
    ({}, "", "@register('cosine')\n"),  # a registry builds it
])
def test_near_misses_a_class_the_project_builds_keeps_the_precision(tmp_path, files, extra, decorator):
    found = _findings(tmp_path, "built", decorator=decorator, extra=extra, **files)
    assert ("layers.py", "AMP102") in found


def test_a_configured_precision_judges_every_class(tmp_path):
    assert ("layers.py", "AMP102") in _findings(tmp_path, "forced", "--precision", "fp16-master")


def test_near_miss_a_packages_class_is_its_users_api(tmp_path):
    # fairseq's KmeansAttention: no file of fairseq builds it; its users do, and train like fairseq's models
    layers = LAYERS.replace("{decorator}", "").replace("{extra}", "")
    root = write_project(tmp_path / "pkg", {k: textwrap.dedent(v) for k, v in {
        "train.py": TRAIN, "model.py": MODEL.replace("from layers", "from pkg.layers"), "pkg/__init__.py": "",
        "pkg/layers.py": layers}.items()})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert "AMP102" in [f["code"] for f in json.loads(r.out)]


DISCRIMINATOR = """
import torch
from torch import nn


class NLayerDiscriminator(nn.Module):
    def __init__(self, input_nc=3, ndf=64, use_actnorm=False):
        super().__init__()
        norm_layer = nn.BatchNorm2d if not use_actnorm else ActNorm
        self.main = nn.Sequential(nn.Conv2d(input_nc, ndf, 4, 2, 1), norm_layer(ndf), nn.Conv2d(ndf, 1, 4, 1, 1))

    def forward(self, x):
        return self.main(x)


class ActNorm(nn.Module):
    def __init__(self, num_features):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, num_features, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, num_features, 1, 1))

    def initialize(self, input):
        with torch.no_grad():
            flatten = input.permute(1, 0, 2, 3).contiguous().view(input.shape[1], -1)
            std = flatten.std(1).view(1, -1, 1, 1)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, input):
        self.initialize(input)
        return self.scale * (input + self.loc)
"""

GAN_TRAIN = """
import torch
from discriminator import NLayerDiscriminator

disc = NLayerDiscriminator({args}).cuda()
opt = torch.optim.Adam(disc.parameters())
scaler = torch.amp.GradScaler("cuda")
for x in loader:
    with torch.amp.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.softplus(-disc(x)).mean()
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


@pytest.mark.parametrize("args, reported", [
    ("", False), ("3, 64", False), ("use_actnorm=False", False),  # every build leaves the option off
    ("**cfg", False),  # keywords from elsewhere, but nothing in the project names the option
    ("use_actnorm=True", True), ("3, 64, True", True),  # a build that may turn it on
    ("**dict(use_actnorm=True)", True), ("**vars(args)", "--use_actnorm"),  # keywords that may hold it
])
def test_a_class_built_only_under_an_option_every_build_leaves_off(tmp_path, args, reported):
    # taming-transformers' NLayerDiscriminator (LlamaGen, unseen set 10 T10-5): ActNorm only when use_actnorm
    train = textwrap.dedent(GAN_TRAIN.replace("{args}", args))
    if isinstance(reported, str):
        # the command line may turn it on: ``parser.add_argument("--use_actnorm", action="store_true")``
        train = f"import argparse\np = argparse.ArgumentParser()\np.add_argument('{reported}', action='store_true')\n" \
                f"args = p.parse_args()\n{train}"
    root = write_project(tmp_path / "p", {"discriminator.py": textwrap.dedent(DISCRIMINATOR), "train.py": train})
    out = run(["check", "--select", "AMP102", "--output-format", "concise", "."], root).out
    assert ("discriminator.py" in out) == bool(reported), out


# VideoMAEv2 (unseen set 13): CosAttention only behind ``cos_attn``, handed down from the model class
# through each block, the model built by registered functions passing ``**kwargs`` on
ZOO = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class CosAttention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return (F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)).softmax(-1) @ v


class Attention(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return (q @ k.transpose(-2, -1) * 0.125).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, dim, cos_attn=False):
        super().__init__()
        if cos_attn:
            self.attn = CosAttention(dim)
        else:
            self.attn = Attention(dim)

    def forward(self, x):
        return x + self.attn(x)


class VisionTransformer(nn.Module):
    def __init__(self, dim=64, depth=2, cos_attn={default}):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, cos_attn=cos_attn) for _ in range(depth)])

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return x.mean()


def vit_small(pretrained=False, **kwargs):
    return VisionTransformer(dim=64, **kwargs)
"""

ZOO_TRAIN = """
import torch
from models import zoo

model = getattr(zoo, "vit_small")({kwargs}).cuda().half()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x.cuda().half())
    opt.zero_grad()
    loss.backward()
    opt.step()
"""


@pytest.mark.parametrize("default, kwargs, config, reported", [
    ("False", "", None, False),  # the option handed down from a falsy default, set nowhere
    ("False", "cos_attn=False", None, False),
    ("False", "cos_attn=True", None, True),  # near miss: the training turns it on
    ("True", "", None, True),  # near miss: handed down from a default that turns it on
    ("False", "**cfg", "model:\n  cos_attn: true\n", True),  # near miss: a configuration file names it
])
def test_a_class_built_only_under_an_option_handed_down_and_set_nowhere(tmp_path, default, kwargs, config, reported):
    files = {"models/__init__.py": "from .zoo import *\n", "models/zoo.py": textwrap.dedent(ZOO.replace("{default}", default)),
             "train.py": textwrap.dedent(ZOO_TRAIN.replace("{kwargs}", kwargs))}
    if config:
        files["configs/vit.yaml"] = config
    root = write_project(tmp_path / "p", files)
    out = run(["check", "--select", "AMP102", "--output-format", "concise", "."], root).out
    assert ("zoo.py" in out) == reported, out
