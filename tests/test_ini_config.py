"""Precision settings in an INI file (stable-audio-tools' defaults.ini, read by prefigure into the program's argparse
defaults: `[DEFAULTS]` / `precision = "16-mixed"` handed to `pl.Trainer(precision=args.precision)`, triage M16-3):
Lightning's 16-mixed run, so a plain `clip_grad_norm_` after `self.manual_backward(loss)` clips scaled gradients
(AMP302). Near misses: the INI says 32; a tox.ini is no run's config."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import hazard_findings, write_project

WRAPPER = """
import pytorch_lightning as pl
import torch
from torch import nn


class AutoencoderTrainingWrapper(pl.LightningModule):
    def __init__(self, clip_grad_norm=0.0):
        super().__init__()
        self.net = nn.Linear(16, 16)
        self.clip_grad_norm = clip_grad_norm
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt = self.optimizers()
        loss = (self.net(batch) - batch).pow(2).mean()
        opt.zero_grad()
        self.manual_backward(loss)
        if self.clip_grad_norm > 0.0:
            torch.nn.utils.clip_grad_norm_(self.net.parameters(), self.clip_grad_norm)
        opt.step()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""
TRAIN = """
import pytorch_lightning as pl
from prefigure.prefigure import get_all_args

from pkg.wrapper import AutoencoderTrainingWrapper


def main():
    args = get_all_args()
    trainer = pl.Trainer(precision=args.precision, max_steps=10)
    trainer.fit(AutoencoderTrainingWrapper(clip_grad_norm=1.0), [])


if __name__ == "__main__":
    main()
"""
INI = """
[DEFAULTS]

# Precision to use for training
precision = {precision}

# the batch size
batch_size = 4
"""


@pytest.mark.parametrize("name, precision, mode", [
    ("defaults.ini", '"16-mixed"', "fp16-mixed"),
    ("defaults.ini", "16-mixed", "fp16-mixed"),
    ("defaults.ini", '"32"', "fp32"),  # near miss: the INI says float32
    ("tox.ini", '"16-mixed"', "fp32"),  # near miss: a tool's INI
])
def test_an_ini_states_the_lightning_precision(tmp_path, name, precision, mode):
    root = write_project(tmp_path / "p", {
        "pkg/__init__.py": "", "pkg/wrapper.py": textwrap.dedent(WRAPPER), "train.py": textwrap.dedent(TRAIN),
        name: textwrap.dedent(INI).format(precision=precision),
    })
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"train.py": mode}, modes
    found = ("pkg/wrapper.py", "AMP302") in hazard_findings(root)
    assert found is (mode == "fp16-mixed")
