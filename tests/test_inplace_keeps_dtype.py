"""An augmented assignment on a tensor is an in-place op (``scores -= x`` is ``scores.sub_(x)``),
which keeps its destination's dtype: float16 logits minus a float32 log-probability correction stay
float16 (Transformers4Rec 18533b7e: sampled-softmax scores under fp16 autocast, then filled with
-1e37; real-bug set 13, M13-1). Near misses: a float32 accumulator stays float32 whatever is added to
it, and a Python number rebound by ``+=`` takes the tensor's dtype."""
from training_util import lines

HEAD = """
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim, n_items):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim, n_items))

    def forward(self, inputs, targets, neg):
        w = self.weight.t()[neg]
{body}
        hits = targets[:, None] == neg[None, :]
        scores[hits] = -1e37
        return scores


def train(model, opt, loader):
    scaler = torch.amp.GradScaler("cuda")
    for x, t, neg in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, t, neg).logsumexp(-1).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def found(body):
    return lines("AMP103", HEAD.replace("{body}", body))


def test_in_place_correction_keeps_float16():
    assert found("        scores = inputs @ w.t()\n        scores -= torch.log(neg.float() + 1e-16)[None, :]") == [16]


def test_near_miss_a_float32_accumulator_stays_float32():
    body = ("        scores = torch.zeros(inputs.shape[0], neg.shape[0], device=inputs.device, dtype=torch.float32)\n"
            "        scores += inputs @ w.t()")
    assert found(body) == []


def test_near_miss_a_number_rebound_takes_the_tensors_dtype():
    assert found("        scores = 0\n        scores += inputs @ w.t()") == [16]
