"""AMP305 forward-loss-fail-fast (off by default): the training step's own sys.exit / assert on a
non-finite forward loss; every other stop stays AMP304's."""
import textwrap

import pytest

from training_util import found, lines

SELECT = ("ALL", "AMP305")
SCALER = "import torch\nscaler = torch.amp.GradScaler('cuda')\n"

DEIT = """
    import math
    import sys
    import torch

    def train_one_epoch(model, loader, optimizer, loss_scaler):
        for samples, targets in loader:
            with torch.cuda.amp.autocast():
                outputs = model(samples)
                loss = criterion(outputs, targets)
            loss_value = loss.item()
            if not math.isfinite(loss_value):
                print("Loss is {}, stopping training".format(loss_value))
                sys.exit(1)
            loss_scaler(loss, optimizer)
    """

ASSERT_OUTPUTS = """
    import torch as th

    def step(model, x, opt, scaler):
        with th.autocast("cuda", dtype=th.float16):
            logits = model(x)
            loss = logits.logsumexp(-1).mean()
        assert not logits.isnan().any(), "NaN logits"
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    """

# The same step, with the stop written in ways AMP304 keeps: (edit of the DeiT source, AMP304's line).
AMP304_STOPS = [
    ("a raise in the step", ("sys.exit(1)", "raise RuntimeError('non-finite loss')"), 14),
    ("the gradient norm checked", ("loss_value = loss.item()", "loss_value = loss.item(); grad_norm = clip(model)"),
     14),
]


@pytest.mark.parametrize("name, source, line", [
    ("DeiT / MAE style: math.isfinite of loss.item(), sys.exit, no backward in the function", DEIT, 14),
    ("assert on the outputs, alias torch as th", ASSERT_OUTPUTS, 8),
])
def test_the_steps_own_fail_fast_on_the_forward_loss(name, source, line):
    assert lines("AMP305", source, select=SELECT, extra_files={"amp.py": SCALER}) == [line], name
    assert lines("AMP304", source, select=SELECT, extra_files={"amp.py": SCALER}) == [], name


def test_off_by_default():
    assert lines("AMP305", DEIT, extra_files={"amp.py": SCALER}) == []
    assert lines("AMP304", DEIT, extra_files={"amp.py": SCALER}) == []


def test_message_says_why_and_what_to_do():
    (_, message), = found("AMP305", DEIT, select=SELECT, extra_files={"amp.py": SCALER})
    assert "`sys.exit`" in message and "`loss_value`" in message and "GradScaler would skip" in message


@pytest.mark.parametrize("name, edit, line", AMP304_STOPS)
def test_other_stops_stay_amp304s(name, edit, line):
    source = DEIT.replace(*edit)
    if name == "the gradient norm checked":
        source = source.replace("math.isfinite(loss_value)", "math.isfinite(grad_norm)")
    assert lines("AMP304", source, select=SELECT, extra_files={"amp.py": SCALER}) == [line], name
    assert lines("AMP305", source, select=SELECT, extra_files={"amp.py": SCALER}) == [], name


def test_a_helper_that_exits_stays_amp304s():
    source = """
        import sys
        import torch
        def check_loss(loss):
            if torch.isnan(loss):
                sys.exit(1)
        def train(model, loader, opt, scaler):
            for x, y in loader:
                with torch.autocast("cuda"):
                    loss = model(x, y)
                check_loss(loss)
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
        """
    assert lines("AMP304", source, select=SELECT) == [6]
    assert lines("AMP305", source, select=SELECT) == []


@pytest.mark.parametrize("name, edit", [
    ("bfloat16 autocast", ("torch.cuda.amp.autocast()", "torch.autocast('cuda', dtype=torch.bfloat16)")),
    ("a threshold on a counter", ("if not math.isfinite(loss_value):", "if not math.isfinite(loss_value) and bad > 9:")),
])
def test_near_misses(name, edit):
    source = DEIT.replace(*edit)
    assert lines("AMP305", source, select=SELECT, extra_files={"amp.py": SCALER}) == [], name
    assert lines("AMP304", source, select=SELECT, extra_files={"amp.py": SCALER}) == [], name


def test_a_test_module_is_not_a_training_run():
    assert lines("AMP305", textwrap.dedent(DEIT), select=SELECT, filename="tests/test_engine.py",
                 extra_files={"amp.py": SCALER}) == []
