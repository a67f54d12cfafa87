"""An autocast picked from a dict literal by a command-line option (Lumina-T2X's trainers: `with {"bf16":
autocast(dtype=torch.bfloat16), "fp16": autocast(dtype=torch.float16), "fp32": nullcontext()}[args.precision]:`)
is the entry the program's runs pick: the value its launcher scripts pass (`--precision bf16`), else the
option's default; with neither, one of the entries (float16 first). (docs/precision.md; triage T11-3.)"""
import textwrap

import pytest

from amplint.config_evidence import shell_options
from amplint.project import Project
from cliutil import run, write_project

MODEL = """
import numpy as np
import torch
from torch import nn


class Contrastive(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 8)
        self.b = nn.Linear(16, 8)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def forward(self, x, y):
        logits = self.a(x) @ self.b(y).t() * self.logit_scale.exp()
        return nn.functional.cross_entropy(logits, torch.arange(len(x), device=x.device))
"""
TRAIN = """
import argparse
import contextlib
import torch
from model import Contrastive


def main(args):
    model = Contrastive().cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x, y in []:
        with {
            "bf16": torch.autocast("cuda", dtype=torch.bfloat16),
            "fp16": torch.autocast("cuda", dtype=torch.float16),
            "fp32": contextlib.nullcontext(),
        }[args.precision]:
            loss = model(x, y)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", choices=["fp32", "fp16", "bf16"]{default})
    main(parser.parse_args())
"""


@pytest.mark.parametrize("default, launch, mode", [
    (', default="bf16"', "--precision bf16", "bf16"),  # Lumina-T2X: every launcher passes bf16
    (', default="bf16"', None, "bf16"),  # no launcher: the option's default picks
    (', default="fp32"', None, "fp32"),  # nullcontext: no autocast
    # near misses: the launcher picks fp16; nothing picks (one of the entries, float16 first)
    (', default="bf16"', "--precision fp16", "fp16-mixed"),
    ("", None, "fp16-mixed"),
])
def test_the_runs_pick_the_autocast_of_a_dict_switch(tmp_path, default, launch, mode):
    files = {"model.py": textwrap.dedent(MODEL), "train.py": textwrap.dedent(TRAIN).replace("{default}", default)}
    if launch:
        files["run.sh"] = f"torchrun --nproc_per_node=8 train.py {launch}\n"
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
    # the trained, unclamped logit scale overflows float16 only: AMP401 under the fp16 runs alone
    r = run(["check", "--no-cache", "--select", "AMP401", "."], root)
    assert ("AMP401" in r.out) is (mode == "fp16-mixed"), r.out


def test_a_launcher_passes_a_bare_precision_option():
    assert shell_options("python train.py --precision bf16 --dtype=float16\n") == [
        (1, "precision", "bf16"), (1, "dtype", "float16")]
