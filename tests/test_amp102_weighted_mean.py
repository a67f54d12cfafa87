"""AMP102 on a weighted mean with a subnormal guard, Σ s·v / (Σ s + 1e-6), in pure float16 training
(graphium's GatedGCN aggregate, PR #426 "1e-6 was causing numerical issues in float16"; held-out bug
B14-1): the numerator sums a product one of whose factors the denominator sums, so it is not bounded
by the denominator (it was taken to be, sharing its terms), and where the gates sum to 0 the backward
multiplies the gradient by 1 / 1e-6. Near misses stay silent: ``y / (y + 1e-6)`` and
``w / (w.abs().amax(-1, keepdim=True) + 1e-6)`` (bounded by 1), the same weighted mean under no_grad
(no backward), and a sum of the same product over itself."""
import pytest

from amplint.api import lint_source

MODEL = """
import torch
from torch import nn
{imports}

class GatedAggregate(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gate = nn.Linear(dim, dim)
        self.value = nn.Linear(dim, dim)

    def forward(self, x, index, n):
        s = torch.sigmoid(self.gate(x))
        v = self.value(x)
        {body}


model = GatedAggregate(64).cuda().half()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, index in loader:
    loss = model(x.cuda().half(), index.cuda(), 100).float().pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
"""
INDEX_ADD = """num = torch.zeros(n, x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, index, s * v)
        den = torch.zeros(n, x.shape[1], dtype=x.dtype, device=x.device).index_add_(0, index, s)
        return num / (den + 1e-6)"""
SUM = """num = (s * v).sum(0)
        den = s.sum(0)
        return num / (den + 1e-6)"""
SCATTER = """num = scatter(s * v, index, 0, None, n, reduce="sum")
        den = scatter(s, index, 0, None, n, reduce="sum")
        return num / (den + 1e-6)"""
# graphium's own spelling (the real row): the product and the weights through local names first
ALIASED = """sx = s * v
        num = scatter(sx, index, 0, None, n, reduce="sum")
        w = s
        return num / (scatter(w, index, 0, None, n, reduce="sum") + 1e-6)"""


def amp102(body, imports=""):
    source = MODEL.replace("{body}", body).replace("{imports}", imports)
    return [f.line for f in lint_source(source, filename="model.py") if f.code == "AMP102"]


@pytest.mark.parametrize("body,imports", [(INDEX_ADD, ""), (SUM, ""),
                                          (SCATTER, "from torch_geometric.utils import scatter"),
                                          (ALIASED, "from torch_scatter import scatter")])
def test_weighted_mean_with_a_subnormal_guard(body, imports):
    assert amp102(body, imports) == [15 + body.count("\n")]  # the return line


@pytest.mark.parametrize("body", [
    "return s / (s + 1e-6)",
    "return v / (v.abs().amax(-1, keepdim=True) + 1e-6)",
    "num = (s * v).sum(0)\n        return num / ((s * v).sum(0) + 1e-6)",
])
def test_near_miss_bounded_by_the_denominator(body):
    assert amp102(body) == []


def test_near_miss_no_backward():
    body = "with torch.no_grad():\n            " + SUM.replace("\n        ", "\n            ")
    assert amp102(body) == []
