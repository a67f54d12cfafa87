"""AMP204 on a weighted mean normalised by its total weight after the float16 product (SparseInst's
instance branch, held-out bug M13-2, fixed upstream by normalising the weights first): sigmoid
masks over H·W pixels times the features, ``torch.bmm(iam_prob, feats)`` summed over 16,384 pixels,
divided afterwards by ``iam_prob.sum(-1).clamp(min=1e-6)[:, :, None]``. The normaliser is the sum of
a product operand over the contracted axis (or a mask's sum), seen through the guard, the
``[:, :, None]`` and the name it is bound to. Near misses: the weights normalised first (the
upstream fix), softmax weights (a bounded product), and a divisor that sums something else."""
import textwrap

import pytest

from amplint.api import lint_source


def model(body):
    return textwrap.dedent("""
    import torch
    from torch import nn


    class InstanceBranch(nn.Module):
        def __init__(self, dim=256, num_masks=100):
            super().__init__()
            self.iam_conv = nn.Conv2d(dim, num_masks, 3, padding=1)
            self.cls_score = nn.Linear(dim, 80)

        def forward(self, features, other):
            iam_prob = self.iam_conv(features).sigmoid()
            B, N = iam_prob.shape[:2]
            C = features.size(1)
            iam_prob = iam_prob.view(B, N, -1)
            feats = features.view(B, C, -1).permute(0, 2, 1)
    {body}
            return self.cls_score(inst)


    def train(loader):
        model = InstanceBranch().cuda()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        scaler = torch.amp.GradScaler("cuda")
        for x, other in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x, other).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
    """).replace("{body}", textwrap.indent(textwrap.dedent(body).strip("\n"), " " * 8))


def found(body):
    return [f.message for f in lint_source(model(body), filename="branch.py") if f.code == "AMP204"]


@pytest.mark.parametrize("name, body", [
    ("SparseInst: the normaliser through a clamp and [:, :, None]", """
        inst = torch.bmm(iam_prob, feats)
        normalizer = iam_prob.sum(-1).clamp(min=1e-6)
        inst = inst / normalizer[:, :, None]
    """),
    ("inline, guarded by an eps", """
        inst = torch.bmm(iam_prob, feats) / (iam_prob.sum(-1, keepdim=True) + 1e-6)
    """),
    ("@ and unsqueeze", """
        inst = (iam_prob @ feats) / torch.sum(iam_prob, dim=-1).unsqueeze(-1)
    """),
    ("a mask's sum through a clamp", """
        mask = (iam_prob > 0.5).half()
        inst = torch.einsum("bnp,bpc->bnc", mask, feats) / mask.sum(-1).clamp(min=1)[..., None]
    """),
])
def test_a_weighted_mean_normalised_after_the_product(name, body):
    [message] = found(body)
    assert "only then divided by" in message, name


@pytest.mark.parametrize("name, body", [
    ("near miss: the weights normalised first (the upstream fix)", """
        normalizer = iam_prob.sum(-1).clamp(min=1e-6)
        iam_prob = iam_prob / normalizer[:, :, None]
        inst = torch.bmm(iam_prob, feats)
    """),
    ("near miss: softmax weights", """
        attn = iam_prob.softmax(-1)
        inst = torch.bmm(attn, feats) / attn.sum(-1)[:, :, None]
    """),
    ("near miss: the divisor sums something else", """
        inst = torch.bmm(iam_prob, feats) / other.sum(-1)[:, :, None]
    """),
])
def test_near_misses(name, body):
    assert found(body) == [], name
