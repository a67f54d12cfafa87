"""The dtype model follows a value through the field of an output record another function or module
builds: ``out = self.head(x)`` whose ``forward`` returns ``HeadOutput(..., fft_softmax_preds=
torch.softmax(...))``, then ``loss(target, out.fft_softmax_preds)``. softmax is on CUDA autocast's
float32 list, so the loss's clip-then-log argument is float32 and its 1e-15 is representable
(granite-tsfm's TSPulse ``CrossEntropySoftmaxLoss``, unseen set 21 T21-4, judged under the library
policy as under fp16 autocast). Near misses: a float16 field (a Linear's output), another field, and
a pure-half model keep the finding."""
import textwrap

import pytest

from amplint.api import lint_source

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}

LOSS = """
import torch
import torch.nn as nn


class CrossEntropySoftmaxLoss(nn.Module):
    def __init__(self, epsilon=1e-15):
        super().__init__()
        self.epsilon = epsilon

    def forward(self, target, probs):
        probs = torch.clip(probs, self.epsilon, 1 - self.epsilon)
        return -torch.sum(target * torch.log(probs), dim=-1).mean()
"""

HEAD = """
from dataclasses import dataclass
from typing import NamedTuple, Optional

import torch
import torch.nn as nn


@dataclass
class HeadOutput:
    reconstruction: torch.Tensor
    fft_softmax_preds: Optional[torch.Tensor] = None


class HeadTuple(NamedTuple):
    reconstruction: torch.Tensor
    fft_softmax_preds: torch.Tensor


class Head(nn.Module):
    def __init__(self, d=16, k=8):
        super().__init__()
        self.proj = nn.Linear(d, d)
        self.fft_softmax_mapping = nn.Linear(d, k)

    def forward(self, hidden, return_dict=True):
{body}
"""

MODEL = """
import torch
import torch.nn as nn

from pkg.heads import Head, HeadOutput
from pkg.losses import CrossEntropySoftmaxLoss


class ModelForReconstruction(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = Head()
        self.mse = nn.MSELoss()
        self.ces_loss = CrossEntropySoftmaxLoss()

    def forward(self, past_values, target_probs):
        out = self.head(past_values)
        if isinstance(out, tuple):
            out = HeadOutput(*out)
        loss = self.mse(out.reconstruction, past_values)
        return loss + self.ces_loss(target_probs, out.{field})
"""

OWN_LOOP = """
import torch
from pkg.model import ModelForReconstruction


def finetune(loader):
    model = ModelForReconstruction()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x, p in loader:
        loss = model(x, p)
        loss.backward()
        opt.step()
        opt.zero_grad()
"""

AMP_TRAIN = """
import torch
from pkg.model import ModelForReconstruction


def main(loader):
    model = ModelForReconstruction().cuda(){half}
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, p in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x, p)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()


if __name__ == "__main__":
    main([])
"""

KEYWORD = """
fft_softmax_preds = torch.softmax(self.fft_softmax_mapping(hidden), dim=-1)
return HeadOutput(reconstruction=self.proj(hidden), fft_softmax_preds=fft_softmax_preds)
"""
POSITIONAL = """
return HeadTuple(self.proj(hidden), torch.softmax(self.fft_softmax_mapping(hidden), dim=-1))
"""
THROUGH_LOCAL = """
output = HeadOutput(self.proj(hidden), fft_softmax_preds=self.fft_softmax_mapping(hidden).softmax(dim=-1))
return output
"""
TUPLE_OR_RECORD = """
fft_softmax_preds = torch.zeros(1).to(hidden.device)
if hidden.shape[-1] > 1:
    fft_softmax_preds = torch.softmax(self.fft_softmax_mapping(hidden), dim=1)
if not return_dict:
    return tuple(v for v in [self.proj(hidden), fft_softmax_preds])
return HeadOutput(reconstruction=self.proj(hidden), fft_softmax_preds=fft_softmax_preds)
"""
HALF_FIELD = """
return HeadOutput(reconstruction=self.proj(hidden), fft_softmax_preds=self.fft_softmax_mapping(hidden))
"""


def amp102(body, field="fft_softmax_preds", train=None):
    files = {**PACKAGE, "pkg/heads.py": HEAD.format(body=textwrap.indent(body.strip("\n"), " " * 8)),
             "pkg/model.py": MODEL.format(field=field), "pkg/toolkit.py": OWN_LOOP}
    if train is not None:
        files["train.py"] = train
    findings = lint_source(LOSS, filename="pkg/losses.py", extra_files=files)
    assert not [f for f in findings if f.code.startswith("E9")]
    return [f.line for f in findings if f.code == "AMP102"]


CLIP_LINE = LOSS.splitlines().index("        probs = torch.clip(probs, self.epsilon, 1 - self.epsilon)") + 1
EPS_LINE = LOSS.splitlines().index("    def __init__(self, epsilon=1e-15):") + 1


@pytest.mark.parametrize("train", [None, AMP_TRAIN.format(half="")], ids=["library", "fp16-mixed"])
@pytest.mark.parametrize("body", [KEYWORD, POSITIONAL, THROUGH_LOCAL, TUPLE_OR_RECORD],
                         ids=["keyword", "positional", "through a local", "tuple or record"])
def test_softmax_output_carried_in_a_record_is_float32(body, train):
    assert amp102(body, train=train) == []


@pytest.mark.parametrize("name, body, field, train", [
    ("a Linear's output in the field (library)", HALF_FIELD, "fft_softmax_preds", None),
    ("a Linear's output in the field (fp16-mixed)", HALF_FIELD, "fft_softmax_preds", AMP_TRAIN.format(half="")),
    ("another field: the reconstruction", KEYWORD, "reconstruction", None),
    ("a pure-half model", KEYWORD, "fft_softmax_preds", AMP_TRAIN.format(half=".half()")),
])
def test_near_misses_stay_reported(name, body, field, train):
    assert amp102(body, field=field, train=train) in ([CLIP_LINE], [EPS_LINE]), name
