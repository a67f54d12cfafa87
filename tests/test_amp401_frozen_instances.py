"""AMP401 stays silent on a class every instance of which the project freezes (BEiT v2's CLIP
teacher, triage T7-14: ``self.teacher_model, _ = clip.load(...)`` then ``requires_grad = False`` on
its parameters; only ``encode_image`` runs): nothing trains its ``logit_scale``. The instances are
followed through functions that return them (``build_model`` -> ``load`` -> the holder). Near
misses: a teacher not frozen; a second instance that trains; a freeze that sets ``True``; a class
no file builds."""
import textwrap

import pytest

from amplint.api import lint_source

CLIP = """
import numpy as np
import torch
import torch.nn as nn


class CLIP(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.visual = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def encode_image(self, x):
        return self.visual(x)

    def forward(self, image, text):
        img = self.encode_image(image)
        logit_scale = self.logit_scale.exp()
        return logit_scale * img @ text.t()


def build_model(dim):
    model = CLIP(dim)
    return model.eval()


def load(dim, device="cpu"):
    model = build_model(dim).to(device)
    return model, None
"""
DISTILLER = """
import torch
import torch.nn as nn
import torch.nn.functional as F

import clip_model


class Distiller(nn.Module):
    def __init__(self, dim=32):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.teacher, _ = {build}
        {freeze}
        self.teacher.eval()

    def forward(self, x):
        with torch.no_grad():
            target = self.teacher.encode_image(x)
        return 1 - F.cosine_similarity(self.encoder(x), target, dim=-1).mean()
"""
FREEZE_LOOP = "for p in self.teacher.parameters():\n            p.requires_grad = {flag}"
TRAIN = """
import torch
from distiller import Distiller
{extra_import}
model = Distiller().cuda()
{extra}
opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
scaler = torch.amp.GradScaler("cuda")
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp401(freeze=FREEZE_LOOP.replace("{flag}", "False"), build="clip_model.load(32)", extra="", extra_import=""):
    distiller = textwrap.dedent(DISTILLER).replace("{build}", build).replace("{freeze}", freeze)
    train = TRAIN.replace("{extra}", extra).replace("{extra_import}", extra_import)
    return [f.line for f in lint_source(textwrap.dedent(CLIP), filename="clip_model.py",
                                        extra_files={"distiller.py": distiller, "train.py": train})
            if f.code == "AMP401"]


@pytest.mark.parametrize("freeze", [FREEZE_LOOP.replace("{flag}", "False"), "self.teacher.requires_grad_(False)",
                                    "for p in self.teacher.parameters():\n            p.requires_grad_(False)"])
def test_a_teacher_frozen_wherever_it_is_built(freeze):
    assert amp401(freeze) == []


def test_near_miss_the_teacher_is_not_frozen():
    assert amp401("pass") == [18]


def test_near_miss_the_freeze_sets_true():
    assert amp401(FREEZE_LOOP.replace("{flag}", "True")) == [18]


def test_near_miss_another_instance_trains():
    """A second CLIP built and trained in the training script: its scale grows."""
    assert amp401(extra_import="import clip_model",
                  extra="student = clip_model.CLIP(32).cuda()\nopt2 = torch.optim.AdamW(student.parameters())") == [18]


def test_near_miss_a_class_no_file_builds():
    """A library's model: its users decide whether it trains."""
    assert amp401(build="None, None") == [18]
