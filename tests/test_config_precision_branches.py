"""A run config's own ``precision:`` decides which branch of the program's precision switch runs (set 10,
T10-8: physicsnemo's recipes say ``precision: float32`` / ``"bfloat16"`` in their Hydra configs, read by
``get_autocast_context(cfg.precision)``, whose ``if precision == "float16":`` branch returns a float16 autocast,
and by ``GradScaler(enabled=cfg.precision == "float16")``: those are the branches of another run)."""
import textwrap

import pytest

from amplint.precision_facts import file_facts
from amplint.project import Project, Regime

from cliutil import write_project

TRAIN = """
from contextlib import nullcontext

import hydra
import torch
from torch.amp import autocast


def get_autocast_context(precision: str):
    if precision == "float16":
        return autocast("cuda", dtype=torch.float16)
    elif precision == "bfloat16":
        return autocast("cuda", dtype=torch.bfloat16)
    return nullcontext()


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg):
    model = torch.nn.Linear(3, 3).cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    scaler = torch.amp.GradScaler("cuda", enabled=cfg.precision == "float16")
    for step in range(10):
        x = torch.randn(64, 3, device="cuda")
        with get_autocast_context(cfg.precision):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""


def _mode(tmp_path, config=None, yaml=None):
    files = {"train.py": textwrap.dedent(TRAIN)}
    if config is not None:
        files["conf/config.yaml"] = f"precision: {config}\nlr: 1e-3\nmax_epochs: 10\n"
    if yaml is not None:
        files["conf/config.yaml"] = textwrap.dedent(yaml)
    p = Project(write_project(tmp_path / "p", files))
    [ep] = p.entry_points()
    return Regime(ep.signals).mode


def test_a_comparison_switching_a_grad_scaler_is_its_condition():
    facts = file_facts(textwrap.dedent(TRAIN).encode(), "train.py", "train")
    [scaler] = [s for s in facts["signals"] if s["kind"] == "grad_scaler"]
    assert scaler["one_of"] == 'if cfg.precision == "float16"'


@pytest.mark.parametrize("config, mode", [
    ("float32", "fp32"),        # physicsnemo's active-learning aero: `precision: float32`
    ('"bfloat16"', "bf16"),     # its unified aero recipe: the bfloat16 branch runs
    ("float16", "fp16-mixed"),  # near miss: the config names the float16 branch
])
def test_the_configs_precision_picks_the_branch(tmp_path, config, mode):
    assert _mode(tmp_path, config) == mode


def test_near_miss_without_a_config_every_branch_is_one_of_the_runs(tmp_path):
    assert _mode(tmp_path) == "fp16-mixed"


def test_the_training_settings_of_a_config_may_sit_in_a_section_or_go_by_another_name(tmp_path):
    # physicsnemo's unified aero recipe: `precision: "bfloat16"` at the top of base.yaml, its training settings in
    # a `training:` section; the active-learning recipe's `fine_tune_epochs` / `fine_tune_lr`
    nested = 'precision: "bfloat16"\ntraining:\n  batch_size: 1\n  optimizer:\n    weight_decay: 1.0e-4\n'
    assert _mode(tmp_path / "nested", yaml=nested) == "bf16"
    named = "precision: float32\nfine_tune_epochs: 20\nfine_tune_lr: 5.0e-4\n"
    assert _mode(tmp_path / "named", yaml=named) == "fp32"
    # near miss: a config with no training setting says nothing of the run (a model card, a dataset's), unless it is
    # the program's own primary config (`config_name`), whose settings the program reads (tests/test_hydra_settings.py)
    card = Project(write_project(tmp_path / "card", {"train.py": textwrap.dedent(TRAIN),
                                                     "conf/model/card.yaml": "precision: float32\nname: geotransolver\n"}))
    [ep] = card.entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"
    assert _mode(tmp_path / "primary", yaml="precision: float32\nname: geotransolver\n") == "fp32"
