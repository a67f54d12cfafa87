"""AMP304: a trainer method that raises on a non-finite loss and runs the scaled backward and the
scaler step in local closures, with the float16 autocast in a sibling ``forward`` method (a
training template's ``backward_and_step``, fixed upstream by not raising when a GradScaler is in
use), and its near misses."""
from training_util import found, lines

TRAINER = """
import math

import torch


class Trainer:
    def __init__(self, model, optimizer, amp=True):
        self.model = model
        self.optimizer = optimizer
        self.scaler = torch.amp.GradScaler("cuda") if amp else None

    def forward(self, x, y):
        with torch.autocast("cuda", dtype=DTYPE, enabled=self.scaler is not None):
            loss = torch.nn.functional.mse_loss(self.model(x), y)
        return loss

    def backward_and_step(self, loss):
        def _backward():
            if self.scaler is not None:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()

        def _optimize():
            if self.scaler is not None:
                self.scaler.step(self.optimizer)
                self.scaler.update()
            else:
                self.optimizer.step()
            self.optimizer.zero_grad()

        if not math.isfinite(loss):
            raise ValueError(f"Loss is {loss}, stopping training.")
        _backward()
        _optimize()


def train_one_epoch(trainer, loader):
    for x, y in loader:
        loss = trainer.forward(x, y)
        trainer.backward_and_step(loss)
"""

FP16 = TRAINER.replace("DTYPE", "torch.float16")
RAISE = 34
AUTOCAST = 14


def test_the_raise_in_the_method_whose_closures_step_the_scaler_is_flagged():
    (line, message), = found("AMP304", FP16)
    assert line == RAISE
    assert "first non-finite `loss`" in message


def test_it_is_likely_and_names_the_autocast_of_the_sibling_method():
    from amplint.api import lint_source
    finding, = [f for f in lint_source(FP16) if f.code == "AMP304"]
    assert finding.confidence == "likely"
    assert any("float16 autocast" in e.what and e.line == AUTOCAST for e in finding.evidence)


def test_the_upstream_fix_raises_only_without_a_scaler():
    fixed = FP16.replace("if not math.isfinite(loss):", "if not math.isfinite(loss) and self.scaler is None:")
    assert lines("AMP304", fixed) == []


def test_near_miss_bf16_autocast_beside_a_left_over_scaler():
    """bfloat16 autocast: the GradScaler has nothing to skip, a stop at a non-finite loss is a policy."""
    assert lines("AMP304", TRAINER.replace("DTYPE", "torch.bfloat16")) == []


def test_near_miss_closures_without_loss_scaling():
    """The same trainer without a GradScaler (a plain backward and step in the closures): the
    autocast sits in another method, and without loss scaling nothing expects non-finite steps."""
    plain = (FP16.replace('self.scaler = torch.amp.GradScaler("cuda") if amp else None', "self.scaler = None")
             .replace("self.scaler.scale(loss).backward()", "loss.backward()")
             .replace("self.scaler.step(self.optimizer)", "self.optimizer.step()")
             .replace("self.scaler.update()", "pass"))
    assert lines("AMP304", plain) == []


def test_near_miss_a_closure_defined_but_not_called_is_not_the_step():
    """A function defined in the method but never called by it is not part of its step."""
    uncalled = FP16.replace("        _backward()\n        _optimize()\n", "        return _backward, _optimize\n")
    assert lines("AMP304", uncalled) == []
