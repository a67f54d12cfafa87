"""A command-line `--fp16` switch is float16 evidence only where what it switches is: vilbert-multi-task's
train_tasks.py declares `--fp16` (store_true) but only shortens its LR warm-up with it; no autocast, half cast, scaler
or apex anywhere in its run, so it trains in float32 (triage T19-4, 2 FPs on set 19: judged fp16-mixed, the "float16
run" imports no apex, and the apex-fallback LayerNorm its modeling file shares with the apex-only fp16 pre-training
came back as float16 code). Near misses: a `--fp16` that opens torch.autocast or halves the model stays float16."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

MODELING = """
import torch
from torch import nn

try:
    from apex.normalization.fused_layer_norm import FusedLayerNorm as BertLayerNorm
except ImportError:

    class BertLayerNorm(nn.Module):
        def __init__(self, hidden_size, eps=1e-12):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(hidden_size))
            self.bias = nn.Parameter(torch.zeros(hidden_size))
            self.variance_epsilon = eps

        def forward(self, x):
            u = x.mean(-1, keepdim=True)
            s = (x - u).pow(2).mean(-1, keepdim=True)
            x = (x - u) / torch.sqrt(s + self.variance_epsilon)
            return self.weight * x + self.bias


class Model(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        self.dense = nn.Linear(d, d)
        self.norm = BertLayerNorm(d, eps=1e-12)
        self.head = nn.Linear(d, 2)

    def forward(self, x, y):
        return nn.functional.cross_entropy(self.head(self.norm(self.dense(x))), y)
"""
# the apex-only float16 pre-training (train_concap.py's shape): imports apex or raises
PRETRAIN = """
import argparse

import torch

from pkg.modeling import Model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true")
    args = parser.parse_args()
    model = Model()
    if args.fp16:
        try:
            from apex.optimizers import FP16_Optimizer, FusedAdam
        except ImportError:
            raise ImportError("Please install apex to use fp16 training.")
        optimizer = FP16_Optimizer(FusedAdam(model.parameters(), lr=1e-4), dynamic_loss_scale=True)
        model.half()
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(10):
        x = torch.randn(4, 64)
        if args.fp16:
            x = x.half()
        loss = model(x, torch.zeros(4, dtype=torch.long))
        if args.fp16:
            optimizer.backward(loss)
        else:
            loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""
FINETUNE = """
import argparse

import torch

from pkg.modeling import Model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true", help="Whether to use 16-bit float precision")
    parser.add_argument("--lr", type=float, default=1e-4)
    args = parser.parse_args()
    model = Model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    for step in range(10):
        x = torch.randn(4, 64)
        {forward}
        loss.backward()
        if args.fp16:
            for group in optimizer.param_groups:
                group["lr"] = args.lr * min(1.0, step / 5)
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    main()
"""
PLAIN = "loss = model(x, torch.zeros(4, dtype=torch.long))"
AUTOCAST = ("with torch.autocast(\"cuda\", dtype=torch.float16, enabled=args.fp16):\n"
            "            loss = model(x, torch.zeros(4, dtype=torch.long))")
HALF = ("if args.fp16:\n            model.half()\n"
        "        loss = model(x, torch.zeros(4, dtype=torch.long))")


def project(tmp_path, forward, extra=None):
    return write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/modeling.py": textwrap.dedent(MODELING),
                                          "pretrain.py": textwrap.dedent(PRETRAIN),
                                          "finetune.py": textwrap.dedent(FINETUNE).replace("{forward}", forward),
                                          **(extra or {})})


def mode_of(root, program):
    p = Project(root)
    (ep,) = [e for e in p.entry_points() if e.path.name == program]
    return p.regime_for(ep.path).mode


@pytest.mark.parametrize("extra", [{}, {"finetune.sh": "python finetune.py --fp16 --lr 2e-5\n"}])
def test_a_switch_that_turns_on_no_float16_code_is_no_float16_run(tmp_path, extra):
    # (a launcher passing the switch passes nothing float16 either)
    root = project(tmp_path, PLAIN, extra)
    assert mode_of(root, "finetune.py") == "fp32"
    assert mode_of(root, "pretrain.py") == "fp16-master"
    # the fallback LayerNorm runs in float16 only in the apex-only pre-training, which never builds it (T17-4)
    r = run(["check", "--no-cache", "--select", "AMP102", "."], root)
    assert "AMP102" not in r.out, r.out


@pytest.mark.parametrize("forward, mode", [(AUTOCAST, "fp16-mixed"), (HALF, "fp16")])
def test_a_switch_that_opens_autocast_or_halves_the_model_stays_float16(tmp_path, forward, mode):
    root = project(tmp_path, forward)
    assert mode_of(root, "finetune.py") == mode
