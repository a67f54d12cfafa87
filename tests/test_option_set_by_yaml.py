"""A dtype option that the program's YAML configs set (lingua, triage M14-2): FSDP2's
`fully_shard(mp_policy=MixedPrecisionPolicy(param_dtype=dict(fp32=..., fp16=..., bf16=...)[args.model_dtype]))`
with `model_dtype` a dataclass field defaulting to "bf16" and `distributed: {model_dtype: fp16}` in configs/ beside
train.py: the runs given that config are fp16 with fp32 master weights (one of fp16 / bf16 with the default), and
the 1e-8 guard of the model is reported. Near misses: the YAML says bf16; a YAML of another program says fp16."""
import textwrap

from amplint.project import Project
from cliutil import hazard_findings, write_project

DISTRIBUTED = """
from dataclasses import dataclass

import torch
from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard


@dataclass
class DistributedArgs:
    model_dtype: str = "bf16"
    fsdp: bool = True


def parallelize(model, args: DistributedArgs):
    param_dtype = {table}[args.model_dtype]
    if args.fsdp:
        fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=param_dtype, reduce_dtype=torch.float32))
    return model
"""
MODEL = """
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, dim=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        return h / (h.abs().sum(dim=-1, keepdim=True) + 1e-8)
"""
TRAIN = """
import sys
from dataclasses import dataclass, field

import torch
import yaml

from pkg.distributed import DistributedArgs, parallelize
from pkg.model import Net


@dataclass
class TrainArgs:
    steps: int = 1000
    distributed: DistributedArgs = field(default_factory=DistributedArgs)


def load_args(path):
    cfg = yaml.safe_load(open(path))
    return TrainArgs(distributed=DistributedArgs(**cfg.pop("distributed", {})), **cfg)


def train(args: TrainArgs):
    model = parallelize(Net().cuda(), args.distributed)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for _ in range(args.steps):
        loss = model(torch.randn(8, 64, device="cuda")).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    train(load_args(sys.argv[1]))
"""
CONFIG = """
steps: 100
distributed:
  model_dtype: {dtype}
  fsdp: true
"""
CALL = "dict(fp32=torch.float32, fp16=torch.float16, bf16=torch.bfloat16)"
LITERAL = '{"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}'


def _project(tmp_path, dtype, table=CALL, where="configs/small.yaml"):
    files = {"pkg/__init__.py": "", "pkg/distributed.py": textwrap.dedent(DISTRIBUTED).format(table=table),
             "pkg/model.py": textwrap.dedent(MODEL), "train.py": textwrap.dedent(TRAIN)}
    if dtype:
        files[where] = textwrap.dedent(CONFIG).format(dtype=dtype)
    if where.startswith("other/"):
        files["other/train.py"] = "import torch\n"
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    return {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


def test_a_yaml_setting_the_option_to_fp16_makes_the_fsdp_policy_half(tmp_path):
    assert _project(tmp_path, "fp16") == {"train.py": "fp16-master"}
    codes = {code for _, code in hazard_findings(tmp_path / "p")}
    assert "AMP102" in codes, codes


def test_the_dict_literal_table_reads_the_yaml_too(tmp_path):
    assert _project(tmp_path, "fp16", table=LITERAL) == {"train.py": "fp16-master"}


def test_the_default_alone_stays_bf16(tmp_path):
    assert _project(tmp_path, None) == {"train.py": "bf16"}


def test_a_yaml_that_says_bf16_stays_bf16(tmp_path):
    assert _project(tmp_path, "bf16") == {"train.py": "bf16"}
    assert "AMP102" not in {code for _, code in hazard_findings(tmp_path / "p")}


def test_another_programs_yaml_is_not_read(tmp_path):
    assert _project(tmp_path, "fp16", where="other/configs/small.yaml") == {"train.py": "bf16"}
