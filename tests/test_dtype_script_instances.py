"""Ground truth from the data loader handed to a head's loss helpers by a training script (EasyCV's
FCOS / YOLOX heads, triage set 12, T12-1): ``model = Head().cuda()`` at a script's module level, then
``model.l1_target(gt_bboxes[0], 8)`` inside ``for x, gt_bboxes in loader:``. The project index
follows the instance (a device move or a mode switch returns the module built; a script's
module-level names hold instances as a function's locals do), so the helper's callers are seen, and
they pass the loader's float32 boxes: ``torch.log(gt[:, 2] / stride + 1e-8)`` and ``areas[inside == 0]
= INF`` are float32. Near misses: the helper handed the head's float16 output, and a script whose
``model`` is rebound to something else (no one instance)."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
import torch.nn as nn

INF = 1e8


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.reg = nn.Conv2d(8, 4, 1)

    def forward(self, feats):
        return self.reg(feats)

    def loss(self, bbox_pred, gt_bboxes):
        points = torch.zeros(16, 2, dtype=bbox_pred.dtype, device=bbox_pred.device)
        labels = self._target(gt_bboxes, points)
        return bbox_pred.mean() * labels.float().mean()

    def _target(self, gt_bboxes, points):
        areas = (gt_bboxes[:, 2] - gt_bboxes[:, 0]) * (gt_bboxes[:, 3] - gt_bboxes[:, 1])
        areas = areas[None].repeat(points.size(0), 1)
        inside = (points[:, None, 0] > gt_bboxes[None, :, 0]) & (points[:, None, 1] > gt_bboxes[None, :, 1])
        areas[inside == 0] = INF
        return areas.min(dim=1)[1]

    def l1_target(self, gt, stride, eps=1e-8):
        return torch.log(gt[:, 2] / stride + eps)
"""

TRAIN = """
import torch
from torch.utils.data import DataLoader, TensorDataset

from det.head import Head

loader = DataLoader(TensorDataset(torch.randn(64, 8, 16, 16), torch.rand(64, 5, 4) * 100), batch_size=8)
model = Head().cuda()
{rebind}
opt = torch.optim.SGD(model.parameters(), lr=0.1)
scaler = torch.amp.GradScaler("cuda")
for x, gt_bboxes in loader:
    x, gt_bboxes = x.cuda(), gt_bboxes.cuda()
    opt.zero_grad()
    with torch.autocast("cuda", dtype=torch.float16):
        pred = model(x)
        loss = model.loss(pred, {boxes})
        loss = loss + model.l1_target({boxes}, 8).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def codes(boxes="gt_bboxes[0]", rebind=""):
    files = {"det/__init__.py": "", "train.py": textwrap.dedent(TRAIN).format(boxes=boxes, rebind=rebind)}
    return sorted(f.code for f in lint_source(textwrap.dedent(HEAD), filename="det/head.py", extra_files=files,
                                              select=("AMP102", "AMP103")))


@pytest.mark.parametrize("name, kwargs, expected", [
    ("the loader's boxes through the script's model", {}, []),
    ("near miss: the head's float16 output", {"boxes": "pred.flatten(1)"}, ["AMP102", "AMP103"]),
    ("near miss: model rebound to another object", {"rebind": "model = torch.compile(model)"}, ["AMP102", "AMP103"]),
])
def test_script_instances(name, kwargs, expected):
    assert codes(**kwargs) == expected, name
