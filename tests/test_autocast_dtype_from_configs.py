"""An autocast whose dtype the code does not say (nanuGPT: `autocast(device_type=..., dtype=torch_info.pt_dtype)`, the
dataclass field built in another function from `config['general']['dtype']`) takes the dtype the program's YAML configs
give the key the code reads (`general: {dtype: 'bfloat16'}` in configs/ beside train.py, given on the command line).
Near misses: a config naming float16 (float16 stays); configs naming no float dtype under that key (`dtype: uint16`);
code that reads no such key."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

UTILS = """
from dataclasses import dataclass

import torch


@dataclass
class TorchInfo:
    device_type: str
    pt_dtype: torch.dtype


def setup_torch(device_type, dtype):
    pt_dtype = {'float32': torch.float32, 'bfloat16': torch.bfloat16, 'float16': torch.float16}[dtype]
    return TorchInfo(device_type=device_type, pt_dtype=pt_dtype)
"""
COMMON = """
import torch

from pkg import utils


def setup_device(config):
    dtype = config['general']{read}
    torch_info = utils.setup_torch(device_type='cuda', dtype=dtype)
    return torch.amp.autocast(device_type=torch_info.device_type, dtype=torch_info.pt_dtype)
"""
TRAIN = """
import sys

import torch
import yaml

from pkg.common import setup_device


def train(config):
    amp_ctx = setup_device(config)
    model = torch.nn.Linear(8, 8).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for x in []:
        with amp_ctx:
            loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    train(yaml.safe_load(open(sys.argv[1])))
"""
CONFIG = """
general:
  {key}: '{dtype}'
  seed: 42
data:
  dtype: 'uint16'
"""


@pytest.mark.parametrize("dtypes, read, key, mode", [
    (["bfloat16"], "['dtype']", "dtype", "bf16"),
    (["bfloat16", "float32"], "['dtype']", "dtype", "bf16"),
    (["float32"], "['dtype']", "dtype", "fp32"),
    # near misses
    (["bfloat16", "float16"], "['dtype']", "dtype", "fp16-mixed"),
    (["bfloat16"], "['dtype']", "compute", "fp16-mixed"),  # the configs name no float dtype under `dtype`
    (["bfloat16"], ".get('seed') and 'bfloat16'", "dtype", "fp16-mixed"),  # the code reads no dtype key
])
def test_the_configs_say_the_dtype_the_code_leaves_open(tmp_path, dtypes, read, key, mode):
    files = {"pkg/__init__.py": "", "pkg/utils.py": textwrap.dedent(UTILS),
             "pkg/common.py": textwrap.dedent(COMMON).format(read=read), "train.py": textwrap.dedent(TRAIN)}
    for i, dtype in enumerate(dtypes):
        files[f"configs/task{i}/base_config.yaml"] = textwrap.dedent(CONFIG).format(key=key, dtype=dtype)
    p = Project(write_project(tmp_path / "p", files))
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"train.py": mode}, modes
