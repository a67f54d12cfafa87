"""A wrapper module that runs a module handed to it (allennlp's ``TimeDistributed(nn.Linear(d, 1))``: ``self._module =
module`` in ``__init__``, ``forward`` reshapes, calls ``self._module(reshaped)`` and reshapes back; bugs set 14, B14-4,
allennlp 593dd8cf5 coref.py:862) holds a layer: under fp16 autocast its output is float16 like the layer's, and a
-1e20 fill of it overflows. It was taken for a module of plain values (ultralytics' ``TaskAlignedAssigner``, whose
output is not an activation) because ``self._module = module`` looks like one. Near misses (silent): the wrapper's
forward ends in ``.float()``; a module of plain values whose attributes are not called keeps making no activation."""
import pytest
from cliutil import hazard_findings, write_project

WRAPPER = '''
import torch


class TimeDistributed(torch.nn.Module):
    def __init__(self, module, scale=1.0):
        super().__init__()
        self._module = module
        self.scale = scale

    def forward(self, inputs):
        reshaped = inputs.contiguous().view(-1, *inputs.size()[2:])
        out = self._module(reshaped){cast}
        return out.view(*inputs.size()[:2], *out.size()[1:])


class Gather(torch.nn.Module):
    def __init__(self, topk=3):
        super().__init__()
        self.topk = topk

    def forward(self, scores):
        return scores.topk(self.topk, dim=-1).values
'''
SCORER = '''
import torch
from torch import nn

from mylib.wrappers import TimeDistributed, Gather


class Scorer(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.ff = TimeDistributed(nn.Linear(dim, 1))
        self.gather = Gather()

    def forward(self, x, mask, picks):
        scores = {scores}
        scores = scores.masked_fill(~mask, -1e20)
        return torch.log_softmax(scores.float(), dim=-1)
'''
TRAIN = '''
import torch

from mylib.scorer import Scorer


def main():
    model = Scorer(64).cuda()
    opt = torch.optim.Adam(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(10):
        x = torch.randn(8, 30, 64, device="cuda")
        mask = torch.rand(8, 30, device="cuda") > 0.2
        picks = torch.rand(8, 30, 5, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = -model(x, mask, picks)[:, 0].mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
'''


def findings(tmp_path, scores, cast=""):
    return hazard_findings(write_project(tmp_path / "p", {
        "mylib/__init__.py": "", "mylib/wrappers.py": WRAPPER.replace("{cast}", cast),
        "mylib/scorer.py": SCORER.replace("{scores}", scores), "train.py": TRAIN}))


def test_a_wrapper_running_the_module_it_holds_gives_that_modules_float16(tmp_path):
    assert findings(tmp_path, "self.ff(x).squeeze(-1)") == [("mylib/scorer.py", "AMP103")]


def test_near_miss_the_wrapper_returns_float32(tmp_path):
    assert findings(tmp_path, "self.ff(x).squeeze(-1)", cast=".float()") == []


def test_near_miss_a_module_of_plain_values_makes_no_activation(tmp_path):
    # (the loader's float32 picks, gathered: Gather's attributes are numbers it never calls)
    assert findings(tmp_path, "self.gather(picks)[..., 0]") == []
