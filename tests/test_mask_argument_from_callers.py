"""A mask-named parameter (``attn_mask``) is data, not float16, unless a caller passes it a float16
value: Open-Sora-Plan's Latte attention casts the mask to ``q.dtype`` (float16 under autocast) and
hands it to ``self.make_attn_bias(attn_mask)``, whose ``torch.where(attn_mask == 0, -1e8, attn_mask)``
is -inf in float16 (bug set 8, B42, fixed upstream by using 1e-4 for a half mask). Near misses: the
caller passes the float32 mask as it came; the helper has no caller in sight; a half model whose
mask argument is float16 only by the regime's guess (fairseq tacotron2's padding mask)."""
import pytest

from amplint.api import lint_source

MODEL = """
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, dim * 3)

    def forward(self, x, attn_mask):
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        attn_mask = attn_mask.repeat(1, self.heads, 1, 1){cast}
        attn = q @ k.transpose(-2, -1)
        attn_bias = {call}
        attn = (attn + attn_bias).softmax(dim=-1)
        return (attn @ v).transpose(1, 2).reshape(b, n, c)

    def make_attn_bias(self, attn_mask):
        return torch.where(attn_mask == 0, -1e8, attn_mask)


model = Attention(64, 4).cuda(){half}
opt = torch.optim.AdamW(model.parameters())
scaler = torch.amp.GradScaler("cuda")
for x, mask in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x, mask).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp103(cast=".to(q.dtype)", call="self.make_attn_bias(attn_mask)", half=""):
    source = MODEL.replace("{cast}", cast).replace("{call}", call).replace("{half}", half)
    return [f.line for f in lint_source(source, filename="train.py")
            if f.code == "AMP103"]


def test_a_mask_its_only_caller_casts_to_float16():
    assert amp103() == [22]


@pytest.mark.parametrize("cast, call", [("", "self.make_attn_bias(attn_mask)"), (".to(q.dtype)", "0")])
def test_near_miss_float32_mask_or_no_caller(cast, call):
    assert amp103(cast, call) == []


def test_near_miss_a_mask_only_the_half_regime_calls_float16():
    """fairseq's tacotron2 ``_get_init_attn_c(enc_out, encoder_out["encoder_padding_mask"])`` in a
    half model: the mask argument of ``forward`` is taken float16 by the regime alone, not computed so."""
    assert amp103(cast="", call="self.make_attn_bias(x)", half=".half()") == []
