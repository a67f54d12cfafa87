"""Precision settings the program writes in its own code: a dict literal of hyperparameters read by string key
(autogluon's Mitra: `{"precision": "bfloat16", "grad_scaler_enabled": False}` read as
`torch.autocast(dtype=getattr(torch, self.cfg["precision"]))` and `GradScaler(enabled=self.cfg["grad_scaler_enabled"])`,
triage T12-5), and a dtype looked up in a dict literal by a command-line option (LLaMA2-Accessory:
`mixed_precision_dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "tf32": torch.float32}[args.precision]` fed to
FSDP's `MixedPrecision(param_dtype=...)`, beside `ShardedGradScaler(enabled=args.precision in ["fp16"])`, triage
T11-9): the runs' value decides, as for the dict-literal autocast switch (T11-3). (docs/precision.md.)"""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

MITRA = """
import torch
import torch.nn as nn


class Trainer:
    def __init__(self, cfg, model):
        self.cfg = cfg
        self.model = model.cuda()
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.hyperparams["lr"])
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.cfg.hyperparams["grad_scaler_enabled"])

    def train(self, batches):
        for x, y in batches:
            self.optimizer.zero_grad()
            with torch.autocast(device_type="cuda", dtype=getattr(torch, self.cfg.hyperparams["precision"])):
                loss = (self.model(x.cuda()) - y.cuda()).pow(2).mean()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""
RUN = """
from types import SimpleNamespace

import torch.nn as nn

from trainer import Trainer


def fit(batches):
    cfg = SimpleNamespace(hyperparams={{
        "lr": 1e-4,
        "precision": "{precision}",
        "grad_scaler_enabled": {scaler},
    }})
    Trainer(cfg, nn.Linear(8, 1)).train(batches)


if __name__ == "__main__":
    fit([])
"""
OTHER = """
DEFAULTS = dict(hyperparams={{"precision": "{precision}"}})
"""


@pytest.mark.parametrize("precision, scaler, other, mode", [
    ("bfloat16", False, None, "bf16"),  # autogluon's Mitra (T12-5)
    ("float32", False, None, "fp32"),
    # near misses: the dict says float16 with a scaler; two dicts disagree (unsettled: as before)
    ("float16", True, None, "fp16-mixed"),
    ("bfloat16", False, "float16", "fp16-mixed"),
])
def test_a_settings_dict_sets_the_autocast_and_scaler_it_feeds(tmp_path, precision, scaler, other, mode):
    files = {"trainer.py": textwrap.dedent(MITRA),
             "run.py": textwrap.dedent(RUN).format(precision=precision, scaler=scaler)}
    if other:
        files["settings.py"] = textwrap.dedent(OTHER).format(precision=other)
        files["run.py"] = "import settings\n" + files["run.py"]
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes and set(modes.values()) == {mode}, modes
    if mode == "bf16":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        assert "dtype bfloat16: the settings dict at run.py:12" in r.out, r.out
        assert "[not read] (switched off by the program's own settings" in r.out, r.out


ACCESSORY = """
import argparse

import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, MixedPrecision
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler
from torch import nn


def main(args, loader):
    mixed_precision_dtype = {{
        "fp16": torch.float16,
        "bf16": torch.bfloat16,
        "tf32": torch.float32,
    }}[args.precision]
    model = FSDP(nn.Linear(8, 8).cuda(), mixed_precision=MixedPrecision(param_dtype=mixed_precision_dtype,
                                                                         reduce_dtype=mixed_precision_dtype))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = ShardedGradScaler(enabled=args.precision in ["fp16"])
    for x in loader:
        loss = model(x).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", type=str, choices=["fp16", "bf16", "tf32"]{default})
    main(parser.parse_args(), [])
"""


@pytest.mark.parametrize("default, launch, mode", [
    (', default="bf16"', None, "bf16"),  # LLaMA2-Accessory's main_finetune.py (T11-9)
    (', default="tf32"', None, "fp32"),
    (', default="bf16"', "--precision bf16", "bf16"),  # every launcher passes bf16
    # near misses: the launcher picks fp16; nothing picks (one of the entries, float16 first)
    (', default="bf16"', "--precision fp16", "fp16-master"),
    ("", None, "fp16-master"),
])
def test_a_dtype_looked_up_by_an_option_is_the_runs_pick(tmp_path, default, launch, mode):
    files = {"main_finetune.py": textwrap.dedent(ACCESSORY).format(default=default)}
    if launch:
        files["exps/finetune.sh"] = f"torchrun --nproc_per_node=8 main_finetune.py {launch}\n"
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode


NANU_MODEL = """
import torch
from torch import nn


class Attn(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, mask):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1)
        scores = scores.masked_fill(mask, -1e9)
        return scores.softmax(-1) @ v
"""
NANU_TRAIN = """
import argparse

import torch
import yaml

from model import Attn


def train(config):
    model = Attn().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=config["optimizer"]["lr"])
    scaler = torch.amp.GradScaler("cuda", enabled=config["general"]["dtype"] == "float16")
    for x, mask in []:
        with torch.autocast(device_type="cuda", dtype=getattr(torch, config["general"]["dtype"])):
            loss = model(x, mask).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", default="configs/{name}")
    with open(parser.parse_args().config) as f:
        train(yaml.safe_load(f))
"""
NANU_YAML = """
general:
  project_name: gpt2
  dtype: '{dtype}'         # float32, float16, bfloat16
optimizer:
  lr: 6.0e-4
"""


@pytest.mark.parametrize("dtype, named, mode", [
    ("bfloat16", "base_config.yaml", "bf16"),  # nanuGPT: the program's default YAML says bfloat16
    ("float32", "base_config.yaml", "fp32"),
    # near misses: the YAML says float16; the program names another YAML (this one is not its default)
    ("float16", "base_config.yaml", "fp16-mixed"),
    ("bfloat16", "other.yaml", "fp16-mixed"),
])
def test_the_programs_own_default_yaml_sets_its_autocast(tmp_path, dtype, named, mode):
    root = write_project(tmp_path / "p", {"model.py": textwrap.dedent(NANU_MODEL),
                                          "train.py": textwrap.dedent(NANU_TRAIN).replace("{name}", named),
                                          "configs/base_config.yaml": textwrap.dedent(NANU_YAML).format(dtype=dtype)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
    # a -1e9 fill overflows float16 only
    r = run(["check", "--no-cache", "--select", "AMP103", "."], root)
    assert ("AMP103" in r.out) is (mode == "fp16-mixed"), r.out
