"""A command-line option's default precision (`add_argument("--precision", default="16-mixed")` handed to
Lightning's Trainer) is no run's when every launcher script of the program passes the option (`--precision
bf16-mixed` in one, `--precision 32` in another): the runs are bf16 / fp32. Near misses: a launcher that leaves the
option out (that run takes the default), and a program with no launcher script."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

TRAIN = """
import argparse

import lightning as L
import torch


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def training_step(self, batch, idx):
        return self.fc(batch).pow(2).mean()

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters())


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="16-mixed")
    args = parser.parse_args()
    L.Trainer(precision=args.precision).fit(Net(), [])


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("scripts, mode", [
    ({"run.sh": "python train.py --precision bf16-mixed\n", "run_fp32.sh": "python train.py --precision 32\n"}, "bf16"),
    # near misses: one launcher takes the default; no launcher at all
    ({"run.sh": "python train.py --precision bf16-mixed\n", "run_default.sh": "python train.py\n"}, "fp16-mixed"),
    ({}, "fp16-mixed"),
])
def test_a_default_every_launcher_overrides_is_no_run(tmp_path, scripts, mode):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN), **scripts})
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"train.py": mode}, modes
    if mode == "bf16":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        assert "every launcher script of this program passes --precision" in r.out, r.out
