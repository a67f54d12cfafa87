"""A test suite's support modules are test code (unseen set 11, T11-8: xtuner's ``xtuner/_testing/testcase.py``, a
TestCase base comparing recorded float32 loss curves with ``F.normalize`` / ``cosine_similarity``, imported only by
``tests/``, was judged as model code under the project's float16 training)."""
import json
import textwrap

import pytest

from cliutil import run, write_project

TRAIN = """
import torch

model = torch.nn.Linear(4, 4).half()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x in []:
    loss = model(x).sum()
    loss.backward()
    optimizer.step()
"""

SUPPORT = """
import torch
import torch.nn.functional as F


class LossCurveTestCase:
    def check_loss_curve(self, losses: torch.Tensor, losses_ref: torch.Tensor):
        similarity = torch.cosine_similarity(F.normalize(losses, dim=0), F.normalize(losses_ref, dim=0), dim=0)
        assert similarity > 0.99
"""


DEEPSPEED = '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}}'


def _findings(tmp_path, support_path):
    # a DeepSpeed fp16 training: float16 activations in the files no entry point reaches, too (the program runs
    # DeepSpeed: a DeepSpeed config is no run of code that never names it, T11-7)
    files = {"pkg/__init__.py": "", "pkg/train.py": "import deepspeed\n" + TRAIN.replace(".half()", ""),
             "pkg/ds_config.json": DEEPSPEED,
             support_path: SUPPORT}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [f["code"] for f in json.loads(r.out)]


@pytest.mark.parametrize("support_path", ["pkg/_testing/testcase.py", "pkg/testing_utils.py", "pkg/test_utils.py"])
def test_a_test_support_module_is_not_model_code(tmp_path, support_path):
    assert _findings(tmp_path, support_path) == []


def test_near_miss_the_same_code_in_a_model_module_is_judged(tmp_path):
    # the float16 activations of the DeepSpeed fp16 training reach a model module's normalize: AMP102 there
    assert "AMP102" in _findings(tmp_path, "pkg/losses.py")
