"""A dtype looked up in a dict of dtypes by an option: read for an autocast (the run's choice among
its values, llm.c's ``--dtype``), not for a cast of the model (llm-foundry's ``master_weights_dtype``:
an option no shipped config sets, the model stays float32)."""
import textwrap

from training_util import lines

BUILDERS = """
import torch

def build_model(hidden, master_weights_dtype=None):
    model = torch.nn.Linear(hidden, 1)
    to_dtype = {"f16": torch.float16, "bf16": torch.bfloat16}
    if master_weights_dtype is not None:
        dtype = to_dtype[master_weights_dtype]
        model = model.to(dtype=dtype)
    return model
"""

TRAIN = """
import torch
from builders import build_model

def train(cfg):
    model = build_model(cfg["hidden"], master_weights_dtype=cfg.pop("master_weights_dtype", None))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for x in cfg["data"]:
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
"""


def test_an_optional_cast_by_a_dtype_lookup_is_no_half_model():
    assert lines("AMP101", TRAIN, extra_files={"builders.py": textwrap.dedent(BUILDERS)}) == []


def test_near_miss_a_written_half_cast_still_is():
    builders = BUILDERS.replace("model = model.to(dtype=dtype)", "model = model.to(dtype=dtype)\n    model = model.half()")
    assert lines("AMP101", TRAIN, extra_files={"builders.py": textwrap.dedent(builders)}) == [7]
