"""AMP103 through the project's own masked-fill helper (bugs set 14, B14-2, allennlp 593dd8cf5: inside allennlp,
``util.replace_masked_values(antecedent_scores, mask, -1e20)`` with ``def replace_masked_values(tensor, mask,
replace_with): return tensor.masked_fill(~mask, replace_with)``): the value is written into the float16 scores as
by ``masked_fill`` itself. The helper is read from its definition (this file, or the project file it is imported
from). Near misses (silent): the helper called with -1e4 or on ``scores.float()``; a helper that fills with its own
constant; a helper that clamps the value first."""
import pytest
from cliutil import hazard_findings, write_project

UTIL = '''
import torch


def replace_masked_values(tensor: torch.Tensor, mask: torch.BoolTensor, replace_with: float) -> torch.Tensor:
    return tensor.masked_fill(~mask, replace_with)


def fill_with_own_constant(tensor, mask, offset):
    return tensor.masked_fill(~mask, -1e4) + offset


def clamped_fill(tensor, mask, replace_with):
    replace_with = max(replace_with, torch.finfo(tensor.dtype).min)
    return tensor.masked_fill(~mask, replace_with)
'''
SCORER = '''
import torch
from torch import nn

from mylib.nn import util


def local_fill(x, m, v):
    return torch.masked_fill(x, ~m, v)


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = nn.Linear(dim, 1)

    def forward(self, x, mask):
        scores = self.ff(x).squeeze(-1)
        scores = {call}
        return torch.log_softmax(scores.float(), dim=-1)
'''
TRAIN = '''
import torch

from mylib.models.scorer import Scorer


def main():
    model = Scorer(64).cuda()
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(10):
        x = torch.randn(8, 30, 64, device="cuda")
        mask = torch.rand(8, 30, device="cuda") > 0.2
        with torch.autocast("cuda", dtype=torch.float16):
            loss = -model(x, mask)[:, 0].mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, call):
    return hazard_findings(write_project(tmp_path / "p", {
        "mylib/__init__.py": "", "mylib/nn/__init__.py": "", "mylib/nn/util.py": UTIL, "mylib/models/__init__.py": "",
        "mylib/models/scorer.py": SCORER.replace("{call}", call), "train.py": TRAIN}))


@pytest.mark.parametrize("call", ["util.replace_masked_values(scores, mask, -1e20)",
                                  "util.replace_masked_values(scores, mask, replace_with=-1e20)",
                                  "local_fill(scores, mask, -1e9)"])
def test_a_project_fill_helper_writes_the_value_into_the_float16_tensor(tmp_path, call):
    assert findings(tmp_path, call) == [("mylib/models/scorer.py", "AMP103")]


@pytest.mark.parametrize("call", ["util.replace_masked_values(scores, mask, -1e4)",
                                  "util.replace_masked_values(scores.float(), mask, -1e20)",
                                  "util.fill_with_own_constant(scores, mask, 1e20)",
                                  "util.clamped_fill(scores, mask, -1e20)"])
def test_near_miss(tmp_path, call):
    assert findings(tmp_path, call) == []
