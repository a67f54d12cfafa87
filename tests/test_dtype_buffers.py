"""A buffer registered by its class (``self.register_buffer("bias", torch.tril(torch.ones(n, n)))``)
has the dtype it was made with: float32 unless the model is half (``.half()`` casts buffers;
autocast does not). A float16 activation times it is float32 by type promotion, so a -1e10 written
into the product fits (microsoft/LoRA's GPT-2 attention ``w = w * b - 1e10 * (1 - b)`` then
``w.masked_fill(mask, -1e10)``; triage T8-5). Near misses: a half model; a float16 buffer."""
import pytest

from amplint.api import lint_source

MODEL = """
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, n_ctx, n_embd):
        super().__init__()
        self.register_buffer("bias", torch.tril(torch.ones(n_ctx, n_ctx{dtype})).view(1, 1, n_ctx, n_ctx))
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)

    def forward(self, x, mask):
        q, k, v = self.c_attn(x).split(x.size(-1), dim=-1)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        nd, ns = w.size(-2), w.size(-1)
        b = self.bias[:, :, ns - nd:ns, :ns]
        w = w * b - 1e10 * (1 - b)
        w = w.masked_fill(mask, -1.0e10)
        return torch.matmul(w.softmax(dim=-1), v)


model = Attention(1024, 768).cuda(){half}
opt = torch.optim.AdamW(model.parameters(), eps=1e-4)
scaler = torch.amp.GradScaler("cuda")
for x, mask, y in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = torch.nn.functional.mse_loss(model(x, mask), y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp103(dtype="", half=""):
    return [f.line for f in lint_source(MODEL.replace("{dtype}", dtype).replace("{half}", half), filename="train.py")
            if f.code == "AMP103"]


def test_a_half_activation_times_a_float32_buffer_is_float32():
    assert amp103() == []


@pytest.mark.parametrize("dtype, half", [("", ".half()"), (", dtype=torch.float16", "")])
def test_near_miss_a_half_buffer(dtype, half):
    assert amp103(dtype, half) == [20]
