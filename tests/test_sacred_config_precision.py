"""A Lightning trainer's precision read from a sacred experiment's config (ViLT: `pl.Trainer(precision=
_config["precision"])` in the `@ex.automain` function, `precision = 16` in the `@ex.config` function of
vilt/config.py, triage P21-2) is that config's value; a `@ex.named_config` setting another value makes it one of
them. (docs/precision.md, "Settings read the same way".)"""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

CONFIG = """
from sacred import Experiment

ex = Experiment("ViLT")


@ex.config
def config():
    exp_name = "vilt"
    precision = {default}
    max_epoch = 100


@ex.named_config
def task_finetune_vqa():
    exp_name = "finetune_vqa"
    {named}
"""
RUN = """
import copy

import pytorch_lightning as pl
import torch

from vilt.config import ex


class Module(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)

    def training_step(self, batch, batch_idx):
        return self.net(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-4)


@ex.automain
def main(_config):
    _config = copy.deepcopy(_config)
    trainer = pl.Trainer(precision=_config["precision"], max_epochs=_config["max_epoch"])
    trainer.fit(Module(), train_dataloaders=[torch.randn(2, 4)])
"""


@pytest.mark.parametrize("default, named, mode, conditional", [
    ("16", "max_epoch = 10", "fp16-mixed", False),  # ViLT (P21-2)
    ("32", "precision = 16", "fp16-mixed", True),   # a named config turning it on: one of the runs
    # near misses: the config says 32 and no named config changes it; a named config says 32 over a default of 16
    ("32", "max_epoch = 10", "fp32", False),
    ("16", "precision = 32", "fp16-mixed", True),
])
def test_a_sacred_config_sets_the_trainers_precision(tmp_path, default, named, mode, conditional):
    root = write_project(tmp_path / "p", {
        "run.py": textwrap.dedent(RUN), "vilt/__init__.py": "",
        "vilt/config.py": textwrap.dedent(CONFIG).format(default=default, named=named)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
    if mode != "fp32":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        said = f"(precision=16 of the sacred configs (default {default}" + ("; one of " if conditional else "))")
        assert said in r.out, r.out
