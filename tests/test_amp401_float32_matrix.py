"""AMP401 stays silent when the exponentiated logit scale lives only in a dimensioned float32
tensor: ``logit_scale_mat = torch.ones((n, n))`` filled by masks with the scale, then
``logit_scale_mat * (image_features @ text_features.T)``. A float32 matrix promotes the float16
product, so the scaled logits are float32 and cannot overflow float16 (LaViLa's pseudo-narration
loss, unseen set 21 T21-2a). A scale multiplied straight into the float16 product (a 0-dim float32
tensor does not promote it), or a matrix that is itself float16, keeps the finding."""
import textwrap

import pytest

from amplint.api import lint_source

LOSS = """
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class PseudoLoss(nn.Module):
    def __init__(self, scale_init=0.08):
        super().__init__()
        self.logit_scale_pseudo = nn.Parameter(torch.ones([]) * np.log(1 / scale_init))

    def forward(self, image_features, text_features, indicators, logit_scale):
        logit_scale_pseudo = self.logit_scale_pseudo.exp()
        num = indicators.shape[0]
        mask = indicators.repeat(num, 1) + indicators.repeat(num, 1).T
{body}
        labels = torch.arange(num, device=logits.device)
        return F.cross_entropy(logits, labels)


def main(loader):
    model = nn.Linear(8, 8).cuda()
    criterion = PseudoLoss().cuda()
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(criterion.parameters()), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, ind in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = criterion(model(x), model(x), ind, torch.tensor(100.0).cuda())
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""

MATRIX = """
logit_scale_mat = torch.ones((num, num), device=image_features.device)
logit_scale_mat[mask == 0] = logit_scale_pseudo
"""


def amp401(body):
    src = LOSS.format(body=textwrap.indent(body.strip("\n"), " " * 8))
    findings = lint_source(src, filename="loss.py")
    assert not [f for f in findings if f.code.startswith("E9")]
    return [f.line for f in findings if f.code == "AMP401"]


@pytest.mark.parametrize("body", [
    MATRIX + "logits = logit_scale_mat * (image_features @ text_features.T)",
    # LaViLa: the scale also enters the matrix through the geometric mean with another scale
    MATRIX + """
logit_scale_mat[mask == 1] = torch.sqrt(logit_scale_pseudo * logit_scale)
logit_scale_mat[mask == 2] = logit_scale
logits = logit_scale_mat * (image_features @ text_features.T)
    """,
    """
logit_scale_mat = torch.zeros((num, num), dtype=torch.float32, device=mask.device)
logit_scale_mat[mask == 0] = logit_scale_pseudo
logits = (image_features @ text_features.T) * logit_scale_mat
    """,
])
def test_scale_held_only_in_a_float32_matrix(body):
    assert amp401(body) == []


@pytest.mark.parametrize("name, body", [
    ("scale straight into the float16 product",
     "logits = logit_scale_pseudo * (image_features @ text_features.T)"),
    ("the matrix is float16: made in the features' dtype", """
logit_scale_mat = torch.ones((num, num), dtype=image_features.dtype, device=image_features.device)
logit_scale_mat[mask == 0] = logit_scale_pseudo
logits = logit_scale_mat * (image_features @ text_features.T)
    """),
    ("the matrix is cast to half before it scales", MATRIX + """
logit_scale_mat = logit_scale_mat.half()
logits = logit_scale_mat * (image_features @ text_features.T)
    """),
    ("the scale also multiplies the product directly", MATRIX + """
logits = logit_scale_mat * (image_features @ text_features.T) + logit_scale_pseudo * mask.half()
    """),
])
def test_near_misses_stay_reported(name, body):
    assert amp401(body) == [14], name
