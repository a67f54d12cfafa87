"""AMP302 / AMP303 follow the branch that scaled the loss (audiocraft's solvers: ``if self.scaler is
not None: loss = self.scaler.scale(loss)`` ... ``if self.scaler is None: optimizer.step()``), and keep
the AMP switch's branches apart in a loop body with many other ``if`` statements (llama-recipes'
``if cfg.use_fp16: ... else: ...`` among a dozen logging switches)."""
import textwrap

import pytest

from training_util import lines

SOLVER = """
import torch


class Solver:
    def __init__(self, model, optimizer, cfg):
        self.model, self.optimizer, self.cfg = model, optimizer, cfg
        self.scaler = None
        if cfg.autocast_dtype == torch.float16:
            self.scaler = torch.amp.GradScaler("cuda")

    def run_step(self, batch):
        with torch.autocast("cuda", dtype=torch.float16, enabled=self.cfg.autocast):
            loss = self.model(batch)
        if self.scaler is not None:
            loss = self.scaler.scale(loss)
        loss.backward()
        UNSCALE
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        if self.scaler is None:
            self.optimizer.step()
        else:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        self.optimizer.zero_grad()
"""
def line_of(source, text):
    """The 1-based line of the first line of ``source`` that holds ``text``."""
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


UNSCALE = "if self.scaler is not None:\n            self.scaler.unscale_(self.optimizer)"


def test_the_path_without_the_scaler_is_plain():
    source = SOLVER.replace("UNSCALE", UNSCALE)
    assert lines("AMP302", source) == [] and lines("AMP303", source) == []


def test_near_miss_no_unscale_on_the_scaled_path_is_reported():
    source = SOLVER.replace("UNSCALE", "pass")
    assert lines("AMP302", source) == [line_of(source, "clip_grad_norm_")]


def test_near_miss_an_unconditional_scale_then_a_plain_step_is_reported():
    source = SOLVER.replace("UNSCALE", UNSCALE).replace(
        "        if self.scaler is not None:\n            loss = self.scaler.scale(loss)\n",
        "        loss = self.scaler.scale(loss)\n").replace(
        "        if self.scaler is None:\n            self.optimizer.step()\n        else:\n"
        "            self.scaler.step(self.optimizer)\n            self.scaler.update()\n",
        "        self.optimizer.step()\n")
    assert lines("AMP303", source) == [line_of(source, "self.optimizer.step()")]


LOOP = """
import torch
from contextlib import nullcontext


def train(model, loader, optimizer, cfg, log):
    scaler = torch.amp.GradScaler("cuda") if cfg.use_fp16 else None
    autocast = torch.autocast if cfg.use_fp16 else nullcontext
    for step, batch in enumerate(loader):
        with autocast("cuda"):
            loss = model(**batch).loss
        LOGGING
        if cfg.use_fp16:
            scaler.scale(loss).backward()
            if (step + 1) % cfg.accum == 0:
                if cfg.clip > 0:
                    UNSCALE
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
                scaler.step(optimizer)
                scaler.update()
        else:
            loss.backward()
            if (step + 1) % cfg.accum == 0:
                if cfg.clip > 0:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
                optimizer.step()
        if cfg.use_profiler:
            log.append(step)
        if cfg.wandb:
            if not cfg.enable_fsdp or cfg.rank == 0:
                log.append(step)
"""
# enough independent switches to pass the walk's bound on paths
LOGGING = "\n        ".join(f"if cfg.log_{i}:\n            log.append({i})" for i in range(8))


@pytest.mark.parametrize("unscale, reported", [
    ("scaler.unscale_(optimizer)", False),
    ("pass", True),  # near miss: the fp16 branch clips scaled gradients
])
def test_the_amp_switch_stays_apart_past_the_path_bound(unscale, reported):
    source = LOOP.replace("LOGGING", LOGGING).replace("UNSCALE", unscale)
    assert lines("AMP302", source) == ([line_of(source, "clip_grad_norm_")] if reported else [])
    assert lines("AMP303", source) == []
