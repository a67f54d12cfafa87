"""A clamp(min=eps) whose value feeds F.binary_cross_entropy (and otherwise only a power / product):
BCE clamps its own log at -100, so an input that the float16 clamp lets through as 0 gives a loss of
100, not inf (mmdet's FreeAnchor negative bag loss). Near misses: the clamped value also divides, and a
log of it written out."""
import textwrap

import pytest

from amplint.api import lint_source

SRC = """
import torch
import torch.nn.functional as F


def negative_bag_loss(cls_prob: torch.Tensor, box_prob: torch.Tensor, gamma: float = 2.0):
    prob = cls_prob * (1 - box_prob)
    prob = prob.clamp(min=1e-12, max=1 - 1e-12)
    {line}
"""


@pytest.mark.parametrize("name, line, expected", [
    ("feeds BCE", "return prob ** gamma * F.binary_cross_entropy(prob, torch.zeros_like(prob), reduction='none')", []),
    ("near miss: also divides", "return F.binary_cross_entropy(prob, torch.zeros_like(prob)) / prob", [8]),
    ("near miss: a log written out", "return -(prob ** gamma) * torch.log(prob)", [8]),
])
def test_clamp_before_bce(name, line, expected):
    src = textwrap.dedent(SRC.format(line=line))
    found = [f.line for f in lint_source(src, filename="loss.py", precision="fp16") if f.code == "AMP102"]
    assert found == expected, name
