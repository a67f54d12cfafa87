"""A branch test that names the AMP switch twice (``if use_fp16 and scaler is not None:``, FunASR's
trainer) and its ``else`` are the two sides of the switch, as ``if use_fp16:`` / ``else:`` are: the
else's ``loss.backward()`` / ``optim.step()`` run only without the scaler (T10-2). Near miss: a
``scaler.step`` outside the switch still follows the else's unscaled backward."""
import textwrap

from amplint.api import lint_source

LOOP = """
import torch


def train(model, optim, loader, use_fp16):
    scaler = torch.amp.GradScaler("cuda") if use_fp16 else None
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=use_fp16):
            loss = model(x).float().pow(2).mean()
        if use_fp16 and scaler is not None:
            scaler.scale(loss).backward()
        else:
            loss.backward()
{step}
        optim.zero_grad(set_to_none=True)
"""

SWITCHED = """
        if use_fp16 and scaler is not None:
            scaler.step(optim)
            scaler.update()
        else:
            optim.step()"""

ALWAYS = """
        scaler.step(optim)
        scaler.update()"""


def amp303(step):
    src = textwrap.dedent(LOOP).replace("{step}", textwrap.indent(textwrap.dedent(step).strip("\n"), " " * 8))
    return [f for f in lint_source(src) if f.code == "AMP303"]


def test_the_else_of_a_conjoined_switch_is_the_run_without_the_scaler():
    assert amp303(SWITCHED) == []


def test_a_scaler_step_outside_the_switch_still_follows_the_unscaled_backward():
    found = amp303(ALWAYS)
    assert [f.line for f in found] == [13], found
    assert "`loss.backward()` is not scaled" in found[0].message
