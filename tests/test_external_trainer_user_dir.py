"""A package trained by an external trainer's command line (Uni-Mol: `unicore-train ... --user-dir ./mypkg ... --fp16`
in README.md; fairseq's `fairseq-train --user-dir` in a shell script, triage M16-1): its files are reached by that run,
a half model with float32 master weights under `--fp16`, so the model's `log(p + 1e-10)` on a float16 sigmoid is
reported as a training hazard (not by the library policy). Near misses: a command without a precision flag (fp32, any
finding the library policy's);
a --user-dir that is no directory of the project."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

NET = """
import torch
from torch import nn
from unicore.models import BaseUnicoreModel, register_model


@register_model("net")
class Net(BaseUnicoreModel):
    def __init__(self, args):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        p = torch.sigmoid(self.proj(x))
        return torch.log(p + 1e-10)

    @classmethod
    def build_model(cls, args, task):
        return cls(args)
"""
LOSS = """
from unicore.losses import UnicoreLoss, register_loss


@register_loss("l")
class L(UnicoreLoss):
    def forward(self, model, sample, reduce=True):
        out = model(**sample["net_input"])
        loss = (out - sample["target"]).abs().sum()
        return loss, 1, {"loss": loss.data}
"""
COMMAND = r"""
{trainer} $1 --user-dir {user_dir} --task mytask --loss l --arch net \
  --optimizer adam --adam-eps 1e-6 --lr 1e-4 --batch-size 16 \
  {flags} --save-dir $2
"""


def _check(tmp_path, where="README.md", trainer="unicore-train", user_dir="./mypkg", flags="--fp16 --fp16-init-scale 4"):
    command = textwrap.dedent(COMMAND).format(trainer=trainer, user_dir=user_dir, flags=flags)
    text = f"# mypkg\n\nPretraining:\n\n```\n{command}```\n" if where.endswith(".md") else command
    root = write_project(tmp_path / "p", {
        "mypkg/__init__.py": "import mypkg.models\nimport mypkg.losses\n",
        "mypkg/models/__init__.py": "from .net import Net\n", "mypkg/models/net.py": textwrap.dedent(NET),
        "mypkg/losses/__init__.py": "from .l import L\n", "mypkg/losses/l.py": textwrap.dedent(LOSS),
        where: text,
    })
    p = Project(root)
    r = run(["check", "--no-cache", "."], root)
    return p.regime_for(root / "mypkg/models/net.py").mode, r.out


@pytest.mark.parametrize("where, trainer", [("README.md", "unicore-train"), ("scripts/pretrain.sh", "fairseq-train")])
def test_the_external_trainers_fp16_run_trains_the_user_dir(tmp_path, where, trainer):
    mode, out = _check(tmp_path, where=where, trainer=trainer)
    assert mode == "fp16-master", mode
    assert "AMP102" in out and "library code" not in out, out


def test_a_command_without_a_precision_flag_is_fp32(tmp_path):
    mode, out = _check(tmp_path, flags="")
    assert mode == "fp32", mode
    assert "AMP102" not in out or "library policy" in out, out  # (no run in float16: only the library policy's)


def test_a_user_dir_that_is_no_directory_of_the_project_is_not_read(tmp_path):
    mode, _ = _check(tmp_path, user_dir="./elsewhere")
    assert mode != "fp16-master", mode
