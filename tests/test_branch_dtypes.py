"""A name bound on both sides of an ``if`` / ``else`` is float16 after it when one side makes it
float16 (mmpretrain's asymmetric loss: ``if use_sigmoid: p = pred.sigmoid()`` / ``else: p =
softmax(pred)``, default use_sigmoid=True, then ``log(pt.clamp(min=1e-8))``), and an assumed float16
precision reports at least what the library policy reports."""
import pytest

from training_util import lines

ASYM = """
import torch
from torch import nn


def asym_loss(pred, target, clip=0.05, use_sigmoid=True, eps=1e-8):
    BRANCHES
    target = target.type_as(pred)
    pt = (1 - pred_sigmoid + clip).clamp(max=1) * (1 - target) + pred_sigmoid * target
    return -torch.log(pt.clamp(min=eps)).mean()


class AsymLoss(nn.Module):
    def __init__(self, eps=1e-8):
        super().__init__()
        self.eps = eps

    def forward(self, pred, target):
        return asym_loss(pred, target, eps=self.eps)
"""
BOTH = """if use_sigmoid:
        pred_sigmoid = pred.sigmoid()
    else:
        pred_sigmoid = nn.functional.softmax(pred, dim=-1)"""
ONLY_SIGMOID = "pred_sigmoid = pred.sigmoid()"
# near miss: the branch upcasts exactly when the value is float16, and nothing binds it otherwise
UPCAST_ONLY = """pred_sigmoid = nn.functional.softmax(pred, dim=-1)
    if pred_sigmoid.dtype == torch.float16:
        pred_sigmoid = pred_sigmoid.float()"""


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
@pytest.mark.parametrize("branches, reported", [(BOTH, True), (ONLY_SIGMOID, True), (UPCAST_ONLY, False)])
def test_a_float16_branch_is_float16_after_the_if(precision, branches, reported):
    source = ASYM.replace("BRANCHES", branches)
    found = lines("AMP102", source, filename="mlib/losses/asym.py", extra_files={"setup.py": "", "mlib/__init__.py": ""},
                  precision=precision)
    assert bool(found) == reported, found
