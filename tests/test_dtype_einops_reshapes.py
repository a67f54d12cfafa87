"""``einops.rearrange`` / ``einops.repeat`` return a view (or copy) of their input in its dtype: a
-1e15 fill into the rearranged scores of a half model overflows (naturalspeech2's ForwardSumLoss).
Near misses: the same scores from ``torch.cdist`` under fp16 autocast are float32 (cdist is on
autocast's float32 list), rearranged or not; a fill within float16's range is fine."""
import textwrap

import pytest

from amplint.api import lint_source

MODEL = """
import torch
from torch import nn
import torch.nn.functional as F
from einops import rearrange, repeat


class MonotonicLoss(nn.Module):
    def forward(self, scores, lengths):
        scores = {reshape}
        steps = torch.arange(scores.size(-1), device=scores.device)
        scores.masked_fill_(steps.view(1, 1, -1) > lengths.view(1, -1, 1), {fill})
        return scores.log_softmax(dim=-1).mean()


class Net(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.align_loss = MonotonicLoss()

    def forward(self, a, b, lengths):
        return self.align_loss(torch.cdist(self.q(a), self.k(b)).unsqueeze(1), lengths)
"""
HALF = """
import torch
from model import Net
model = Net().cuda().half()
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
for a, b, lengths in loader:
    loss = model(a, b, lengths)
    loss.backward()
    opt.step()
"""
MIXED = """
import torch
from model import Net
model = Net().cuda()
opt = torch.optim.SGD(model.parameters(), lr=1e-2)
scaler = torch.amp.GradScaler("cuda")
for a, b, lengths in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(a, b, lengths)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""
REARRANGE = 'rearrange(scores, "b 1 q k -> q b k")'


def amp103(train, reshape=REARRANGE, fill="-1e15"):
    src = textwrap.dedent(MODEL).replace("{reshape}", reshape).replace("{fill}", fill)
    return [f.line for f in lint_source(src, filename="model.py", extra_files={"train.py": train})
            if f.code == "AMP103"]


@pytest.mark.parametrize("reshape", [REARRANGE, 'repeat(scores[:, 0], "b q k -> q (b r) k", r=2)'])
def test_einops_keeps_the_half_dtype(reshape):
    assert amp103(HALF, reshape) == [12]


def test_near_miss_cdist_is_float32_under_autocast():
    assert amp103(MIXED) == []


def test_near_miss_a_fill_within_range():
    assert amp103(HALF, fill="-6e4") == []
