"""``.fit`` / ``.train()`` on what a function named for returning a trainer gives (``get_pl_trainer(cfg).fit(model)``,
``build_trainer(cfg).train()``) hands the model to a trainer: the program is a training entry point, with the
precision of the Lightning ``Trainer(precision="16-mixed")`` that function builds. Near miss: ``.fit`` on what
another function returns (``get_estimator(cfg).fit(x)``, a scikit-learn style model) trains nothing of torch's."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

UTILS = """
import lightning.pytorch as pl


def get_pl_trainer(cfg):
    return pl.Trainer(max_epochs=cfg["epochs"], precision="16-mixed", accelerator="gpu")


def build_trainer(cfg):
    return pl.Trainer(max_epochs=cfg["epochs"], precision="16-mixed", accelerator="gpu")


def get_estimator(cfg):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(max_iter=cfg["epochs"])
"""
MODEL = """
import torch
import lightning.pytorch as pl


class LitModel(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(16, 16)

    def training_step(self, batch, batch_idx):
        return self.net(batch[0]).logsumexp(-1).mean()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
"""
TRAIN = """
from pkg.model import LitModel
from pkg.utils import get_pl_trainer, build_trainer, get_estimator


def main():
    cfg = {{"epochs": 3}}
    model = LitModel()
    {call}


if __name__ == "__main__":
    main()
"""


def entry_points(tmp_path, call):
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/utils.py": UTILS, "pkg/model.py": MODEL,
                                          "train.py": textwrap.dedent(TRAIN.format(call=call))})
    p = Project(root)
    return p, [ep.display.rsplit("/", 1)[-1] for ep in p.entry_points()]


@pytest.mark.parametrize("call", ["get_pl_trainer(cfg).fit(model)", "build_trainer(cfg).fit(model)"])
def test_fit_on_a_trainer_getters_result_is_an_entry_point(tmp_path, call):
    p, eps = entry_points(tmp_path, call)
    assert eps == ["train.py"]
    assert p.regime_for(p.root / "train.py").entry_points and p.regime_for(p.root / "pkg/model.py").mode == "fp16-mixed"


def test_near_miss_fit_on_another_functions_result(tmp_path):
    assert entry_points(tmp_path, "get_estimator(cfg).fit(model.net.weight.detach().numpy(), [0] * 16)")[1] == []
