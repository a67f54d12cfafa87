"""An FSDP `MixedPrecision(param_dtype=torch.float16)` policy handed to accelerate's `FullyShardedDataParallelPlugin`
(prismer's train_*.py, triage T22-1): accelerate runs the prepared model's forward under its fp16 autocast (with a
ShardedGradScaler), so autocast's float32 ops (`cosine_similarity`, `** 2`) stay float32: fp16 mixed precision, not
a half model computing everything in float16. Plain torch FSDP with that policy and no autocast, or accelerate told
`mixed_precision="no"`, computes in float16 (near misses: the guards keep their AMP102)."""
import json
import textwrap

import pytest

from cliutil import run, write_project

MODEL = """
import torch
import torch.nn as nn
import torch.nn.functional as F


def normalize(out):
    x, y, z = torch.split(out, 1, dim=1)
    norm = torch.sqrt(x ** 2.0 + y ** 2.0 + z ** 2.0) + 1e-10
    return torch.cat([x / norm, y / norm, z / norm], dim=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        out = normalize(self.conv(x))
        return (1 - F.cosine_similarity(out, x, dim=1)).mean()
"""
ACCELERATE = """
import argparse

import torch
from accelerate import Accelerator, FullyShardedDataParallelPlugin
from torch.distributed.fsdp import MixedPrecision

from model import Net

parser = argparse.ArgumentParser()
parser.add_argument("--mixed_precision", default="fp16", type=str)
args = parser.parse_args()

plugin = FullyShardedDataParallelPlugin(
    mixed_precision_policy=MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float16,
                                          buffer_dtype=torch.float16))
accelerator = Accelerator(mixed_precision=MIXED, fsdp_plugin=plugin)
model = Net()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
model, optimizer = accelerator.prepare(model, optimizer)
for step in range(100):
    loss = model(torch.randn(8, 3, 32, 32, device=accelerator.device))
    accelerator.backward(loss)
    optimizer.step()
    optimizer.zero_grad()
"""
PLAIN = """
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import MixedPrecision

from model import Net

model = FSDP(Net().cuda(), mixed_precision=MixedPrecision(param_dtype=torch.float16))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
for step in range(100):
    loss = model(torch.randn(8, 3, 32, 32, device="cuda"))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


@pytest.mark.parametrize("train, expected", [
    (ACCELERATE.replace("MIXED", "args.mixed_precision"), []),  # prismer (T22-1)
    # near misses: plain FSDP computes in float16; accelerate told "no" autocasts nothing
    (PLAIN, ["AMP102", "AMP102"]),
    (ACCELERATE.replace("MIXED", '"no"'), ["AMP102", "AMP102"]),
])
def test_an_fsdp_policy_in_accelerates_plugin_runs_under_its_autocast(tmp_path, train, expected):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(train), "model.py": textwrap.dedent(MODEL)})
    r = run(["check", "--no-cache", "--exit-zero", "--output-format", "json", "."], root)
    assert sorted(f["code"] for f in json.loads(r.out) if f["code"] != "AMP501") == expected, r.out
