"""A clamp meant to keep a float16 sigmoid off 1.0, and the log of 1 - p, in different functions
(OpenPCDet's CenterHead, triage set 14, M14-1; /tmp/triage14/repro_1's one-module shape): the
head's ``sigmoid`` helper returns ``torch.clamp(x.sigmoid(), min=1e-4, max=1 - 1e-4)``, and a focal
loss function of the same module, which only the head calls, computes ``torch.log(1 - pred)`` on
what the head passes it. 1 - 1e-4 rounds to 1.0 in float16, so the clamp
does not keep 1 - p above 0: AMP201 on the log, followed through the helper's return and the loss's
callers (no fix offered: the sigmoid lies in another function). Near misses: an upper bound that
survives float16 (1 - 1e-3), the logits cast to float32 before the sigmoid, and a loss that one
caller, here or in another module, hands a value that is no probability. A call in another module
passing on an argument of a function nothing calls is no path a value takes."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
import torch.nn as nn


def neg_loss_cornernet(pred, gt):
    pos = gt.eq(1).float()
    neg = gt.lt(1).float()
    neg_w = torch.pow(1 - gt, 4)
    pos_loss = torch.log(pred) * torch.pow(1 - pred, 2) * pos
    neg_loss = torch.log(1 - pred) * torch.pow(pred, 2) * neg_w * neg
    return -(pos_loss.sum() + neg_loss.sum()) / pos.sum().clamp(min=1)


class CenterHead(nn.Module):
    def __init__(self, c=16, classes=3):
        super().__init__()
        self.conv = nn.Conv2d(c, classes, 3, padding=1)

    def sigmoid(self, x):
        y = torch.clamp(x.sigmoid(), min=1e-4, max={upper})
        return y

    def forward(self, feats, gt):
        hm = self.sigmoid(self.conv(feats){cast})
        loss = neg_loss_cornernet(hm, gt)
        {other}
        return loss
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


OTHER = """
import torch

from det.head import neg_loss_cornernet


def probe(x, gt):
    return neg_loss_cornernet({arg}, gt)
"""


def findings(upper="1 - 1e-4", cast="", other="pass", elsewhere=None):
    files = {"det/__init__.py": "", "train.py": TRAIN,
             **({"det/other.py": OTHER.format(arg=elsewhere)} if elsewhere else {})}
    head = textwrap.dedent(HEAD).format(upper=upper, cast=cast, other=other)
    return [(f.code, f.line, f.fix is not None) for f in lint_source(head, filename="det/head.py",
                                                                     extra_files=files, select=("AMP201",))]


@pytest.mark.parametrize("name, kwargs, expected", [
    ("the clamp in the head's helper, log(1 - p) in the loss", {}, [("AMP201", 11, False)]),
    ("near miss: an upper bound that survives float16", {"upper": "1 - 1e-3"}, []),
    ("near miss: the logits cast to float32", {"cast": ".float()"}, []),
    ("near miss: another caller passes no probability", {"other": "loss = loss + neg_loss_cornernet(feats, gt)"}, []),
    # (its ``probe`` is called by nothing: no value reaches the loss that way)
    ("another module hands the loss its own argument", {"elsewhere": "x"}, [("AMP201", 11, False)]),
    ("near miss: another module passes no probability", {"elsewhere": "torch.zeros_like(gt)"}, []),
])
def test_log_of_a_clamped_sigmoid_across_functions(name, kwargs, expected):
    assert findings(**kwargs) == expected, name
