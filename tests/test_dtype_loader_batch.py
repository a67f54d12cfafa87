"""A Lightning step hook's batch is what the data loader gives: input data, which autocast does not cast
(NeMo's audio enhancement model, T9-7): ``training_step(self, batch, ...)`` hands
``batch["input_signal"]`` to ``self(input_signal)``, whose ``input_signal / (norm_scale + self.eps)``
with eps=1e-8 is float32, under the library policy's autocast and under 16-mixed alike. Near miss: the
same normalisation applied to a layer's output (an activation, float16 under autocast) is reported."""
import textwrap

import pytest

from amplint.api import lint_source

MODEL = """
import pytorch_lightning as pl
import torch
from torch import nn


class EnhancementModel(pl.LightningModule):
    def __init__(self, eps: float = 1e-8):
        super().__init__()
        self.eps = eps
        self.net = nn.Conv1d(1, 1, 5, padding=2)

    def forward(self, input_signal):
        {pre}
        norm_scale = torch.amax(input_signal.abs(), dim=(-1, -2), keepdim=True)
        input_signal = input_signal / (norm_scale + self.eps)
        return self.net(input_signal) * norm_scale

    def training_step(self, batch, batch_idx):
        input_signal, target_signal = batch["input_signal"], batch["target_signal"]
        return (self(input_signal) - target_signal).abs().mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)
"""

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='enh', packages=['enh'])\n", "enh/__init__.py": ""}


def amp102(pre="pass", **kw):
    source = textwrap.dedent(MODEL).replace("{pre}", pre)
    return [f.line for f in lint_source(source, filename="enh/model.py", extra_files=PACKAGE, **kw)
            if f.code == "AMP102"]


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
def test_the_loaders_batch_is_input_data(precision):
    assert amp102(precision=precision) == []


def test_near_miss_a_layers_output_is_an_activation():
    assert amp102(pre="input_signal = self.net(input_signal)") == [8]
