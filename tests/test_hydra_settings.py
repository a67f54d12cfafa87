"""A Hydra program's own config settles the switches of its autocast and GradScaler: physicsnemo's recipes
(``self.amp = cfg.amp`` / ``autocast(enabled=self.amp)`` with ``amp: False``) train in fp32, and torchrl's RLHF
examples (``autocast(dtype=getattr(torch, dtype))``, ``GradScaler(enabled=(dtype == "float16"))``, ``dtype =
cfg.sys.dtype`` with ``sys: {dtype: bfloat16}``) in bf16. What the config does not settle stays as it was."""
import textwrap

from amplint.project import Project, Regime

from cliutil import write_project

TRAINER = """
import hydra
import torch
from torch.amp import GradScaler, autocast


class Trainer:
    def __init__(self, cfg):
        self.amp = cfg.amp
        self.model = torch.nn.Linear(4, 4)
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=cfg.lr)
        self.scaler = GradScaler()

    def train(self, x):
        with autocast(device_type="cuda", enabled=self.amp):
            loss = self.model(x).sum()
        if self.amp:
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            loss.backward()
            self.optimizer.step()


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg):
    trainer = Trainer(cfg)
    for epoch in range(cfg.epochs):
        trainer.train(torch.randn(2, 4))


if __name__ == "__main__":
    main()
"""

LOOKUP = """
from contextlib import nullcontext

import hydra
import torch


def setup(sys_cfg):
    dtype = sys_cfg.dtype
    if "cuda" not in sys_cfg.device:
        return nullcontext()
    return torch.amp.autocast(device_type="cuda", dtype=getattr(torch, dtype))


@hydra.main(version_base="1.3", config_path="config", config_name="train")
def main(cfg):
    dtype = cfg.sys.dtype
    ctx = setup(cfg.sys)
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.cuda.amp.GradScaler(enabled=(dtype == "float16"))
    for step in range(10):
        with ctx:
            loss = model(torch.randn(2, 4, device="cuda")).sum()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    main()
"""


def _entry(tmp_path, program, files):
    p = Project(write_project(tmp_path / "p", {"train.py": textwrap.dedent(program), **files}))
    [ep] = p.entry_points()
    return ep


def test_amp_switched_off_by_the_config_is_fp32(tmp_path):
    ep = _entry(tmp_path, TRAINER, {"conf/config.yaml": "amp: False\nlr: 0.001\nepochs: 10\n"})
    assert Regime(ep.signals).mode == "fp32"
    reasons = {r[2] for r in ep.roles if r[0] == "not read"}
    assert any("switched off by the program's Hydra config (if self.amp)" in r for r in reasons)
    assert any("GradScaler beside the autocast" in r for r in reasons)


def test_amp_switched_on_by_the_config_stays_fp16_mixed(tmp_path):
    ep = _entry(tmp_path, TRAINER, {"conf/config.yaml": "amp: true\nlr: 0.001\nepochs: 10\n"})
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_setting_the_config_does_not_hold_stays_as_it_was(tmp_path):
    # nothing in the config names `amp`: the switch may be set on the command line (`amp=true`)
    ep = _entry(tmp_path, TRAINER, {"conf/config.yaml": "lr: 0.001\nepochs: 10\n"})
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_config_of_another_name_is_not_the_programs(tmp_path):
    # the program loads conf/config.yaml; conf/debug.yaml's `amp: False` is another run's
    ep = _entry(tmp_path, TRAINER, {"conf/config.yaml": "lr: 0.001\nepochs: 10\n",
                                    "conf/debug.yaml": "amp: False\nlr: 0.001\nepochs: 10\n"})
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_nested_setting_is_matched_by_its_path(tmp_path):
    program = TRAINER.replace("self.amp = cfg.amp", "self.cfg = cfg").replace("self.amp", "self.cfg.training.amp")
    yaml = "training:\n  amp: false\n  lr: 0.001\nepochs: 10\n"
    ep = _entry(tmp_path, program, {"conf/config.yaml": yaml})
    assert Regime(ep.signals).mode == "fp32"


def test_an_ambiguous_setting_is_not_read(tmp_path):
    # `self.amp` could be either `training.amp` or `model.amp`, and they disagree
    yaml = "training:\n  amp: false\nmodel:\n  amp: true\nepochs: 10\nlr: 0.1\n"
    ep = _entry(tmp_path, TRAINER, {"conf/config.yaml": yaml})
    assert not any("Hydra config" in r[2] for r in ep.roles)


def test_dtype_looked_up_by_the_configs_string(tmp_path):
    yaml = "sys:\n  device: cuda\n  dtype: bfloat16\ntrain:\n  lr: 1.0e-5\n"
    ep = _entry(tmp_path, LOOKUP, {"config/train.yaml": yaml})
    assert Regime(ep.signals).mode in ("bf16", "bf16-mixed")
    assert any("if dtype == \"float16\"" in r[2] for r in ep.roles if r[0] == "not read")


def test_dtype_looked_up_by_the_configs_string_float16(tmp_path):
    yaml = "sys:\n  device: cuda\n  dtype: float16\ntrain:\n  lr: 1.0e-5\n"
    ep = _entry(tmp_path, LOOKUP, {"config/train.yaml": yaml})
    assert Regime(ep.signals).mode == "fp16-mixed"
