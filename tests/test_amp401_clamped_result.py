"""AMP401 stays silent when the logits a learnable temperature scales are clamped to float16's
range before anything reads them (mmdet's ATSS-VLFusion head, from GLIP: ``logits / exp(log_scale)``
then ``torch.clamp(logits, max=50000)`` and ``min=-50000``): an inf becomes the bound."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
from torch import nn

MAX_CLAMP_VALUE = 50000


class ContrastiveHead(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.log_scale = nn.Parameter(torch.zeros(1))

    def forward(self, visual, tokens):
        logits = torch.matmul(self.proj(visual), tokens.transpose(-1, -2)) / self.log_scale.exp()
        {after}
        return logits


def train(model, loader):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for v, t, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = nn.functional.binary_cross_entropy_with_logits(model(v, t), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def amp401(after):
    return [f.line for f in lint_source(HEAD.format(after=after), filename="head.py") if f.code == "AMP401"]


@pytest.mark.parametrize("after", [
    "logits = torch.clamp(logits, max=MAX_CLAMP_VALUE)",
    "logits = logits.clamp(min=-MAX_CLAMP_VALUE, max=MAX_CLAMP_VALUE)",
    "logits = torch.clamp(logits, -50000.0, 50000.0)",
])
def test_logits_clamped_right_after_the_scaling(after):
    assert amp401(after) == []


@pytest.mark.parametrize("name, after", [
    ("no clamp", "pass"),
    ("a bound beyond float16's range", "logits = torch.clamp(logits, max=1e5)"),
    ("read before the clamp", "print(logits.max())\n        logits = torch.clamp(logits, max=MAX_CLAMP_VALUE)"),
    ("another value clamped", "tokens = torch.clamp(tokens, max=MAX_CLAMP_VALUE)"),
])
def test_near_misses_stay_reported(name, after):
    assert amp401(after) == [15], name
