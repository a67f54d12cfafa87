"""More shapes of a branch no caller takes (``conditions.never_run_by_callers``):

- the body of ``if type == "cube":`` itself, and the ``else`` of ``if type != "cube":`` (only the
  ``else`` of an equality test was read right before: the two tests were compared as one chained
  comparison);
- ``if args is None: args = TrainingArguments(...)`` in a trainer whose every caller hands it its
  arguments (ChatGLM-6B's P-tuning Trainer copy, T6-9): AMP101's default adam_epsilon there is never
  built. Near misses: a caller leaving ``args`` out, passing ``None``, or passing a parameter of its
  own (which its callers may leave at None)."""
import textwrap

import pytest

from amplint.api import lint_source

HELPER = """
import torch


def near_far(rays_o, rays_d, bound, type="cube"):
    near = rays_o.norm(dim=-1, keepdim=True) - bound
    {branch}
        near = (-bound - rays_o) / (rays_d + 1e-15)
    return near


def run(model, rays_o, rays_d):
    with torch.autocast("cuda", dtype=torch.float16):
        h = model(rays_o)
        return near_far(h, h @ rays_d, 1.0, type={passed!r})
"""
SHAPES = {
    "if-body": 'if type == "cube":',
    "else of !=": 'if type != "cube":\n        pass\n    else:',
}


def amp102(branch, passed):
    src = textwrap.dedent(HELPER).replace("{branch}", branch).replace("{passed!r}", repr(passed))
    return [f.line for f in lint_source(src, filename="render.py", precision="fp16-mixed") if f.code == "AMP102"]


@pytest.mark.parametrize("shape", SHAPES)
def test_a_branch_the_caller_skips(shape):
    assert amp102(SHAPES[shape], "sphere") == []


@pytest.mark.parametrize("shape", SHAPES)
def test_near_miss_the_caller_takes_it(shape):
    assert len(amp102(SHAPES[shape], "cube")) == 1


TRAINER = """
import torch
from transformers import TrainingArguments


class PrefixTrainer:
    def __init__(self, model, args=None):
        if args is None:
            args = TrainingArguments(output_dir="tmp_trainer")
        self.args = args
        self.model = model
"""
MAIN = """
from transformers import AutoModel, HfArgumentParser, Seq2SeqTrainingArguments

from trainer import PrefixTrainer


def main({params}):
    (training_args,) = HfArgumentParser(Seq2SeqTrainingArguments).parse_args_into_dataclasses()
    model = AutoModel.from_pretrained("some/model").half()
    trainer = PrefixTrainer({passed})
    trainer.train()
"""


def amp101(passed, params=""):
    main = textwrap.dedent(MAIN.format(params=params, passed=passed))
    findings = lint_source(textwrap.dedent(TRAINER), filename="trainer.py", extra_files={"main.py": main})
    return [f.line for f in findings if f.code == "AMP101"]


def test_a_fallback_every_caller_bypasses():
    assert amp101("model=model, args=training_args") == []
    assert amp101("model, training_args") == []


@pytest.mark.parametrize("passed, params", [
    ("model=model", ""),
    ("model=model, args=None", ""),
    ("model=model, args=args", "args=None"),
])
def test_near_misses_the_fallback_runs(passed, params):
    assert amp101(passed, params) == [9]
