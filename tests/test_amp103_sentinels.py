"""AMP103 on ``x[...] = -1e9``: in float16 the indexed write gives -inf (it does not raise), which
is what a beam search means by a dead beam when the scores are only added to finite log-probs and
top-k'd (XLM's generate_beam ``beam_scores[:, 1:] = -1e9``; triage T8-7). Near misses: the scores
softmaxed, subtracted from, or returned afterwards (-inf can become NaN there)."""
import pytest

from amplint.api import lint_source

MODEL = """
import torch
from torch import nn


class Decoder(nn.Module):
    def __init__(self, n_words, dim):
        super().__init__()
        self.proj = nn.Linear(dim, n_words)

    def generate_beam(self, src_enc, beam_size, max_len=50):
        bs = src_enc.size(0)
        beam_scores = src_enc.new(bs, beam_size).fill_(0)
        beam_scores[:, 1:] = -1e9
        beam_scores = beam_scores.view(-1)
        out = []
        for _ in range(max_len):
            scores = torch.log_softmax(self.proj(src_enc).float(), dim=-1)
            _scores = scores + beam_scores[:, None].expand_as(scores)
            best, idx = torch.topk(_scores.view(bs, -1), 2 * beam_size, dim=1)
            {extra}
            beam_scores = beam_scores.new(best.view(-1).tolist())
            out.append(idx)
        return out


model = Decoder(32000, 512).cuda().half()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in loader:
    loss = torch.nn.functional.cross_entropy(model.proj(x.half()).float(), y)
    loss.backward()
    opt.step()
"""


def amp103(extra="pass"):
    return [f.line for f in lint_source(MODEL.replace("{extra}", extra), filename="model.py") if f.code == "AMP103"]


def test_dead_beam_scores_only_added_and_top_k():
    assert amp103() == []


@pytest.mark.parametrize("extra", ["probs = torch.softmax(beam_scores, dim=-1)", "gap = scores - beam_scores[:, None]",
                                   "out.append(beam_scores)"])
def test_near_miss_the_scores_read_otherwise(extra):
    assert amp103(extra) == [14]
