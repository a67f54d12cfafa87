"""xtuner's v1 engine (triage T11-7): FSDP2's ``fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=
fsdp_config.param_dtype))`` with a config field defaulting to ``torch.bfloat16`` is bf16 evidence, as FSDP's
``MixedPrecision(param_dtype=...)`` is; and the v0 trainer's ``configs/deepspeed/*.json`` are no run of a program
whose code never names DeepSpeed and that hands its model to no framework taking a DeepSpeed config."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

DS = """{
  "zero_optimization": {"stage": 2},
  "fp16": {"enabled": "auto", "initial_scale_power": 16},
  "bf16": {"enabled": "auto"}
}
"""
V0 = """
import argparse
from mmengine.config import Config
from mmengine.runner import Runner


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--deepspeed")
    args = parser.parse_args()
    cfg = Config.fromfile(args.config)
    if args.deepspeed:
        cfg.strategy = dict(type="DeepSpeedStrategy", config=args.deepspeed)
    runner = Runner.from_cfg(cfg)
    runner.train()


if __name__ == "__main__":
    main()
"""
ROUTER = """
import torch
from torch import nn


class Router(nn.Module):
    def __init__(self, dim, n_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.top_k = top_k

    def forward(self, x):
        weights = self.gate(x).sigmoid()
        topk_weights, topk_ids = torch.topk(weights, self.top_k, dim=-1)
        topk_weights = topk_weights / (topk_weights.sum(dim=-1, keepdim=True) + 1e-20)
        return topk_weights, topk_ids
"""
FSDP_CONFIG = """
from dataclasses import dataclass
import torch


@dataclass
class FSDPConfig:
    param_dtype: torch.dtype = {dtype}
    reduce_dtype: torch.dtype = torch.float32
"""
SFT = """
{imports}
import torch
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

from pkg.v1.config import FSDPConfig
from pkg.v1.router import Router


def main(loader, fsdp_config: FSDPConfig):
    model = Router(1024, 64, 8).cuda()
    fully_shard(model, mp_policy=MixedPrecisionPolicy(param_dtype=fsdp_config.param_dtype,
                                                     reduce_dtype=fsdp_config.reduce_dtype))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x in loader:
        w, ids = model(x)
        w.sum().backward()
        optimizer.step()


if __name__ == "__main__":
    main([], FSDPConfig())
"""


def _project(tmp_path, dtype="torch.bfloat16", imports=""):
    return write_project(tmp_path / "p", {
        "pkg/__init__.py": "", "pkg/tools/__init__.py": "", "pkg/v1/__init__.py": "",
        "pkg/configs/deepspeed/deepspeed_zero2.json": DS,
        "pkg/tools/train.py": textwrap.dedent(V0),
        "pkg/v1/router.py": textwrap.dedent(ROUTER),
        "pkg/v1/config.py": textwrap.dedent(FSDP_CONFIG).replace("{dtype}", dtype),
        "pkg/v1/sft.py": textwrap.dedent(SFT).replace("{imports}", imports),
    })


def _modes(root):
    p = Project(root)
    return {ep.display.split("/p/", 1)[1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


@pytest.mark.parametrize("dtype, imports, v1_mode", [
    ("torch.bfloat16", "", "bf16"),  # xtuner's v1 engine: FSDP2 in bf16, no DeepSpeed
    # near misses: a float16 policy is fp16 compute over float32 sharded parameters; a program that runs DeepSpeed
    # (or a framework taking a DeepSpeed config) may be given the JSON: its "auto" fp16 block counts, float16 first
    ("torch.float16", "", "fp16-master"),
    ("torch.bfloat16", "import deepspeed", "fp16-master"),
    ("torch.bfloat16", "from transformers import Trainer", "fp16-master"),
    ("torch.bfloat16", "from transformers import AutoTokenizer", "bf16"),  # a tokenizer takes no DeepSpeed config
])
def test_an_fsdp2_engine_beside_another_trainers_deepspeed_configs(tmp_path, dtype, imports, v1_mode):
    root = _project(tmp_path, dtype, imports)
    modes = _modes(root)
    # the v0 trainer, whose --deepspeed the JSONs are for, keeps them
    assert modes == {"pkg/tools/train.py": "fp16-master", "pkg/v1/sft.py": v1_mode}
    # a 1e-20 guard in the router: 0 in float16, harmless in bfloat16
    r = run(["check", "--no-cache", "--select", "AMP102", "pkg/v1"], root)
    assert ("AMP102" in r.out) is (v1_mode != "bf16"), r.out


def test_deepspeed_named_in_code_not_in_comments():
    from amplint.precision_facts import file_facts
    assert file_facts(b"# import deepspeed\n'''uses deepspeed'''\nx = 1\n", "a.py", "a").get("deepspeed") is None
    assert file_facts(b"parser.add_argument('--deepspeed')\n", "a.py", "a").get("deepspeed") is True


MODEL = """
import torch
from torch import nn
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from pkg.v1.config import FSDPConfig


class BaseModel(nn.Module):
    def fully_shard(self, fsdp_config: FSDPConfig):
        mp_policy = MixedPrecisionPolicy(param_dtype=fsdp_config.param_dtype)
        fully_shard(self, mp_policy=mp_policy)
        return self
"""
ENGINE = """
import importlib
import torch
from pkg.v1.config import FSDPConfig


def main(loader, name):
    model = getattr(importlib.import_module("pkg.v1.models"), name)()
    model = model.{method}(FSDPConfig())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x in loader:
        model(x).sum().backward()
        optimizer.step()
"""


@pytest.mark.parametrize("method, mode", [
    ("fully_shard", "bf16"),  # xtuner's TrainEngine.build_model: `model = model.fully_shard(self.fsdp_cfg)`
    ("to_empty", "fp32"),  # near miss: nothing the engine imports calls the method building the policy
])
def test_an_fsdp2_policy_built_in_a_method_called_on_a_model_the_call_graph_does_not_follow(tmp_path, method, mode):
    root = write_project(tmp_path / "p", {
        "pkg/__init__.py": "", "pkg/v1/__init__.py": "",
        "pkg/v1/config.py": textwrap.dedent(FSDP_CONFIG).replace("{dtype}", "torch.bfloat16"),
        "pkg/v1/base.py": textwrap.dedent(MODEL),
        "pkg/v1/engine.py": "from pkg.v1.base import BaseModel\n" + textwrap.dedent(ENGINE).replace("{method}", method),
    })
    assert _modes(root) == {"pkg/v1/engine.py": mode}
