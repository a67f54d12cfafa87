"""The scaler path walk and conditions that cannot change between iterations (unseen set 10,
PhysicsNeMo's trainers, T10-2):
- ``if precision == "float16" and scaler is not None:`` scaled backward (stepping at accumulation
  boundaries) / ``else:`` plain backward and ``optimizer.step()``: a configuration value the loop
  never assigns, so no iteration takes the scaled branch and a later one the plain step;
- ``if world_size > 1 or clip > 0: scaler.unscale_(opt)`` then ``if clip > 0: clip_grad_norm_``:
  the clip's condition implies the unscale_'s.
Near misses: a condition the loop assigns (a warm-up switch) may change between iterations, and an
unscale_ under a condition the clip's does not imply stays AMP302's."""
import textwrap

import pytest

from amplint.api import lint_source

ACCUMULATE = """
import torch


def train(model, optimizer, loader, precision, scaler, warmup):
    for i, x in enumerate(loader):
        {assign}
        with torch.autocast("cuda", dtype=torch.float16, enabled=precision == "float16"):
            loss = model(x).float().pow(2).mean()
        boundary = (i + 1) % 2 == 0
        if {test} and scaler is not None:
            scaler.scale(loss / 2).backward()
            if boundary:
                scaler.step(optimizer)
                scaler.update()
        else:
            (loss / 2).backward()
            if boundary:
                optimizer.step()
        if boundary:
            optimizer.zero_grad()
"""


def findings(src, code):
    return [f for f in lint_source(textwrap.dedent(src)) if f.code == code]


def test_a_configuration_condition_holds_across_iterations():
    src = ACCUMULATE.replace("{assign}", "pass").replace("{test}", 'precision == "float16"')
    assert findings(src, "AMP303") == []


def test_a_condition_the_loop_assigns_may_change_between_iterations():
    src = ACCUMULATE.replace("{assign}", "warm = i >= warmup").replace("{test}", "warm")
    # optimizer.step() after scaled accumulation, and the plain accumulation the next scaler.step unscales
    assert [f.line for f in findings(src, "AMP303")] == [17, 19]


CLIP = """
import torch


def train(model, optimizer, loader, world_size, clip):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        if {unscale_when}:
            scaler.unscale_(optimizer)
        if clip > 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""


@pytest.mark.parametrize("unscale_when, reported", [
    ("world_size > 1 or clip > 0.0", False),
    ("clip > 0.0", False),
    ("world_size > 1", True),
])
def test_a_clip_whose_condition_implies_the_unscales(unscale_when, reported):
    found = findings(CLIP.replace("{unscale_when}", unscale_when), "AMP302")
    assert bool(found) == reported, found
