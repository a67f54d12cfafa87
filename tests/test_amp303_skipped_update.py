"""AMP303: a ``continue`` under a non-finite check that skips ``scaler.update()`` (FunASR's trainer,
unseen set 10 M10-1): exactly the overflowing steps skip the update that would lower the loss scale,
so a scale too large keeps every step overflowing and skipped; after an ``unscale_`` of the same
iteration the next ``unscale_`` raises. Near misses: the update called before the ``continue``, a
``continue`` on a data check (not a non-finite one), and a check after the update."""
import textwrap

import pytest

from amplint.api import lint_source

LOOP = """
import torch


def train(model, optim, loader):
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        if x is None:
            continue
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        {unscale}
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
        if not torch.isfinite(grad_norm):
            optim.zero_grad()
            {before}
            continue
        scaler.step(optim)
        scaler.update()
        optim.zero_grad(set_to_none=True)
"""


def amp303(unscale="", before=""):
    src = textwrap.dedent(LOOP).replace("{unscale}", unscale or "pass").replace("{before}", before or "pass")
    return [f for f in lint_source(src) if f.code == "AMP303"]


def test_a_skip_after_unscale_raises_at_the_next_unscale():
    [f] = amp303(unscale="scaler.unscale_(optim)")
    assert f.line == 18 and f.confidence == "certain"
    assert "never backs off" in f.message and "unscale_(optim)` raises" in f.message
    assert f.related[0].line == 20


def test_a_skip_without_unscale_keeps_the_scale_from_backing_off():
    # (the clip of still-scaled gradients is AMP302's)
    [f] = amp303()
    assert f.line == 18 and f.confidence == "likely" and "raises" not in f.message


@pytest.mark.parametrize("before", ["scaler.update()", "scaler.step(optim); scaler.update()"])
def test_an_update_before_the_continue_is_no_skip(before):
    assert amp303(unscale="scaler.unscale_(optim)", before=before) == []


def test_a_non_finite_check_after_the_update_is_no_skip():
    src = textwrap.dedent(LOOP).replace("{unscale}", "scaler.unscale_(optim)").replace("{before}", "pass")
    src = src.replace("        scaler.step(optim)\n        scaler.update()\n", "")
    src = src.replace("        grad_norm = torch", "        scaler.step(optim)\n        scaler.update()\n        grad_norm = torch")
    assert [f for f in lint_source(src) if f.code == "AMP303" and "continue" in f.message] == []
