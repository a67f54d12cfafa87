"""AMP302 after a framework's backward that scales the loss under its float16 mixed precision:
Lightning's ``self.manual_backward(loss)`` with ``precision="16-mixed"`` (ESAOpenSR's SRGAN clipped
the generator and discriminator gradients between manual_backward and ``opt.step()``; fixed upstream
by unscaling through the precision plugin first), accelerate's and Fabric's ``backward(loss)``."""
import textwrap

import pytest

from training_util import found, lines

GAN = """
import lightning.pytorch as pl
import torch


class GAN(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.automatic_optimization = False

    def training_step(self, batch, batch_idx):
        opt_g, opt_d = self.optimizers()
        d_loss = self.d_loss(batch)
        opt_d.zero_grad()
        self.manual_backward(d_loss)
        torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), 1.0)
        opt_d.step()
"""

TRAIN = """
import lightning.pytorch as pl
from snippet import GAN

trainer = pl.Trainer(precision="{precision}")
trainer.fit(GAN(), data)
"""


def _train(precision):
    return {"train.py": textwrap.dedent(TRAIN.format(precision=precision))}


def test_a_clip_between_manual_backward_and_the_step_under_16_mixed():
    (line, message), = found("AMP302", GAN, extra_files=_train("16-mixed"))
    assert line == 16
    assert "self.manual_backward(d_loss)" in message and "65536" in message


@pytest.mark.parametrize("name, source, precision", [
    ("bf16: no loss scale", GAN, "bf16-mixed"),
    ("32-bit", GAN, "32"),
    ("Lightning's own clip, which unscales first", GAN.replace(
        "torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), 1.0)",
        'self.clip_gradients(opt_d, gradient_clip_val=1.0, gradient_clip_algorithm="norm")'), "16-mixed"),
    ("unscaled through the precision plugin first (the upstream fix)", GAN.replace(
        "        torch.nn.utils.clip_grad_norm_",
        "        self.trainer.precision_plugin.unscale_optimizer(opt_d)\n        torch.nn.utils.clip_grad_norm_"), "16-mixed"),
    ("the clip after the step", GAN.replace(
        "        torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), 1.0)\n        opt_d.step()",
        "        opt_d.step()\n        torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), 1.0)"), "16-mixed"),
])
def test_lightning_near_misses(name, source, precision):
    assert lines("AMP302", source, extra_files=_train(precision)) == [], name


ACCELERATE = """
import torch
from accelerate import Accelerator

accelerator = Accelerator(mixed_precision="{mp}")
model, opt, loader = accelerator.prepare(model, opt, loader)
for x in loader:
    loss = model(x)
    accelerator.backward(loss)
    {clip}
    opt.step()
    opt.zero_grad()
"""


def test_accelerate_backward_then_torch_clip_under_fp16():
    source = ACCELERATE.format(mp="fp16", clip="torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)")
    (line, message), = found("AMP302", source)
    assert line == 10 and "accelerator.backward(loss)" in message


@pytest.mark.parametrize("mp, clip", [
    ("bf16", "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)"),
    ("fp16", "accelerator.clip_grad_norm_(model.parameters(), 1.0)"),
])
def test_accelerate_near_misses(mp, clip):
    assert lines("AMP302", ACCELERATE.format(mp=mp, clip=clip)) == []


def test_a_closure_that_clips_and_a_configured_precision():
    # ESAOpenSR's real step: the clip in a closure defined in the step; the Trainer is the user's, so
    # the precision is configured (``precision = "fp16-mixed"``) rather than seen
    source = GAN.replace(
        "        opt_g, opt_d = self.optimizers()\n",
        "        opt_g, opt_d = self.optimizers()\n\n        def _maybe_clip(module):\n"
        "            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)\n").replace(
        "        torch.nn.utils.clip_grad_norm_(self.discriminator.parameters(), 1.0)\n",
        "        _maybe_clip(self.discriminator)\n")
    assert lines("AMP302", source, extra_files=_train("16-mixed")) == [19]
    assert lines("AMP302", source, extra_files={"train.py": "import lightning.pytorch as pl\n"}) == []
    assert lines("AMP302", source, extra_files={"train.py": "import lightning.pytorch as pl\n"},
                 precision="fp16-mixed") == [19]
