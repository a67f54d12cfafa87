"""A Hydra entry point (`@hydra.main(config_path=..., config_name=...)`, NeMo's `@hydra_runner(...)`) loads its
configs from its `config_path`: the `trainer.precision: 16` of a YAML in another directory is not its run's
(docs/precision.md, "Evidence in configuration files"; triage T9-6, NeMo's train_asr_adapter.py)."""
import textwrap

from cliutil import run, write_project

TRAIN = """
import hydra
import pytorch_lightning as pl
import torch
from torch import nn


class DiarModel(pl.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.net = nn.Linear(80, 4)
        self.loss = nn.BCELoss()

    def training_step(self, batch, batch_idx):
        return self.loss(torch.sigmoid(self.net(batch["feats"])), batch["labels"])


@hydra.main(config_path="{path}", config_name="run.yaml")
def main(cfg):
    trainer = pl.Trainer(**cfg.trainer)
    trainer.fit(DiarModel(cfg.model))


if __name__ == "__main__":
    main()
"""
FILES = {"conf/adapters/run.yaml": "model:\n  hidden: 80\ntrainer:\n  max_epochs: 10\n  precision: 32\n",
         "conf/translation/run.yaml": "model:\n  hidden: 512\ntrainer:\n  max_epochs: 100\n  precision: 16\n"}


def _amp202(tmp_path, config_path):
    files = {"train.py": TRAIN.replace("{path}", config_path), **FILES}
    root = write_project(tmp_path, {k: textwrap.dedent(v) for k, v in files.items()})
    out = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP202", "."], root).out
    return [line for line in out.splitlines() if "AMP202" in line]


def test_a_yaml_outside_the_config_path_is_not_the_run(tmp_path):
    assert _amp202(tmp_path / "adapters", "conf/adapters") == []
    # near miss: the program's own config directory says 16
    assert len(_amp202(tmp_path / "translation", "conf/translation")) == 1
