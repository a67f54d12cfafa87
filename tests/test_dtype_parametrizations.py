"""A parametrization's ``forward`` receives the original parameter: ``register_parametrization(m,
"weight", WeightStandardizer())`` (composer's weight standardization, T5-1). Under fp16 autocast the
parameter stays float32 (autocast casts op inputs, never parameters), so ``sqrt(var + 1e-10)`` of
it is no float16 hazard. Near misses: the same module in a half model (``model.half()``: the
parameter is float16); the same class used as an ordinary layer on activations under autocast."""
import textwrap

from amplint.api import lint_source

SRC = """
import torch
from torch import nn
from torch.nn.utils import parametrize


def _standardize(W):
    var, mean = torch.var_mean(W, dim=[1, 2, 3], keepdim=True, unbiased=False)
    return (W - mean) / torch.sqrt(var + 1e-10)


class Standardizer(nn.Module):
    def forward(self, W):
        return _standardize(W)


def apply(model):
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            {use}


def train(model, loader, opt):
    apply(model)
    {cast}
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""
REGISTER = 'parametrize.register_parametrization(m, "weight", Standardizer())'


def amp102_lines(use=REGISTER, cast="pass"):
    src = textwrap.dedent(SRC).replace("{use}", use).replace("{cast}", cast)
    return [f.line for f in lint_source(src, filename="train.py") if f.code == "AMP102"]


def test_the_parametrized_weight_is_float32_under_autocast():
    assert amp102_lines() == []


def test_near_miss_a_half_model():
    assert amp102_lines(cast="model.half()") == [9]


def test_near_miss_the_module_run_on_activations():
    use = "m.register_forward_hook(lambda mod, inp, out: Standardizer()(out))"
    # not registered as a parametrization: a tensor argument of forward under fp16 autocast, as before
    assert amp102_lines(use=use) == [9]
