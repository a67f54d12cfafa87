"""A project trainer class whose precision is a constructor option (FlagAI's `Trainer(..., fp16=False)`, whose
`train()` does `if self.fp16: model.half(); model = FP16_Module(model)`) trains in half only in the runs whose
construction passes a true value: a script building `Trainer(env_type="pytorch", lr=1e-4)` trains in float32, and
the half-casting wrapper built only under that option is no evidence of its run either. (docs/precision.md;
triage T12-3.)"""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

FP16 = """
import torch.nn as nn


class FP16_Module(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.add_module("module", module.half())

    def forward(self, *inputs):
        return self.module(*(x.half() for x in inputs)).float()
"""
TRAINER = """
import torch

from pkg.fp16 import FP16_Module


class Trainer:
    def __init__(self, env_type="pytorch", lr=1e-3, epochs=1, fp16=False):
        self.env_type = env_type
        self.lr = lr
        self.epochs = epochs
        self.fp16 = fp16

    def train(self, model, dataset):
        if self.fp16:
            model.half()
        model.cuda()
        if self.fp16:
            model = FP16_Module(model)
        optimizer = torch.optim.Adam(model.parameters(), lr=self.lr)
        for _ in range(self.epochs):
            for batch in dataset:
                loss = model(batch.cuda())
                loss.backward()
                optimizer.step()
"""
MODEL = """
import torch
import torch.nn as nn


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


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.norm = BertLayerNorm(16)

    def forward(self, x):
        return self.norm(self.fc(x)).pow(2).mean()
"""
SCRIPT = """
import torch

from pkg.model import Net
from pkg.trainer import Trainer

trainer = Trainer({args})
trainer.train(model=Net(), dataset=[torch.randn(8, 16) for _ in range(10)])
"""


def _project(tmp_path, scripts):
    files = {"pkg/__init__.py": "", "pkg/fp16.py": textwrap.dedent(FP16), "pkg/trainer.py": textwrap.dedent(TRAINER),
             "pkg/model.py": textwrap.dedent(MODEL)}
    for name, args in scripts.items():
        script = textwrap.dedent(SCRIPT).replace("{args}", args)
        if "args." in args:
            script = ("import argparse\nparser = argparse.ArgumentParser()\nparser.add_argument('--fp16', "
                      "action='store_true')\nargs = parser.parse_args()\n") + script
        files[f"train_{name}.py"] = script
    return write_project(tmp_path / "p", files)


@pytest.mark.parametrize("args, half", [
    ('env_type="pytorch", lr=1e-4, epochs=3', False),  # FlagAI's fp32 examples
    ("lr=1e-4, fp16=False", False),
    # near misses: fp16=True (FlagAI's GLM scripts); an option from the command line may be either
    ("lr=1e-4, fp16=True", True),
    ("lr=1e-4, fp16=args.fp16", True),
])
def test_a_constructor_option_decides_its_half_branches(tmp_path, args, half):
    root = _project(tmp_path, {"net": args})
    p = Project(root)
    (ep,) = p.entry_points()
    mode = p.regime_for(ep.path).mode
    assert (mode != "fp32") is half, mode
    r = run(["check", "--no-cache", "--select", "AMP102", "train_net.py", "pkg/model.py"], root)
    assert ("AMP102" in r.out) is half, r.out


def test_each_script_by_its_own_construction(tmp_path):
    root = _project(tmp_path, {"fp32": "lr=1e-4", "glm": "lr=1e-4, fp16=True"})
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes["train_fp32.py"] == "fp32" and modes["train_glm.py"] != "fp32", modes
    r = run(["check", "--no-cache", "--show-settings", "."], root)
    assert "[not read] (`Trainer` is built with fp16=False in this program's runs" in r.out, r.out
    assert "[not read] (`FP16_Module` is built only where" in r.out, r.out


LOADER = """
import torch
from transformers import AutoModelForCausalLM


class AutoLoader:
    def __init__(self, name, torch_dtype=None, inference_mode=True):
        if {test}:
            self.model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.float16)
        else:
            self.model = AutoModelForCausalLM.from_pretrained(name)

    def get_model(self):
        return self.model
"""
LOADER_SCRIPT = """
import torch

from pkg.loader import AutoLoader

model = AutoLoader("RoBERTa-base-ch").get_model()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
for batch in []:
    model(**batch).loss.backward()
    optimizer.step()
"""


@pytest.mark.parametrize("test, half", [
    ("inference_mode", False),  # FlagAI's AutoLoader: the branch that serves a model
    # near misses: the training side of the switch; a switch not named for inference
    ("not inference_mode", True),
    ("torch_dtype is not None", True),
])
def test_a_half_load_under_an_inference_switch_is_inference(tmp_path, test, half):
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "",
                                          "pkg/loader.py": textwrap.dedent(LOADER).replace("{test}", test),
                                          "train.py": textwrap.dedent(LOADER_SCRIPT)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert (p.regime_for(ep.path).mode != "fp32") is half, p.regime_for(ep.path)
