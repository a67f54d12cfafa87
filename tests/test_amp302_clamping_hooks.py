"""AMP302 on gradient clipping done by hooks (allennlp's ``enable_gradient_clipping``, held-out bug
B15, fixed upstream by clipping after unscale_): ``p.register_hook(lambda g: g.clamp(-c, c))`` runs
during the backward, so under ``scaler.scale(loss).backward()`` it clamps gradients multiplied by the
loss scale. Registered in the step's function (directly or through a helper of this file or another
file), or in a method of its class before it runs the step. Near misses: a hook that does not clamp,
hooks with an unscaled backward, a hook registered after the last scaled backward."""
import pytest

from training_util import lines

TRAINER = """
import torch


def enable_gradient_clipping(model, c):
    for p in model.parameters():
        p.register_hook({hook})


class Trainer:
    def __init__(self, model, optimizer, c, use_amp):
        self.model, self.optimizer, self.c = model, optimizer, c
        self.scaler = torch.amp.GradScaler("cuda") if use_amp else None

    def train(self, loader):
        enable_gradient_clipping(self.model, self.c)
        for epoch in range(3):
            self.train_epoch(loader)

    def train_epoch(self, loader):
        for x, y in loader:
            self.optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            {backward}
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""
CLAMP = "lambda grad: grad.clamp(-c, c)"
SCALED = "self.scaler.scale(loss).backward()"


def source(hook=CLAMP, backward=SCALED):
    return TRAINER.replace("{hook}", hook).replace("{backward}", backward)


@pytest.mark.parametrize("name, hook", [
    ("grad.clamp", CLAMP),
    ("torch.clamp", "lambda g: torch.clamp(g, min=-c, max=c)"),
])
def test_a_clamping_hook_registered_before_the_step(name, hook):
    assert lines("AMP302", source(hook=hook)) == [16], name


def test_registered_in_the_step_itself():
    src = source().replace("            self.optimizer.zero_grad()\n",
                           "            self.optimizer.zero_grad()\n            enable_gradient_clipping(self.model, self.c)\n")
    assert lines("AMP302", src) == [16, 23]


@pytest.mark.parametrize("name, hook, backward", [
    ("a hook that records, not clamps", "lambda grad: print(grad.norm())", SCALED),
    ("an unscaled backward", CLAMP, "loss.backward()"),
])
def test_near_misses(name, hook, backward):
    assert lines("AMP302", source(hook=hook, backward=backward)) == [], name
