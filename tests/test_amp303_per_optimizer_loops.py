"""AMP303 on a helper that steps each optimizer of a dict through a GradScaler it receives
(nerfstudio's ``Optimizers.scaler_step_all``, seen in the session-5 triage):

- ``for group, optimizer in self.optimizers.items(): scaler.unscale_(optimizer)`` unscales another
  optimizer each time round (the target unpacked, or ``optimizer = self.optimizers[group]``), so a
  step skipped by an ``if`` does not make the next iteration's unscale_ a second one;
- the scaler is the caller's (a parameter): its ``update()`` may be written under the caller's name
  (``scaler.update()`` after ``helper(scaler)``).

Near misses: the same unscale_ twice within one iteration; an unscale_ of a name the loop does not
bind; no update of any scaler anywhere."""
import pytest

from training_util import lines

STEP_ALL = """
import torch

class Optimizers:
    def __init__(self, params):
        self.parameters = params
        self.optimizers = {name: torch.optim.Adam(p) for name, p in params.items()}

    def scaler_step_all(self, grad_scaler, max_norm):
        for group, params in self.parameters.items():
            {bind}
            if max_norm is not None:
                grad_scaler.unscale_(optimizer)
                {again}
                torch.nn.utils.clip_grad_norm_(params, max_norm)
            if any(p.grad is not None for p in params):
                grad_scaler.step(optimizer)

def train(model, loader):
    optimizers = Optimizers({"a": list(model.a.parameters()), "b": list(model.b.parameters())})
    scaler = torch.amp.GradScaler("cuda")
    for batch in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(batch).mean()
        scaler.scale(loss).backward()
        optimizers.scaler_step_all(scaler, 1.0)
        {update}
"""


def source(bind="optimizer = self.optimizers[group]", again="pass", update="scaler.update()"):
    return STEP_ALL.replace("{bind}", bind).replace("{again}", again).replace("{update}", update)


@pytest.mark.parametrize("name, bind", [
    ("an optimizer looked up by the loop's key", "optimizer = self.optimizers[group]"),
    ("an optimizer unpacked from items()", "pass"),
])
def test_each_iteration_unscales_another_optimizer(name, bind):
    text = source(bind=bind)
    if bind == "pass":
        text = text.replace("for group, params in self.parameters.items():",
                            "for group, optimizer in self.optimizers.items():\n            params = self.parameters[group]")
    assert lines("AMP303", text) == [], name


def test_the_same_optimizer_unscaled_twice_in_one_iteration():
    assert lines("AMP303", source(again="grad_scaler.unscale_(optimizer)")) == [14]


def test_an_optimizer_the_loop_does_not_bind():
    assert lines("AMP303", source(bind="optimizer = self.main_optimizer")) == [13]


def test_the_scaler_the_caller_updates_under_its_own_name():
    assert lines("AMP303", source()) == []


def test_no_scaler_updated_anywhere():
    assert lines("AMP303", source(update="pass")) == [17]
