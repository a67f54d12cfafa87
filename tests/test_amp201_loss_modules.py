"""OpenPCDet's CenterHead under --use_amp (triage set 14, M14-1, the real shapes of
/tmp/triage14/repro_1b and repro_1c): the head's ``sigmoid`` method returns ``torch.clamp(x.sigmoid(),
min=1e-4, max=1 - 1e-4)`` and stores it in the predictions dict, ``pred_dict["hm"] =
self.sigmoid(pred_dict["hm"])``; the focal loss lives in another module, as a function
``neg_loss_cornernet`` that a loss module registered with ``self.add_module("hm_loss_func",
FocalLossCenterNet())`` (in a ``build_losses`` method ``__init__`` calls) runs through a
function-valued attribute, ``self.neg_loss = neg_loss_cornernet``; or the head calls the function
directly. 1 - 1e-4 rounds to 1.0 in float16, so ``torch.log(1 - pred)`` is -inf at a saturated peak
(times a zero weight: NaN). AMP201 on that log, followed through the dict entry, the helper's
return, the loss module's forward and its function attribute.

Near misses: an upper bound that survives float16, the sigmoid stored under another key than the
one passed to the loss, and a second loss module of the same module whose ``self.neg_loss`` is
another function, handed float32 probabilities (the first module's calls are not its calls)."""
import textwrap

import pytest

from amplint.api import lint_source

LOSSES = """
import torch
import torch.nn as nn


def neg_loss_cornernet(pred, gt, mask=None):
    pos = gt.eq(1).float()
    neg = gt.lt(1).float()
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * torch.pow(1 - gt, 4) * neg
    return -(pos_loss.sum() + neg_loss.sum()) / pos.sum().clamp(min=1)


def neg_loss_sparse(pred, gt):
    pos = gt.eq(1).float()
    neg = gt.lt(1).float()
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * torch.pow(1 - gt, 4) * neg
    return -(pos_loss.sum() + neg_loss.sum()) / pos.sum().clamp(min=1)


class FocalLossCenterNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.neg_loss = neg_loss_cornernet

    def forward(self, out, target, mask=None):
        return self.neg_loss(out, target, mask=mask)


class FocalLossSparse(nn.Module):
    def __init__(self):
        super().__init__()
        self.neg_loss = neg_loss_sparse

    def forward(self, out, target):
        return self.neg_loss(out, target)
"""

HEAD = """
import torch
import torch.nn as nn

from det import losses
from det.losses import neg_loss_cornernet


class CenterHead(nn.Module):
    def __init__(self, c=16, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(c, classes, 3, padding=1)
        self.aux = nn.Conv2d(c, classes, 3, padding=1)
        self.build_losses()

    def build_losses(self):
        self.add_module("hm_loss_func", losses.FocalLossCenterNet())
        self.add_module("aux_loss_func", losses.FocalLossSparse())

    def sigmoid(self, x):
        y = torch.clamp(x.sigmoid(), min=1e-4, max={upper})
        return y

    def get_loss(self, pred_dict, gt):
{get_loss}
        aux = torch.sigmoid(pred_dict["aux"].float())
        return loss + self.aux_loss_func(aux, gt)

    def forward(self, feats, gt):
        pred_dict = {"hm": self.conv(feats), "aux": self.aux(feats)}
        return self.get_loss(pred_dict, gt)
"""

# the loss module's forward runs the function through its attribute (OpenPCDet, repro_1b)
THROUGH_THE_MODULE = """
pred_dict["hm"] = self.sigmoid(pred_dict["hm"])
loss = self.hm_loss_func(pred_dict["hm"], gt)
"""
# the head calls the loss function of the other module itself (repro_1c)
DIRECTLY = """
hm = self.sigmoid(pred_dict["hm"])
loss = neg_loss_cornernet(hm, gt)
"""

TRAIN = """
import torch

from det.head import CenterHead


def main():
    model = CenterHead().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(100):
        feats = torch.randn(2, 16, 32, 32, device="cuda")
        gt = torch.rand(2, 3, 32, 32, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(feats, gt)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""


def findings(get_loss, upper="1 - 1e-4"):
    head = textwrap.dedent(HEAD).replace("{upper}", upper).replace(
        "{get_loss}", textwrap.indent(textwrap.dedent(get_loss).strip("\n"), " " * 8))
    files = {"det/__init__.py": "", "det/head.py": head, "train.py": TRAIN}
    return [(f.code, f.line) for f in lint_source(textwrap.dedent(LOSSES), filename="det/losses.py",
                                                  extra_files=files, select=("AMP201",))]


NEG_LOG = 10  # torch.log(1 - pred) in neg_loss_cornernet


@pytest.mark.parametrize("name, get_loss, upper, expected", [
    ("the clamped sigmoid stored in the dict, the loss module's function attribute", THROUGH_THE_MODULE,
     "1 - 1e-4", [("AMP201", NEG_LOG)]),
    ("the loss function of the other module called directly (its module never run)", DIRECTLY,
     "1 - 1e-4", [("AMP201", NEG_LOG)]),
    ("near miss: an upper bound that survives float16", THROUGH_THE_MODULE, "1 - 1e-3", []),
    ("near miss: the sigmoid stored under another key", THROUGH_THE_MODULE.replace(
        'pred_dict["hm"] = self', 'pred_dict["hm_prob"] = self'), "1 - 1e-4", []),
])
def test_log_of_a_clamped_sigmoid_through_a_loss_module(name, get_loss, upper, expected):
    assert findings(get_loss, upper) == expected, name
