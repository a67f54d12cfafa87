"""Ground truth handed through a module with no layers (ultralytics' OBB loss: target boxes gathered
by ``TaskAlignedAssigner``, an ``nn.Module`` holding only hyper-parameters, then passed to the loss's
own ``calculate_angle_loss``):
- the output of a project module with no layers, parameters or buffers is no activation: when its
  ``forward`` does not say what it returns, it is not taken as the autocast dtype;
- a public method of a class a training entry point reaches, called only by its class, with no call
  passing float16, is not float16 by the regime's guess either (as a private helper is not).
Near misses: a module with a layer, a method another file calls by name, a caller passing a layer's
output, and the same code judged as a library under any float16 use."""
import textwrap

import pytest

from amplint.api import lint_source

ASSIGN = """
import torch
from torch import nn


class Assigner(nn.Module):
    def __init__(self, topk=13, eps=1e-9):
        super().__init__()
        self.topk = topk
        self.eps = eps if eps is not None else 1e-9
        {extra}

    @torch.no_grad()
    def forward(self, pd_scores, gt_bboxes):
        if gt_bboxes.shape[1] == 0:
            return torch.zeros_like(pd_scores), torch.zeros_like(gt_bboxes)
        return self._forward(pd_scores, gt_bboxes)

    def _forward(self, pd_scores, gt_bboxes):
        idx = pd_scores.argmax(-1)
        return pd_scores, gt_bboxes.view(-1, gt_bboxes.shape[-1])[idx]
"""

LOSS = """
import torch

from assign import Assigner


class DetectionLoss:
    def __init__(self, model):
        self.assigner = Assigner(topk=10)

    def __call__(self, preds, batch):
        return self.loss(preds, batch)


class OBBLoss(DetectionLoss):
    def __init__(self, model):
        super().__init__(model)
        self.assigner = Assigner(topk=13)

    def loss(self, preds, batch):
        pred_scores, pred_bboxes = preds
        _, target_bboxes = self.assigner(pred_scores.detach().sigmoid(), batch["bboxes"].view(-1, 5))
        return self.angle_loss(pred_bboxes, {passed})

    def angle_loss(self, pred_bboxes, target_bboxes):
        w_gt = target_bboxes[..., 2]
        h_gt = target_bboxes[..., 3]
        log_ar = torch.log((w_gt + 1e-9) / (h_gt + 1e-9))
        return (torch.exp(-(log_ar ** 2)) * (pred_bboxes[..., 4] - target_bboxes[..., 4]).sin() ** 2).mean()
"""

TRAIN = """
import torch
from torch import nn

from loss import OBBLoss


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.cls = nn.Linear(16, 4)
        self.box = nn.Linear(16, 5)
        self.criterion = OBBLoss(self)

    def forward(self, x):
        return self.cls(x), self.box(x)

    def loss(self, batch):
        return self.criterion(self.forward(batch["img"]), batch)
{more}


model = Head().cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
scaler = torch.amp.GradScaler("cuda")
for batch in loader:
    with torch.amp.autocast("cuda"):
        loss = model.loss(batch)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def codes(extra="", passed="target_bboxes", more="", precision="auto"):
    files = {"assign.py": textwrap.dedent(ASSIGN).format(extra=extra),
             "train.py": textwrap.dedent(TRAIN).format(more=more)}
    src = textwrap.dedent(LOSS).format(passed=passed)
    return [f.code for f in lint_source(src, filename="loss.py", extra_files=files, precision=precision,
                                        select=("AMP102",))]


@pytest.mark.parametrize("name, kwargs, expected", [
    ("ground truth gathered by a module with no layers", {}, []),
    ("near miss: the module holds a layer", {"extra": "self.proj = nn.Linear(5, 5)"}, ["AMP102"]),
    ("near miss: the module holds a buffer", {"extra": "self.register_buffer('grid', torch.zeros(5))"}, ["AMP102"]),
    ("near miss: a caller passes a float16 product", {"passed": "torch.matmul(target_bboxes, target_bboxes.new_ones(5, 5))"},
     ["AMP102"]),
    ("near miss: another file calls the method by name",
     {"more": "    def angle(self, p, t):\n        return self.criterion.angle_loss(p, t)"}, ["AMP102"]),
])
def test_layerless_module_outputs(name, kwargs, expected):
    assert codes(**kwargs) == expected, name


def test_near_miss_library_code_keeps_the_any_float16_use():
    # no training program: the loss is library code, whose public methods its users call in float16
    files = {"assign.py": textwrap.dedent(ASSIGN).format(extra="")}
    src = textwrap.dedent(LOSS).format(passed="target_bboxes")
    found = [f for f in lint_source(src, filename="loss.py", extra_files=files, select=("AMP102",))]
    assert [f.code for f in found] == ["AMP102"] and "any float16 use" in found[0].message
