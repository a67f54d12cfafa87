"""A project's master-weights optimizer (a class keeping float32 copies of half parameters) makes the half casts of
the entry points that use it "half model with fp32 master weights", not those of every program of the project
(M17-1, sentiment-discovery: pretrain.py wraps its Adam in the project's FP16_Optimizer; finetune_classifier.py
imports it, never uses it, halves the model under --fp16 and steps a plain Adam: pure float16, AMP101). Near misses:
the program wraps its optimizer; a trainer it imports builds the wrapper through a classmethod (fairseq's
``FP16Optimizer.build_optimizer``)."""
import json
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

FP16UTIL = """
class FP16_Optimizer:
    def __init__(self, init_optimizer):
        self.optimizer = init_optimizer
        self.fp32_groups = [[p.detach().float() for p in g["params"]] for g in init_optimizer.param_groups]

    @classmethod
    def build_optimizer(cls, optimizer):
        return cls(optimizer)

    def step(self):
        self.optimizer.step()
"""

PROGRAM = """
import argparse

import torch

from fp16util import FP16_Optimizer
{imports}

parser = argparse.ArgumentParser()
parser.add_argument("--fp16", action="store_true")


def main():
    args = parser.parse_args()
    model = torch.nn.Linear(8, 8).cuda()
    if args.fp16:
        model.half()
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    {wrap}
    for _ in range(10):
        loss = model(torch.randn(4, 8).cuda()).float().pow(2).mean()
        loss.backward()
        optim.step()


if __name__ == "__main__":
    main()
"""

TRAINER = """
from fp16util import FP16_Optimizer


def wrapped(optimizer):
    return FP16_Optimizer.build_optimizer(optimizer)
"""

PRETRAIN = PROGRAM.format(imports="", wrap="optim = FP16_Optimizer(optim)")


@pytest.mark.parametrize("imports, wrap, mode, codes", [
    ("", "", "fp16", ["AMP101"]),
    # near misses: the program wraps its optimizer; a module it imports builds the wrapper by a classmethod
    ("", "optim = FP16_Optimizer(optim)", "fp16-master", []),
    ("import trainer", "optim = trainer.wrapped(optim)", "fp16-master", []),
])
def test_master_weights_only_where_the_optimizer_is_used(tmp_path, imports, wrap, mode, codes):
    root = write_project(tmp_path / "p", {
        "fp16util.py": textwrap.dedent(FP16UTIL), "trainer.py": textwrap.dedent(TRAINER),
        "pretrain.py": textwrap.dedent(PRETRAIN),
        "finetune.py": textwrap.dedent(PROGRAM.format(imports=imports, wrap=wrap))})
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"finetune.py": mode, "pretrain.py": "fp16-master"}
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    found = json.loads(r.out)
    found = found if isinstance(found, list) else found["findings"]
    assert sorted(f["code"] for f in found if f["code"] != "AMP501" and f["filename"].endswith("finetune.py")) == codes
