"""Ground truth from the data pipeline reaching a detection head through a runner and mmdet-style
helpers (EasyCV's FCOS head, triage set 12, T12-1): a runner calls ``model.train_step(data_batch)``
for each batch of its loader, ``train_step`` calls ``self(**data, mode="train")``, ``forward`` hands
``gt_bboxes`` on through ``forward_train`` and ``self.head.loss(*loss_inputs)`` after ``loss_inputs =
outs + (gt_bboxes, img_metas)``, and the head maps its per-image helper over the lists with
``multi_apply(self._get_target_single, gt_bboxes_list, ...)``. Each step passes the loader's float32
boxes: ``areas[inside == 0] = INF`` (1e8) is float32. Near misses: a ``**`` dict whose dtype nothing
says (the regime's guess stays), a callback mapped over the head's float16 outputs, and a starred
tuple holding the prediction where the boxes go."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
import torch.nn as nn

from det.utils import multi_apply

INF = 1e8


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.reg = nn.Conv2d(8, 4, 1)

    def forward(self, feats):
        return (self.reg(feats),)

    def loss(self, bbox_pred, gt_bboxes, img_metas):
        points = torch.zeros(16, 2, dtype=bbox_pred.dtype, device=bbox_pred.device)
        labels = self.get_targets(points, {targets})
        return bbox_pred.mean() * torch.cat(labels).float().mean()

    def get_targets(self, points, gt_bboxes_list):
        labels_list, = multi_apply(self._get_target_single, gt_bboxes_list, points=points)
        return labels_list

    def _get_target_single(self, gt_bboxes, points):
        areas = (gt_bboxes[:, 2] - gt_bboxes[:, 0]) * (gt_bboxes[:, 3] - gt_bboxes[:, 1])
        areas = areas[None].repeat(points.size(0), 1)
        inside = (points[:, None, 0] > gt_bboxes[None, :, 0]) & (points[:, None, 1] > gt_bboxes[None, :, 1])
        areas[inside == 0] = INF
        return (areas.min(dim=1)[1],)
"""

UTILS = """
from functools import partial


def multi_apply(func, *args, **kwargs):
    pfunc = partial(func, **kwargs) if kwargs else func
    map_results = map(pfunc, *args)
    return tuple(map(list, zip(*map_results)))
"""

DETECTOR = """
import torch.nn as nn

from det.head import Head


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Conv2d(8, 8, 3, padding=1)
        self.head = Head()

    def forward(self, img, gt_bboxes=None, img_metas=None, mode="train"):
        if mode == "train":
            return self.forward_train(img, gt_bboxes, img_metas)
        return self.head(self.backbone(img))

    def forward_train(self, img, gt_bboxes, img_metas):
        outs = self.head(self.backbone(img))
        loss_inputs = outs + ({boxes}, img_metas)
        return dict(loss=self.head.loss(*loss_inputs))

    def train_step(self, data, optimizer):
        losses = self(**data, mode="train")
        return dict(loss=losses["loss"])
"""

RUNNER = """
import torch


class Runner:
    def __init__(self, model, optimizer, fp16=False):
        self.model = model
        self.optimizer = optimizer
        self.fp16 = fp16
        self.scaler = torch.cuda.amp.GradScaler()

    def run(self, data_loader):
        for data_batch in data_loader:
            with torch.cuda.amp.autocast(enabled=self.fp16):
                outputs = self.model.train_step({batch}, self.optimizer)
            self.optimizer.zero_grad()
            self.scaler.scale(outputs["loss"]).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""

TRAIN = """
import argparse

import torch

from det.detector import Detector
from det.runner import Runner

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")
args = parser.parse_args()


def collate(samples):
    return dict(img=torch.stack([s[0] for s in samples]), gt_bboxes=[s[1] for s in samples], img_metas=None)


dataset = [(torch.randn(8, 16, 16), torch.rand(5, 4) * 100) for _ in range(64)]
loader = torch.utils.data.DataLoader(dataset, batch_size=8, collate_fn=collate)
model = Detector().cuda()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
Runner(model, optimizer, fp16=args.fp16).run(loader)
"""


def codes(batch="data_batch", boxes="gt_bboxes", targets="gt_bboxes"):
    files = {"det/__init__.py": "", "det/utils.py": UTILS, "train.py": TRAIN,
             "det/runner.py": textwrap.dedent(RUNNER).format(batch=batch),
             "det/detector.py": textwrap.dedent(DETECTOR).format(boxes=boxes)}
    return sorted(f.code for f in lint_source(textwrap.dedent(HEAD).format(targets=targets), filename="det/head.py",
                                              extra_files=files, select=("AMP103",)))


@pytest.mark.parametrize("name, kwargs, expected", [
    ("the loader's boxes through train_step(**data), *loss_inputs and multi_apply", {}, []),
    ("near miss: a ** dict of unknown dtype (the regime's guess)", {"batch": "self.prepare(data_batch)"}, ["AMP103"]),
    ("near miss: multi_apply over the head's float16 outputs", {"targets": "[bbox_pred.flatten(1)]"}, ["AMP103"]),
    ("near miss: the starred tuple holds the prediction where the boxes go", {"boxes": "outs[0]"}, ["AMP103"]),
])
def test_runner_callbacks(name, kwargs, expected):
    assert codes(**kwargs) == expected, name
