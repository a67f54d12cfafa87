"""An autocast that replays the caller's autocast state (TransformerEngine's activation recompute:
`torch.amp.autocast("cuda", enabled=torch.is_autocast_enabled("cuda"), dtype=torch.get_autocast_dtype("cuda"))`,
the arguments written in the call or held in locals) says no precision of its own: a library whose only autocast
is such a replay is library code, not fp16-mixed. So is a module-level `functools.partial(torch.amp.autocast,
device_type="cuda")` that fixes neither dtype nor `enabled`: its calls say what it does. (docs/precision.md;
triage T11-11.)"""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

LOCALS = """
import torch


def get_active_autocast_context():
    enabled = torch.is_autocast_enabled("cuda")
    dtype = torch.get_autocast_dtype("cuda")
    return torch.amp.autocast("cuda", enabled=enabled, dtype=dtype)


def checkpoint(function, *args):
    with torch.no_grad():
        function(*args)
    with get_active_autocast_context():
        return function(*args)
"""

INLINE = """
import torch


def recompute(function, *args):
    with torch.amp.autocast("cuda", enabled=torch.is_autocast_enabled("cuda"),
                            dtype=torch.get_autocast_dtype("cuda")):
        return function(*args)
"""

POSITIONAL = """
import torch


def contexts():
    enabled = torch.is_autocast_enabled()
    dtype = torch.get_autocast_gpu_dtype()
    cached = torch.is_autocast_cache_enabled()
    return torch.cuda.amp.autocast(enabled, dtype, cached)
"""

ALIAS = """
import functools
import torch

gpu_autocast_ctx = functools.partial(torch.amp.autocast, device_type="cuda")


def bias_gelu(bias, y):
    with gpu_autocast_ctx(enabled=False):
        x = bias + y
        return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))
"""

# near misses: a real float16 autocast beside the replay; an alias whose call turns autocast on
REAL = """

def fast_path(function, *args):
    with torch.amp.autocast("cuda", dtype=torch.float16):
        return function(*args)
"""

ALIAS_ON = """

def fused(bias, y):
    with gpu_autocast_ctx():
        return bias + y
"""


@pytest.mark.parametrize("source", [LOCALS, INLINE, POSITIONAL, ALIAS], ids=["locals", "inline", "positional", "alias"])
@pytest.mark.parametrize("near_miss", [None, "real", "alias_on"])
def test_an_autocast_replaying_the_callers_state_is_no_evidence(tmp_path, source, near_miss):
    code = textwrap.dedent(source)
    if near_miss == "real":
        code += textwrap.dedent(REAL)
    elif near_miss == "alias_on":
        if source is not ALIAS:
            pytest.skip("only the alias has calls of its own")
        code += textwrap.dedent(ALIAS_ON)
    root = write_project(tmp_path / "p", {"pyproject.toml": "[project]\nname = 'mylib'\n",
                                          "mylib/__init__.py": "", "mylib/distributed.py": code})
    p = Project(root)
    assert p.entry_points() == []
    regime = p.regime_for(root / "mylib" / "distributed.py")
    if near_miss is None:
        assert regime.library and not regime.signals, regime
    else:
        assert regime.mode == "fp16-mixed", regime
