"""AMP101 in a file no entry point reaches that loads the model it optimizes itself, in bfloat16: its
optimizer's parameters are that load's, not another script's half model (LMFlow's
examples/detail_memory.py beside an fp16 diffusion script, triage T6-3)."""
import json
import textwrap

from cliutil import run, write_project

HALF_TRAINING = """
import torch
from torch import nn
def main(loader):
    model = nn.Linear(8, 8).half()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for x in loader:
        model(x).sum().backward()
        opt.step()
"""
MEMORY = """
import sys
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained(sys.argv[1], torch_dtype={dtype})
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
"""


def _amp101(tmp_path, dtype):
    files = {"lcm/train.py": HALF_TRAINING, "examples/detail_memory.py": MEMORY.replace("{dtype}", dtype)}
    root = write_project(tmp_path / dtype.rsplit(".", 1)[-1], {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--select", "AMP101", "--output-format", "json", "."], root)
    return [f["filename"].replace("\\", "/").rsplit("/", 1)[-1] for f in json.loads(r.out)]


def test_an_unreached_files_own_bf16_load_is_what_its_optimizer_trains(tmp_path):
    assert _amp101(tmp_path, "torch.bfloat16") == []


def test_an_unreached_files_own_float16_load_is_judged(tmp_path):
    # near miss: the file loads its model in float16 itself: Adam's default eps on float16 parameters
    assert _amp101(tmp_path, "torch.float16") == ["detail_memory.py"]
