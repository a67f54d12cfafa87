"""Lightning 0.7 / 0.8's apex switch: ``pl.Trainer(use_amp=not args.fp32, amp_level='O2')`` trains with NVIDIA apex at
that opt_level (O2: a half model with float32 master weights) unless ``--fp32`` is passed: longformer's summarization.py
and triviaqa.py were judged fp32 (set 18, harmless there). Near misses: ``use_amp=False`` is float32, and the default
level O1 is apex's autocast-like mixed precision."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import argparse

import pytorch_lightning as pl
import torch


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def training_step(self, batch, idx):
        return {"loss": self.fc(batch).pow(2).mean()}

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp32", action="store_true")
    args = parser.parse_args()
    trainer = pl.Trainer(gpus=1, {kwargs})
    trainer.fit(Net())


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("kwargs, mode", [
    ("use_amp=not args.fp32, amp_level='O2'", "fp16-master"),
    ("use_amp=True, amp_level='O2'", "fp16-master"),
    ("use_amp=not args.fp32", "fp16-mixed"),
    ("use_amp=False, amp_level='O2'", "fp32"),
    ("use_amp=not args.fp32, amp_level='O0'", "fp32"),
])
def test_lightning_use_amp_is_apex_at_its_level(tmp_path, kwargs, mode):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN).replace("{kwargs}", kwargs)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
