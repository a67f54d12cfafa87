"""An option of an AMP configuration namespace (``config.amp.clip_grad``) is not the AMP switch
(``config.amp.enabled``): taking every test that mentions ``amp`` for the switch made a nested
``if config.amp.clip_grad:`` inside ``if config.amp.enabled:`` the same test again and pruned its
False branch, so the ``optimizer.step()`` after it never saw the scaled gradients (B15-2: NVIDIA
modulus' triplane_unet ``train.py`` before its "Fix AMP." commit). Near misses: the switch read twice
(``if config.amp.enabled:`` around the backward and again around the step) is still one switch, and a
direct step only on the no-scaler branch stays silent."""
import textwrap

from amplint.api import lint_source

LOOP = """
import torch


def main(config, model, optimizer, loader):
    scaler = torch.amp.GradScaler("cuda", enabled=config.amp.enabled)
    for x in loader:
        with torch.autocast("cuda", enabled=config.amp.enabled, dtype=torch.float16):
            loss = model(x).pow(2).mean()
        optimizer.zero_grad()
{step}
"""

# the real shape: the scaler steps only when clipping; every path then steps the optimizer directly
CLIP_ONLY_STEP = """
if config.amp.enabled:
    scaler.scale(loss).backward()
    if config.amp.clip_grad:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.amp.grad_max_norm)
        scaler.step(optimizer)
        scaler.update()
else:
    loss.backward()
optimizer.step()"""

# the fix: the optimizer is stepped through the scaler on the AMP path, directly only without it
FIXED = """
if config.amp.enabled:
    scaler.scale(loss).backward()
    if config.amp.clip_grad:
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.amp.grad_max_norm)
    scaler.step(optimizer)
    scaler.update()
else:
    loss.backward()
    optimizer.step()"""

# the switch tested twice: the step's else is the run without the scaler, as the backward's was
SWITCH_TWICE = """
if config.amp.enabled:
    scaler.scale(loss).backward()
else:
    loss.backward()
if config.amp.clip_grad:
    if config.amp.enabled:
        scaler.unscale_(optimizer)
    torch.nn.utils.clip_grad_norm_(model.parameters(), config.amp.grad_max_norm)
if config.amp.enabled:
    scaler.step(optimizer)
    scaler.update()
else:
    optimizer.step()"""


def amp303(step):
    src = textwrap.dedent(LOOP).replace("{step}", textwrap.indent(textwrap.dedent(step).strip("\n"), " " * 8))
    return [f for f in lint_source(src) if f.code == "AMP303"]


def test_an_optimizer_step_after_a_clip_only_scaler_step_is_reported():
    found = amp303(CLIP_ONLY_STEP)
    assert [f.line for f in found] == [20], found
    assert "optimizer.step()" in found[0].message and "loss scale" in found[0].message


def test_stepping_through_the_scaler_on_the_amp_path_is_silent():
    assert amp303(FIXED) == []


def test_the_switch_read_twice_is_still_one_switch():
    assert amp303(SWITCH_TWICE) == []
