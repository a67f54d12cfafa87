"""AMP303: ``scaler.unscale_(optimizer)`` on micro-batches that do not step (OneTrainer's gradient
accumulation before its fix): update() every iteration keeps unscale_ from raising, but the next
scaled backward adds scaled gradients to unscaled ones."""
import pytest

from training_util import found, lines

ACCUMULATION = """
import torch

def train(model, loader, optimizer, accumulation_steps):
    scaler = torch.amp.GradScaler("cuda")
    for step, batch in enumerate(loader):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(batch).mean() / accumulation_steps
        is_update_step = (step + 1) % accumulation_steps == 0
        scaler.scale(loss).backward()
        {body}
"""

BEFORE_FIX = """scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if is_update_step:
            scaler.step(optimizer)
            optimizer.zero_grad()
        scaler.update()"""


def source(body):
    return ACCUMULATION.replace("{body}", body)


def test_unscale_every_micro_batch_step_on_some():
    (line, message), = found("AMP303", source(BEFORE_FIX))
    assert line == 11
    assert "do not step" in message and "divides them by the loss scale again" in message


def test_zero_grad_before_the_backward_only_on_update_steps():
    """OneTrainer zeroes the gradients under the same condition, before the backward."""
    body = BEFORE_FIX.replace("            optimizer.zero_grad()\n", "")
    text = source(body).replace("        scaler.scale(loss).backward()",
                                "        if is_update_step:\n            optimizer.zero_grad()\n"
                                "        scaler.scale(loss).backward()")
    assert lines("AMP303", text) == [13]


@pytest.mark.parametrize("name, body", [
    ("the upstream fix: unscale_, clip, step and update on update steps only", """if is_update_step:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()"""),
    ("no accumulation: every iteration steps", """scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()"""),
    ("gradients zeroed every iteration (nothing accumulates)", """scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if is_update_step:
            scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()"""),
])
def test_near_misses_stay_silent(name, body):
    assert lines("AMP303", source(body)) == [], name


def test_update_under_the_same_if_is_reported_once_as_the_second_unscale():
    """With update() under the if too, the second micro-batch's unscale_ raises: that message only."""
    body = BEFORE_FIX.replace("        scaler.update()", "            scaler.update()")
    (line, message), = found("AMP303", source(body))
    assert line == 11 and "already been called" in message


TOO_EARLY = """
import torch

def fit(model, loader, clip=1.0):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        if clip is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
"""


def test_unscale_before_the_scaled_backward_of_its_own_iteration():
    """autogluon's TabM loop (set 12): unscale_ and clip before the backward; the step then skips its unscale_."""
    (line, message), = found("AMP303", TOO_EARLY)
    assert line == 12
    assert "before this iteration's scaled backward" in message and "never detected" in message


def test_near_miss_unscale_after_the_backward_right_before_the_step():
    fixed = TOO_EARLY.replace("""        if clip is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        scaler.scale(loss).backward()
""", """        scaler.scale(loss).backward()
        if clip is not None:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
""")
    assert lines("AMP303", fixed) == []
