"""AMP303's path walk tells paths apart by the conditions they took; a condition tested once in the
step (``if args.log_a: print(...)``) makes paths that meet again right after, and k of them made
2**k paths, past the walk's bound, where it forgot the conditions that did matter: the HF Trainer
copies in ChatGLM-6B / LMFlow (unscale_ under ``if self.do_grad_scaling:``, step + update under
``elif self.do_grad_scaling:``) were reported with 4, 6, 10 logging ``if``s and not with 8 (T6-1).
The verdict must not depend on how many unrelated ``if``s there are. Near miss: a branch that
really steps without update() stays reported, whatever their number."""
import textwrap

import pytest

from amplint.api import lint_source

TRAINER = """
import torch
from torch import nn
from transformers.utils import is_sagemaker_mp_enabled, is_torch_tpu_available


class Trainer:
    def __init__(self, model, args):
        self.model = model
        self.deepspeed = None
        self.do_grad_scaling = args.fp16
        self.scaler = torch.amp.GradScaler("cuda")
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, eps=1e-6)

    def training_step(self, inputs):
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.do_grad_scaling):
            loss = self.model(**inputs).loss
        if self.do_grad_scaling:
            self.scaler.scale(loss).backward()
        else:
            loss.backward()

    def train(self, args, loader):
        for step, inputs in enumerate(loader):
{logs}
            self.training_step(inputs)
            if args.max_grad_norm is not None and args.max_grad_norm > 0 and not self.deepspeed:
                if self.do_grad_scaling:
                    if is_torch_tpu_available():
                        print("reduce gradients across TPU cores first")
                    self.scaler.unscale_(self.optimizer)
                if is_sagemaker_mp_enabled() and args.fp16:
                    self.optimizer.clip_master_grads(args.max_grad_norm)
                elif hasattr(self.optimizer, "clip_grad_norm"):
                    nn.utils.clip_grad_norm_(self.model.parameters(), args.max_grad_norm)
            if self.deepspeed:
                pass
            elif is_torch_tpu_available():
                if self.do_grad_scaling:
                    self.scaler.step(self.optimizer)
                    self.scaler.update()
                else:
                    self.optimizer.step()
            elif self.do_grad_scaling:
                self.scaler.step(self.optimizer)
{update}
            else:
                self.optimizer.step()
            self.optimizer.zero_grad()
"""
UPDATE = "                self.scaler.update()"


def amp303(n_logs, update=UPDATE):
    logs = "\n".join(f"            if args.log_{i}:\n                print({i})" for i in range(n_logs)) or "            pass"
    src = textwrap.dedent(TRAINER).replace("{logs}", logs).replace("{update}", update or "                pass")
    return [f.line for f in lint_source(src, filename="trainer.py") if f.code == "AMP303"]


@pytest.mark.parametrize("n_logs", [0, 4, 6, 8, 10, 12])
def test_every_branch_that_unscales_updates(n_logs):
    assert amp303(n_logs) == []


@pytest.mark.parametrize("n_logs", [0, 6, 12])
def test_near_miss_a_branch_steps_without_update(n_logs):
    assert amp303(n_logs, update="") != []
