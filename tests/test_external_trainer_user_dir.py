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


TASK = """
import torch
from fairseq.tasks import register_task
from fairseq.tasks.translation import TranslationTask


@register_task("fastcorrect")
class FastCorrectTask(TranslationTask):
    def train_step(self, sample, model, criterion, optimizer, update_num, ignore_grad=False):
        model.train()
{own}        loss, sample_size, logging_output = criterion(model, sample)
        optimizer.backward(loss)
        return loss, sample_size, logging_output
"""
LAUNCHER = r"""
EXP_HOME=$(cd `dirname $0`; pwd)/..
cd $EXP_HOME
fairseq-train $DATA_PATH --task fastcorrect --arch net \
        --user-dir $EXP_HOME/{user_dir} \
        --max-epoch 35 --update-freq 4 --fp16 --num-workers 4
"""


def _plugin(tmp_path, user_dir="FastCorrect", own=""):
    root = write_project(tmp_path / "p", {
        "FastCorrect/__init__.py": "from . import fastcorrect_task, net\n",
        "FastCorrect/fastcorrect_task.py": textwrap.dedent(TASK).replace("{own}", own),
        "FastCorrect/net.py": textwrap.dedent(NET),
        "runs/train_ft.sh": textwrap.dedent(LAUNCHER).format(user_dir=user_dir),
    })
    p = Project(root)
    return p, {ep.path.relative_to(p.root).as_posix(): p.regime_for(ep.path).mode for ep in p.entry_points()}


def test_a_user_dir_below_the_scripts_directory_variable_is_the_plugins_and_its_task_hook_is_that_run(tmp_path):
    # NeuralSpeech FastCorrect (P21-3): --user-dir $EXP_HOME/FastCorrect, EXP_HOME the script's directory's parent;
    # the task's train_step (called by fairseq-train) is no fp32 run of its own
    p, modes = _plugin(tmp_path)
    assert modes == {"FastCorrect/__init__.py": "fp16-master"}, modes
    assert p.regime_for(p.root / "FastCorrect/fastcorrect_task.py").mode == "fp16-master"


def test_near_miss_a_task_hook_with_evidence_of_its_own_stays_an_entry_point(tmp_path):
    own = "        with torch.autocast('cuda', dtype=torch.bfloat16):\n            pass\n"
    _, modes = _plugin(tmp_path, own=own)
    assert modes.get("FastCorrect/__init__.py") == "fp16-master" and "FastCorrect/fastcorrect_task.py" in modes, modes


def test_near_miss_a_variable_rooted_user_dir_naming_no_directory_is_not_read(tmp_path):
    _, modes = _plugin(tmp_path, user_dir="Elsewhere")
    assert "FastCorrect/__init__.py" not in modes and set(modes.values()) == {"fp32"}, modes
