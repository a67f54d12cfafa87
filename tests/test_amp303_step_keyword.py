"""``scaler.step(optimizer=...)`` written with the keyword is a scaler step (ml-cvnets' training engine,
set-17 triage T17-2): its accumulation loop unscale_s, steps, updates and clears the gradients under
one condition, but the keyword step was not read, so AMP303 said "unscale_ runs on iterations that
do not step". Near miss: the same loop with no step at all keeps the finding."""
from training_util import lines

LOOP = """
import torch


class Trainer:
    def __init__(self, model, optimizer, gradient_scaler):
        self.model = model
        self.optimizer = optimizer
        self.gradient_scaler = gradient_scaler

    def _zero_grad(self):
        self.optimizer.zero_grad(set_to_none=True)

    def train_epoch(self, loader, accum_freq=2):
        for batch_id, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.gradient_scaler.scale(loss).backward()
            if (batch_id + 1) % accum_freq == 0:
                self.gradient_scaler.unscale_(self.optimizer)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm=1.0)
{step}
                self.gradient_scaler.update()
                self._zero_grad()
"""


def test_a_keyword_step_is_a_step():
    assert lines("AMP303", LOOP.replace("{step}", "                self.gradient_scaler.step(optimizer=self.optimizer)")) == []


def test_near_miss_no_step():
    assert lines("AMP303", LOOP.replace("{step}", "                pass")) != []
