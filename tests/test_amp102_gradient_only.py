"""A guard under a sqrt (``torch.sqrt(var + 1e-8)``) matters only for the gradient: sqrt(0) = 0 is
fine forward, d sqrt / dx at 0 is inf. AMP102 reports it only where a backward runs through the code:
a training entry point reaches it and no ``no_grad`` / ``inference_mode`` is around it. GPT-SoVITS's
frozen speaker-embedding model (run by a data-preparation script under no_grad) and kornia's
hand-crafted descriptors (library code, whose float16 use may be inference) are silent; speechbrain's
STOI loss (a training loss under autocast) is not. Near misses: a sqrt that is itself a denominator
(forward inf), the same loss outside the no_grad block, a log guard under no_grad."""
import textwrap

import pytest

from amplint.api import lint_source

POOL = """
import torch
from torch import nn


class StatsPool(nn.Module):
    def forward(self, x):
        std = torch.sqrt(torch.var(x, dim=-1) + 1e-8)
        return torch.cat([x.mean(dim=-1), std], dim=-1)
"""

EXTRACT = """
import torch
from pooling import StatsPool


class Embedder:
    def __init__(self):
        self.model = StatsPool().eval()

    def embed(self, feats):
        with torch.no_grad():
            return self.model(feats)
"""

TRAIN = """
import torch
{imports}

def train(model, loader):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y) {extra}
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""

LOSS = """
import torch


def band_loss(pred, band):
    {body}
"""


def amp102(source, filename, extra):
    return [f.line for f in lint_source(textwrap.dedent(source), filename=filename, extra_files=extra)
            if f.code == "AMP102"]


def test_frozen_extractor_no_training_reaches_is_silent():
    extra = {"sv.py": EXTRACT, "train.py": TRAIN.format(imports="", extra="")}
    assert amp102(POOL, "pooling.py", extra) == []


def test_same_module_in_the_training_step_is_reported():
    train = TRAIN.format(imports="from pooling import StatsPool", extra="+ StatsPool()(x).mean()")
    assert amp102(POOL, "pooling.py", {"train.py": train}) == [8]


@pytest.mark.parametrize("name, body, expected", [
    ("a training loss: reported", "return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()", [6]),
    ("under no_grad: no gradient", "with torch.no_grad():\n        return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()", []),
    ("under inference_mode: no gradient", "with torch.inference_mode():\n        return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()", []),
    ("set_grad_enabled(False)", "with torch.set_grad_enabled(False):\n        return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()", []),
    ("near miss: set_grad_enabled(True)", "with torch.set_grad_enabled(True):\n        return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()", [7]),
    ("near miss: a log under no_grad is a forward hazard", "with torch.no_grad():\n        return torch.log(torch.matmul(band, pred) + 1e-14).mean()", [7]),
    ("near miss: a sqrt that divides is a forward hazard", "with torch.no_grad():\n        return (pred / torch.sqrt(torch.matmul(band, pred) + 1e-14)).mean()", [7]),
])
def test_sqrt_guard_needs_a_gradient(name, body, expected):
    train = TRAIN.format(imports="from losses import band_loss", extra="+ band_loss(model(x), x)")
    assert amp102(LOSS.format(body=body), "losses.py", {"train.py": train}) == expected, name


def test_decorated_no_grad_function():
    src = LOSS.format(body="return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()").replace(
        "def band_loss", "@torch.no_grad()\ndef band_loss")
    train = TRAIN.format(imports="from losses import band_loss", extra="+ band_loss(model(x), x)")
    assert amp102(src, "losses.py", {"train.py": train}) == []


LIBRARY = """
import torch


def magnitude(gx, gy, eps: float = 1e-8):
    return torch.sqrt(gx * gx + gy * gy + eps)


def whiten(x, eps: float = 1e-8):
    return x / torch.sqrt(x.var(-1, keepdim=True) + eps)
"""


def test_library_code_reports_only_the_forward_hazard():
    files = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}
    assert amp102(LIBRARY, "pkg/feat.py", files) == [9]
    # with the user's precision configured the gradient is judged too
    found = [f.line for f in lint_source(textwrap.dedent(LIBRARY), filename="pkg/feat.py", extra_files=files,
                                         precision="fp16-mixed") if f.code == "AMP102"]
    assert found == [5, 9]


def test_a_loss_no_entry_point_reaches_is_still_backpropagated():
    """speechbrain's stoi_loss: the package's recipes (outside it) train with it; a loss is what a
    backward starts from, whoever calls it. Near miss: the same sqrt in a feature module is silent."""
    src = LOSS.format(body="return torch.sqrt(torch.matmul(band, pred) + 1e-14).mean()")
    train = {"train.py": TRAIN.format(imports="", extra="")}
    assert amp102(src, "stoi_loss.py", train) == [6]
    assert amp102(src.replace("band_loss", "band_energy"), "features.py", train) == []
