"""A Lightning Trainer given `precision=configs.trainer.precision`, the section's values set by Hydra structured-config
dataclasses of the project (openspeech: `GPUTrainerConfigs.precision = 32`, `Fp16GPUTrainerConfigs.precision = 16`,
picked by `trainer=gpu-fp16` on the command line, triage M16-2): one of 16-mixed / 32, float16 first, so the
masked_fill(-1e9) on a float16 Linear output is reported (AMP103). Near misses: the section's dataclasses say 32 only;
a dataclass of another section says 16."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import hazard_findings, run, write_project

CONFIGS = """
from dataclasses import dataclass, field


@dataclass
class GPU{section}Configs:
    name: str = field(default="gpu")
    precision: int = field(default=32)


@dataclass
class Fp16GPU{section}Configs(GPU{section}Configs):
    name: str = field(default="gpu-fp16")
    precision: int = field(default={half})
"""
MODEL = """
import pytorch_lightning as pl
import torch
from torch import nn


class Model(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def training_step(self, batch, batch_idx):
        x, mask = batch
        score = self.fc(x).masked_fill(mask, -1e9)
        return score.softmax(-1).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())
"""
UTILS = """
import pytorch_lightning as pl


def get_pl_trainer(configs):
    return pl.Trainer(precision=configs.trainer.precision, max_epochs=10)
"""
TRAIN = """
import hydra
from omegaconf import DictConfig

from pkg.model import Model
from pkg.utils import get_pl_trainer


@hydra.main(config_path="../configs", config_name="train")
def hydra_main(configs: DictConfig) -> None:
    model = Model()
    trainer = get_pl_trainer(configs)
    trainer.fit(model)


if __name__ == "__main__":
    hydra_main()
"""


@pytest.mark.parametrize("section, half, mode", [
    ("Trainer", 16, "fp16-mixed"),
    ("Trainer", 32, "fp32"),  # near miss: every trainer config is float32
    ("Model", 16, "fp32"),  # near miss: the dataclasses of another section
])
def test_the_trainer_sections_dataclasses_give_its_precision(tmp_path, section, half, mode):
    root = write_project(tmp_path / "p", {
        "pkg/__init__.py": "", "pkg/configs.py": textwrap.dedent(CONFIGS).format(section=section, half=half),
        "pkg/model.py": textwrap.dedent(MODEL), "pkg/utils.py": textwrap.dedent(UTILS),
        "cli/hydra_train.py": textwrap.dedent(TRAIN),
    })
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"hydra_train.py": mode}, modes
    assert (("pkg/model.py", "AMP103") in hazard_findings(root)) is (mode == "fp16-mixed")
    if mode == "fp16-mixed":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        assert "precision=16 of the `trainer` configs (one of 16, 32)" in r.out, r.out
