"""AMP204 and the cross-correlation of standardised embeddings (unseen set 15, T15-2): Barlow Twins
batch-normalises both embeddings (``nn.BatchNorm1d(d, affine=False)``, or ``(z - z.mean(0)) /
z.std(0)``) and contracts them over the batch, ``einsum("bi,bj->ij", z1, z2) / n``. Each column then
has zero mean and unit variance, so by Cauchy–Schwarz every entry of the sum is at most the batch
size: no float16 overflow for any batch a GPU holds. Near misses that keep their finding: the
same contraction of embeddings that are not normalised (the rule page's covariance), of centred
embeddings that are not scaled (VICReg's covariance), and of standardised embeddings contracted over
the features instead of the batch."""
import textwrap

import pytest

from amplint.api import lint_source


def loss(body):
    return textwrap.dedent("""
    import torch
    from torch import nn


    class Barlow(nn.Module):
        def __init__(self, d=16):
            super().__init__()
            self.proj = nn.Linear(32, d)
            self.bn = nn.BatchNorm1d(d, affine=False)

        def forward(self, x1, x2):
            z1 = self.proj(x1)
            z2 = self.proj(x2)
            n, d = z1.size()
    {body}
            return (c - torch.eye(d, device=c.device)).pow(2).sum()


    def train(loader):
        model = Barlow().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        scaler = torch.amp.GradScaler("cuda")
        for x1, x2 in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x1, x2)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    """).replace("{body}", textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


def found(body):
    return [f.code for f in lint_source(loss(body), filename="barlow.py") if f.code == "AMP204"]


@pytest.mark.parametrize("name, body", [
    ("a local BatchNorm1d without affine, einsum over the batch (solo-learn)", """
        bn = torch.nn.BatchNorm1d(d, affine=False).to(z1.device)
        z1 = bn(z1)
        z2 = bn(z2)
        c = torch.einsum("bi, bj -> ij", z1, z2) / n
    """),
    ("the module's BatchNorm1d, z1.T @ z2 (the Barlow Twins reference)", """
        c = self.bn(z1).T @ self.bn(z2)
        c = c / n
    """),
    ("standardised by hand (lightly)", """
        z1_norm = (z1 - z1.mean(0)) / z1.std(0)
        z2_norm = (z2 - z2.mean(dim=0)) / torch.sqrt(z2.var(dim=0) + 1e-5)
        c = torch.mm(z1_norm.t(), z2_norm) / n
    """),
    ("centred, then divided by its own spread", """
        z1 = z1 - z1.mean(0)
        z2 = z2 - z2.mean(0)
        z1 = z1 / (z1.std(0) + 1e-6)
        z2 = z2 / (z2.std(0) + 1e-6)
        c = z1.T @ z2 / n
    """),
])
def test_a_cross_correlation_of_standardised_columns_is_bounded_by_the_batch(name, body):
    assert found(body) == [], name


@pytest.mark.parametrize("name, body", [
    ("near miss: embeddings not normalised", """
        c = z1.T @ z2 / n
    """),
    ("near miss: centred but not scaled (a covariance)", """
        z1 = z1 - z1.mean(0)
        z2 = z2 - z2.mean(0)
        c = z1.T @ z2 / (n - 1)
    """),
    ("near miss: one side standardised only", """
        c = torch.einsum("bi, bj -> ij", self.bn(z1), z2) / n
    """),
    ("near miss: standardised per column, contracted over the features", """
        z1 = (z1 - z1.mean(0)) / z1.std(0)
        z2 = (z2 - z2.mean(0)) / z2.std(0)
        c = torch.einsum("ib, jb -> ij", z1, z2) / n
    """),
])
def test_near_misses_keep_their_finding(name, body):
    assert found(body) == ["AMP204"], name
