"""The calls written with a method's name that may run it (``callers.passed_by_name``) leave out
``self.<name>(...)`` in classes unrelated to the method's own: such a call runs that class's method
(EasyCV: ``forward_train`` is called in 16 files, nearly all as ``self.forward_train(img, ...)`` in a
model's own ``forward``, so the head's callers were past ``MAX_FILES`` and went unread). Here the
head's ``forward_train(feats, boxes)`` writes 1e8 into ``boxes``; the one call that may run it,
``self.head.forward_train(feats, boxes.float())`` in a detector whose head is built from a config,
passes float32 boxes: silent, however many unrelated models call their own ``forward_train``. Near
miss: a subclass of the head calling ``self.forward_train`` with a float16 layer output (kin of the
head: kept) still gets AMP103."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Conv2d(8, 4, 1)

    def forward_train(self, feats, boxes):
        areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        areas[areas <= 0] = 1e8
        return self.cls(feats).mean() + areas.mean()
"""

DETECTOR = """
import torch
from torch import nn

from pkg.registry import build_head


class Detector(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.backbone = nn.Conv2d(3, 8, 3)
        self.head = build_head(cfg)

    def forward_train(self, img, boxes):
        return self.head.forward_train(self.backbone(img), boxes.float())

    def forward(self, img, boxes):
        return self.forward_train(img, boxes)
"""

REGISTRY = """
HEADS = {}


def build_head(cfg):
    return HEADS[cfg["type"]]()
"""

OTHER_MODEL = """
import torch
from torch import nn


class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def forward_train(self, x, y):
        return (self.net(x) - y).pow(2).mean()

    def forward(self, x, y):
        return self.forward_train(x, y)
"""

SUBCLASS = """
import torch
from torch import nn

from pkg.head import Head


class ConvHead(Head):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, feats, boxes):
        return self.forward_train(feats, self.proj(boxes))
"""

TRAIN = """
import torch

from pkg.detector import Detector


def main(loader):
    model = Detector({"type": "Head"}).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cuda")
    for img, boxes in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(img, boxes)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""


def amp103(others, subclass=False):
    files = {"pkg/__init__.py": "", "pkg/detector.py": DETECTOR, "pkg/registry.py": REGISTRY, "train.py": TRAIN,
             **{f"pkg/model{i}.py": OTHER_MODEL.replace("{i}", str(i)) for i in range(others)},
             **({"pkg/conv_head.py": SUBCLASS} if subclass else {})}
    return [f.line for f in lint_source(textwrap.dedent(HEAD), filename="pkg/head.py", extra_files=files)
            if f.code == "AMP103"]


@pytest.mark.parametrize("others", [1, 12])
def test_calls_of_another_classs_own_method_are_not_callers(others):
    assert amp103(others) == []


def test_near_miss_a_subclass_calling_it_on_self_is_kept():
    assert amp103(12, subclass=True) == [13]
