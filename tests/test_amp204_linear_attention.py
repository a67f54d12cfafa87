"""Linear attention normalised by a slice of its own product (efficientvit's LiteMLA, held-out bug
B31): ``v`` padded with a row of ones, ``vk = v @ kᵀ`` and ``out = vk @ q`` contract over the H*W
tokens in float16, and only then ``out[..., :-1] / (out[..., -1:] + eps)`` normalises by the last
row (the sum over tokens). The method runs with autocast off, on the float16 qkv its caller computed
under autocast; a ``.float()`` of ``out`` in between comes too late. The multi-scale qkv
arrives through ``torch.cat`` of a list the forward appends to. Near misses: the operands cast to
float32 before the products (timm's and upstream's fix); a division by another tensor than the
product's own slice."""
import textwrap

import pytest

from amplint.api import lint_source

SRC = """
import torch
import torch.nn.functional as F
from torch import nn


class LinearAttention(nn.Module):
    def __init__(self, channels, dim=8, eps=1.0e-15):
        super().__init__()
        self.dim = dim
        self.eps = eps
        self.qkv = nn.Conv2d(channels, 3 * dim, 1)
        self.aggreg = nn.ModuleList([nn.Conv2d(3 * dim, 3 * dim, 5, padding=2)])
        self.proj = nn.Conv2d(2 * dim, channels, 1)

    @torch.autocast("cuda", enabled=False)
    def linear_att(self, qkv):
        B, _, H, W = list(qkv.size())
        qkv = torch.reshape(qkv, (B, -1, 3 * self.dim, H * W))
        q, k, v = qkv[:, :, 0:self.dim], qkv[:, :, self.dim:2 * self.dim], qkv[:, :, 2 * self.dim:]
        {cast}
        v = F.pad(v, (0, 0, 0, 1), mode="constant", value=1)
        vk = torch.matmul(v, k.transpose(-1, -2))
        out = torch.matmul(vk, F.relu(q))
        if out.dtype in [torch.float16, torch.bfloat16]:
            out = out.float()
        out = out[:, :, :-1] / ({divisor} + self.eps)
        return torch.reshape(out, (B, -1, H, W))

    def forward(self, x):
        qkv = self.qkv(x)
        scales = [qkv]
        for op in self.aggreg:
            scales.append(op(qkv))
        return self.proj(self.linear_att(torch.cat(scales, dim=1)))


def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.mse_loss(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""


def amp204(cast="pass", divisor="out[:, :, -1:]"):
    src = textwrap.dedent(SRC).replace("{cast}", cast).replace("{divisor}", divisor)
    return [(f.line, f.message) for f in lint_source(src, filename="attn.py") if f.code == "AMP204"]


def test_normalised_by_its_own_row_of_sums():
    found = amp204()
    assert [line for line, _ in found] == [27]
    assert "comes too late" in found[0][1]


@pytest.mark.parametrize("name, cast, divisor", [
    ("operands cast first", "q, k, v = q.float(), k.float(), v.float()", "out[:, :, -1:]"),
    ("another normaliser", "pass", "x_norm[:, :, -1:]"),
])
def test_near_misses(name, cast, divisor):
    assert amp204(cast, divisor.replace("x_norm", "torch.ones_like(out)")) == [], name
