"""AMP303: ``scaler.unscale_(X)`` then ``scaler.step(X.optimizer)`` (or the other way round) steps an
object the scaler never unscaled, so step() unscales the same gradients again (stable-pretraining's
manual multi-optimizer step under Lightning's 16-mixed: ``unscale_(opt)`` on the LightningOptimizer,
``step(opt.optimizer)`` on the torch optimizer it wraps)."""
import pytest

from training_util import found, lines

LOOP = """
import torch

scaler = torch.amp.GradScaler("cuda")
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x)
    scaler.scale(loss).backward()
    for opt in optimizers:
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt.optimizer)
    scaler.update()
"""


def test_step_of_the_wrapped_optimizer_after_unscaling_the_wrapper():
    (line, message), = found("AMP303", LOOP)
    assert line == 12
    assert "scaler.unscale_(opt)" in message and "second time" in message and "65536" in message


def test_the_other_way_round():
    source = LOOP.replace("scaler.unscale_(opt)", "scaler.unscale_(opt.optimizer)").replace(
        "scaler.step(opt.optimizer)", "scaler.step(opt)")
    assert lines("AMP303", source) == [12]


@pytest.mark.parametrize("name, old, new", [
    ("the same object unscaled and stepped", "scaler.step(opt.optimizer)", "scaler.step(opt)"),
    ("the stepped object unscaled as well", "scaler.unscale_(opt)", "scaler.unscale_(opt)\n        scaler.unscale_(opt.optimizer)"),
    ("another optimizer stepped without unscale_ (step unscales it once)", "scaler.step(opt.optimizer)",
     "scaler.step(opt)\n        scaler.step(other)"),
    ("an update between the unscale_ and the step", "scaler.step(opt.optimizer)",
     "scaler.update()\n        scaler.step(opt.optimizer)"),
])
def test_near_misses(name, old, new):
    assert lines("AMP303", LOOP.replace(old, new)) == [], name
