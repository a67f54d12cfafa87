"""A precision switch read as an attribute of an attribute dict built from the program's settings dicts
(ZoeDepth: `COMMON_TRAINING_CONFIG = {"use_amp": False, ...}` in config.py, `get_config()` returns
`edict(...)` of it, the trainer runs `autocast(enabled=self.config.use_amp)` and
`GradScaler(enabled=self.config.use_amp)`, triage T21-3) is settled by those dicts as `config["use_amp"]` is
(T12-5): off in every run, so the trainer's code is fp32 and the zero-weighted loss term's 1e-10 guard is no
float16 hazard. (docs/precision.md, "Settings read the same way".)"""
import json
import textwrap

import pytest

from cliutil import run, write_project

ATTR_DICT_CLASS = """
class EasyDict(dict):
    def __getattr__(self, name):
        return self[name]

"""
ATTR_DICT_IMPORT = """
from easydict import EasyDict

"""
CONFIG = """
COMMON_TRAINING_CONFIG = {{
    "use_amp": {use_amp},
    "w_si": 1,
    "w_grad": 0,
}}


def get_config():
    return {wrap}(COMMON_TRAINING_CONFIG)
"""
TRAINER = """
import torch
from torch.cuda import amp

from pkg.loss import GradL1Loss


class Trainer:
    def __init__(self, config, model, loader):
        self.config = config
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.grad_loss = GradL1Loss()
        self.scaler = amp.GradScaler(enabled=self.config.use_amp)

    def train(self):
        for images, depths in self.loader:
            with amp.autocast(enabled=self.config.use_amp):
                pred = self.model(images)
                loss = (pred - depths).abs().mean()
                if self.config.w_grad > 0:
                    loss = loss + self.config.w_grad * self.grad_loss(pred, depths)
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.optimizer.zero_grad()
"""
LOSS = """
import torch
import torch.nn as nn


def grad(x):
    diff_x = x[..., 1:, 1:] - x[..., 1:, :-1]
    diff_y = x[..., 1:, 1:] - x[..., :-1, 1:]
    return torch.atan(diff_y / (diff_x + 1e-10))


class GradL1Loss(nn.Module):
    def forward(self, input, target):
        return nn.functional.l1_loss(grad(input), grad(target))
"""
TRAIN = """
import torch

from pkg.config import get_config
from pkg.trainer import Trainer


def main():
    config = get_config()
    model = torch.nn.Conv2d(3, 1, 3, padding=1).cuda()
    Trainer(config, model, []).train()


if __name__ == "__main__":
    main()
"""


def _project(tmp_path, use_amp, attr_dict=ATTR_DICT_CLASS, wrap="EasyDict"):
    return write_project(tmp_path / "p", {
        "train_mono.py": textwrap.dedent(TRAIN),
        "pkg/__init__.py": "",
        "pkg/config.py": textwrap.dedent(attr_dict) + textwrap.dedent(CONFIG).format(use_amp=use_amp, wrap=wrap),
        "pkg/trainer.py": textwrap.dedent(TRAINER),
        "pkg/loss.py": textwrap.dedent(LOSS),
    })


def _hazards(root):
    r = run(["check", "--no-cache", "--exit-zero", "--output-format", "json", "."], root)
    return sorted((f["code"], f["filename"].rsplit("/", 1)[-1]) for f in json.loads(r.out) if f["code"] != "AMP501")


@pytest.mark.parametrize("attr_dict", [ATTR_DICT_CLASS, ATTR_DICT_IMPORT], ids=["own-class", "easydict"])
def test_an_attribute_dict_of_settings_switches_its_autocast_off(tmp_path, attr_dict):
    root = _project(tmp_path, False, attr_dict)
    assert _hazards(root) == []
    r = run(["check", "--no-cache", "--show-settings", "."], root)
    assert "train_mono.py:8 (main): fp32" in r.out, r.out
    assert "[not read] (switched off by the program's own settings dicts (if self.config.use_amp))" in r.out, r.out


def test_near_miss_settings_turning_amp_on_keep_the_guard(tmp_path):
    root = _project(tmp_path, True)
    assert _hazards(root) == [("AMP102", "loss.py")]


def test_near_miss_settings_dict_never_made_an_attribute_dict_is_not_read_as_attributes(tmp_path):
    # `dict(...)` of the settings: `self.config.use_amp` is then not that dict's key (an object of another kind)
    root = _project(tmp_path, False, attr_dict="", wrap="dict")
    assert _hazards(root) == [("AMP102", "loss.py")]
