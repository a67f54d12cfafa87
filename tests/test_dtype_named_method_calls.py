"""A method no call resolves to, called through an object the project index does not type
(ai-toolkit's trainer: ``loss = self.sd.scale_loss(loss)`` on the model plugin it is handed, after
``loss = F.mse_loss(pred.float(), target.float(), reduction="none")``; triage set 11, T11-5): the
calls written with its name are the calls that run it, and when every one passes a value known not
to be float16, its parameter is not float16 by the regime's guess (here the library policy's).
Near misses: a call of that name passing a float16 product, one passing a value of unknown dtype, and
one with more arguments than the method takes (another class's method)."""
import textwrap

import pytest

from amplint.api import lint_source

MODEL = """
import torch
from toolkit.base_model import BaseModel


class LTXModel(BaseModel):
    def __init__(self, unet):
        super().__init__(unet)
        self._loss_mask = None

    def scale_loss(self, loss):
        if self._loss_mask is not None:
            loss_mask = self._loss_mask.to(loss.device, dtype=loss.dtype)
            loss = loss * loss_mask / loss_mask.mean().clamp(min=1e-8)
        return loss
"""

BASE = """
class BaseModel:
    def __init__(self, unet):
        self.unet = unet

    def scale_loss(self, loss):
        return loss
"""

TRAIN = """
import torch
import torch.nn.functional as F
from accelerate import Accelerator


class Trainer:
    def __init__(self, sd, params):
        self.sd = sd
        self.accelerator = Accelerator()
        self.optimizer = torch.optim.AdamW(params, lr=1e-4)
        self.sd.unet, self.optimizer = self.accelerator.prepare(self.sd.unet, self.optimizer)

    def train_step(self, latents, target):
        pred = self.sd.unet(latents)
        loss = F.mse_loss(pred.float(), target.float(), reduction="none")
        loss = self.sd.scale_loss({passed})
        loss = loss.mean()
        self.accelerator.backward(loss)
        self.optimizer.step()
"""

VAE = """
import torch


def run(vae, loader):
    opt = torch.optim.Adam(vae.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast(device_type="cuda"):
            loss = (vae(x) - x).abs().mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        opt.zero_grad()
"""


def codes(passed="loss"):
    files = {"toolkit/__init__.py": "", "toolkit/base_model.py": textwrap.dedent(BASE), "extensions/__init__.py": "",
             "extensions/ltx/__init__.py": "", "train.py": textwrap.dedent(TRAIN).format(passed=passed),
             "toolkit/train_vae.py": textwrap.dedent(VAE)}  # (a loop of the package: its users pick the precision)
    return [f.code for f in lint_source(textwrap.dedent(MODEL), filename="extensions/ltx/model.py", extra_files=files,
                                        select=("AMP102",))]


@pytest.mark.parametrize("name, passed, expected", [
    ("every call of that name passes float32", "loss", []),
    ("near miss: a call of that name passes a float16 product", "torch.matmul(pred, pred)", ["AMP102"]),
    ("near miss: a call of that name passes a value of unknown dtype", "self.sd.unet(latents).sample", ["AMP102"]),
    ("near miss: the call takes more arguments than the method", "loss, target", ["AMP102"]),
])
def test_calls_by_name(name, passed, expected):
    assert codes(passed) == expected, name
