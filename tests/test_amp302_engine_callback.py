"""A clip between an engine object's scaled backward and its scaler step (catalyst's
OptimizerCallback: ``runner.engine.backward_loss(loss, ...)``, whose AMPEngine method runs
``self.scaler.scale(loss).backward()``, then the clip, then ``runner.engine.optimizer_step(...)``):
the clip sees scaled gradients (bug set 6, B33). The clip may be a callable named for it
(``self.grad_clip_fn(self.model.parameters())``). Near misses: the upstream fix
(``if hasattr(runner.engine, "scaler"): runner.engine.scaler.unscale_(self.optimizer)`` first); an
engine whose backward method does not scale; the clip after the step."""
import textwrap

import pytest

from amplint.api import lint_source

ENGINE = """
import torch


class AMPEngine:
    def __init__(self):
        self.scaler = torch.amp.GradScaler("cuda")

    def backward_loss(self, loss, model, optimizer):
        self.scaler.scale(loss).backward()

    def optimizer_step(self, loss, model, optimizer):
        self.scaler.step(optimizer)
        self.scaler.update()
"""
PLAIN_ENGINE = ENGINE.replace("self.scaler.scale(loss).backward()", "loss.backward()")
CALLBACK = """
import torch
from functools import partial


class OptimizerCallback:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.grad_clip_fn = partial(torch.nn.utils.clip_grad_norm_, max_norm=1.0)

    def on_batch_end(self, runner, loss):
        runner.engine.backward_loss(loss, self.model, self.optimizer)
        {fix}
        {clip}
        runner.engine.optimizer_step(loss, self.model, self.optimizer)
        {after}
"""
FIX = 'if hasattr(runner.engine, "scaler"):\n            runner.engine.scaler.unscale_(self.optimizer)'
CLIPS = ["torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)", "self.grad_clip_fn(self.model.parameters())"]


def amp302(clip, fix="pass", after="pass", engine=ENGINE):
    src = textwrap.dedent(CALLBACK).replace("{fix}", fix).replace("{clip}", clip).replace("{after}", after)
    return [f.line for f in lint_source(src, filename="callback.py", extra_files={"engine.py": engine})
            if f.code == "AMP302"]


@pytest.mark.parametrize("clip", CLIPS)
def test_a_clip_between_the_engines_scaled_backward_and_its_step(clip):
    assert amp302(clip) == [15]


@pytest.mark.parametrize("clip", CLIPS)
def test_near_miss_the_upstream_fix(clip):
    assert amp302(clip, fix=FIX) == []


def test_near_miss_an_engine_that_does_not_scale():
    assert amp302(CLIPS[0], engine=PLAIN_ENGINE) == []


def test_near_miss_the_clip_after_the_step():
    assert amp302("pass", after=CLIPS[0]) == []
