"""AMP206 sparse-matmul-under-autocast: a sparse COO matrix times a dense one under CUDA autocast
raises ``"addmm_sparse_cuda" not implemented for 'Half'`` (RecBole's graph recommenders under its
``enable_amp`` option). Near misses stay silent: CPU autocast, ``autocast(enabled=False)``, a dense
``torch.mm``, a sparse matrix of unknown layout passed to ``torch.mm``; and the rule is off unless named."""
import textwrap

import pytest

from amplint.api import lint_source

SELECT = ("ALL", "AMP206")  # off by default

SCRIPT = """
import torch
from torch import nn


class Propagation(nn.Module):
    def __init__(self, adj, n, dim=64):
        super().__init__()
        self.adj = {adj}
        self.emb = nn.Embedding(n, dim)

    def forward(self):
        x = self.emb.weight
        return {product}


def main(adj, loader):
    model = Propagation(adj, 300).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for users, items in loader:
        with torch.autocast({autocast}):
            e = model()
            loss = -torch.nn.functional.logsigmoid((e[users] * e[items]).sum(-1)).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def amp206(product="torch.sparse.mm(self.adj, x)", adj="adj", autocast='"cuda"'):
    source = SCRIPT.replace("{product}", product).replace("{adj}", adj).replace("{autocast}", autocast)
    return [f.line for f in lint_source(textwrap.dedent(source), filename="train.py", select=SELECT) if f.code == "AMP206"]


@pytest.mark.parametrize("product,adj", [
    ("torch.sparse.mm(self.adj, x)", "adj"),
    ("torch.spmm(self.adj, x)", "adj"),
    ("torch.mm(self.adj, x)", "adj.to_sparse()"),
    ("torch.mm(self.adj, x)", "torch.sparse_coo_tensor(adj[0], adj[1], (n, n))"),
])
def test_sparse_dense_product_under_cuda_autocast(product, adj):
    assert amp206(product, adj) == [14]


def test_bfloat16_autocast_too():
    assert amp206(autocast='"cuda", dtype=torch.bfloat16') == [14]


def test_near_miss_autocast_off():
    assert amp206(autocast='"cuda", enabled=False') == []


def test_near_miss_cpu_autocast():
    source = """
    import torch


    def propagate(adj, x):
        with torch.autocast("cpu"):
            return torch.sparse.mm(adj, x)
    """
    assert [f for f in lint_source(textwrap.dedent(source), filename="graph.py", select=SELECT) if f.code == "AMP206"] == []


@pytest.mark.parametrize("product,adj", [
    ("torch.mm(self.adj, x)", "adj"),  # the layout of what is passed in is not known here
    ("torch.mm(self.adj, x)", "adj.to_dense()"),
])
def test_near_miss_a_product_not_known_sparse(product, adj):
    assert amp206(product, adj) == []


def test_off_unless_named():
    source = SCRIPT.replace("{product}", "torch.sparse.mm(self.adj, x)").replace("{adj}", "adj").replace(
        "{autocast}", '"cuda"')
    assert [f for f in lint_source(textwrap.dedent(source), filename="train.py") if f.code == "AMP206"] == []
