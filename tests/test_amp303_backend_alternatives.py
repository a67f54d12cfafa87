"""An update in an ``elif`` whose test is the unscale_'s own guard, after a branch that steps the
optimizer another way (HF Trainer 4.x, SimCSE's trainer: ``if is_torch_tpu_available():
xm.optimizer_step(opt)`` / ``elif self.use_amp: scaler.step(opt); scaler.update()`` / ``else:
opt.step()``): the earlier branch is another backend's step, an alternative, not a condition that skips
the update (T9-2). Near misses: the earlier branch does not step (it skips the step: the unscaled
optimizer is never updated), and the elif tests something else than the unscale_'s guard. An earlier
branch the unscale_'s own guard rules out (``if max_grad_norm > 0 and not self.deepspeed: ... unscale_``,
then ``if self.deepspeed: pass`` / ``elif use_amp: step; update``: HF Trainer copies in ProphetNet's JGR,
unseen set 19, T19-1) skips nothing the unscale_ did."""
import textwrap

from amplint.api import lint_source

LOOP = """
import torch
import torch_xla.core.xla_model as xm


def on_tpu():
    return False


def train(model, optimizer, loader, use_amp, skip):
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp)
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16, enabled=use_amp):
            loss = model(x).mean()
        if use_amp:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if {unscale_guard}:
            scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if {first}:
            {alternative}
        elif {guard}:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad()
"""


def amp303(first="on_tpu()", alternative="xm.optimizer_step(optimizer)", guard="use_amp", unscale_guard="use_amp"):
    src = textwrap.dedent(LOOP).format(first=first, alternative=alternative, guard=guard, unscale_guard=unscale_guard)
    return [f.line for f in lint_source(src, filename="train.py") if f.code == "AMP303"]


def test_another_backends_step_before_the_amp_branch():
    assert amp303() == []


def test_plain_step_of_another_branch_is_the_bypass_not_a_missed_update():
    assert amp303(first="skip", alternative="optimizer.step()") == [23]  # optimizer.step() after unscale_


def test_near_miss_the_earlier_branch_skips_the_step():
    assert amp303(first="skip", alternative="pass") == [26]


def test_near_miss_the_elif_tests_something_else():
    assert 26 in amp303(guard="not skip")


def test_an_earlier_branch_the_unscale_guard_rules_out():
    # ``if skip: pass`` / ``elif on_tpu(): xm.optimizer_step(...)`` / ``elif use_amp: step; update``
    chain = "pass\n        elif on_tpu():\n            xm.optimizer_step(optimizer)"
    assert amp303(first="skip", alternative=chain, unscale_guard="use_amp and not skip") == []


def test_near_miss_an_earlier_branch_the_unscale_guard_allows():
    chain = "pass\n        elif on_tpu():\n            xm.optimizer_step(optimizer)"
    assert 28 in amp303(first="skip", alternative=chain)  # the update the skip branch passes by
