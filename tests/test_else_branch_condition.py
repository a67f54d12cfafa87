"""Evidence in the else branch of an `if` on a dtype flag runs when that test is false: its condition is the negated
test (`--show-settings` printed fastNLP's ShardedGradScaler in the else of `if self.fs_type == 'ddp' or fp16 is False:`
as `(if ... fp16 is False)`, triage20 note), and settings that make the test true switch it off."""
import textwrap

from cliutil import run, write_project

TRAIN = """
import torch
from torch.cuda.amp import GradScaler, autocast


def train(model, loader, fp16=False):
    if fp16 is False:
        scaler = GradScaler(enabled=False)
    else:
        scaler = torch.cuda.amp.GradScaler()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        with autocast(enabled=fp16):
            loss = torch.nn.functional.mse_loss(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    train(torch.nn.Linear(4, 1).cuda(), [], fp16=True)
"""


def test_else_branch_evidence_shows_the_negated_test(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN)})
    out = run(["check", "--no-cache", "--show-settings", "."], root).out
    assert "`torch.cuda.amp.GradScaler()` at train.py:10 [training] (if not (fp16 is False))" in out, out
    # near miss: the body side keeps its test as written
    assert "`GradScaler(enabled=False)` at train.py:8 [training] (if fp16 is False)" in out, out
