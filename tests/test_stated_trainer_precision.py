"""An entry point that hands its model to a trainer with a precision stated in its own code
(``TrainingArguments(fp16=False, bf16=True)``) trains in that precision: the ``if use_amp:`` autocast and
GradScaler of another training loop of the model's class (a deprecated ``old_fit``) are not that run's
(docs/precision.md, "Training entry points"; sentence-transformers' bf16 examples, triage T6-5)."""
import textwrap

from cliutil import write_project

MODEL = """
import torch
from torch import nn
class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)
    def forward(self, x):
        return self.net(x)
    def old_fit(self, loader, use_amp=False):
        optimizer = torch.optim.AdamW(self.parameters())
        scaler = torch.amp.GradScaler("cuda") if use_amp else None
        for x, y in loader:
            if use_amp:
                with torch.autocast(device_type="cuda"):
                    loss = (self(x) - y).pow(2).mean()
                scaler.scale(loss).backward()
                scaler.step(optimizer)
                scaler.update()
            else:
                (self(x) - y).pow(2).mean().backward()
                optimizer.step()
"""
TRAINER = """
from transformers import Trainer, TrainingArguments
class EncoderTrainer(Trainer):
    pass
class EncoderArguments(TrainingArguments):
    pass
"""
EXAMPLE = """
from mypkg.model import Encoder
from mypkg.trainer import EncoderTrainer, EncoderArguments
args = EncoderArguments(output_dir="out", {flags})
trainer = EncoderTrainer(model=Encoder(), args=args, train_dataset=[])
trainer.train()
"""


def _modes(tmp_path, **examples):
    from amplint.project import Project, Regime
    files = {"mypkg/__init__.py": "", "mypkg/model.py": MODEL, "mypkg/trainer.py": TRAINER}
    files.update({f"examples/{name}.py": EXAMPLE.replace("{flags}", flags) for name, flags in examples.items()})
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    return {ep.display.rsplit("/", 1)[-1]: Regime(ep.signals).mode for ep in Project(root).entry_points()
            if ep.display.startswith("examples") or "/examples/" in ep.display}


def test_a_stated_trainer_precision_is_the_runs_not_another_loops_option(tmp_path):
    # a bf16 example beside an fp16 one: each its own
    assert _modes(tmp_path, train_bf16="fp16=False, bf16=True", train_fp16="fp16=True") == \
        {"train_bf16.py": "bf16", "train_fp16.py": "fp16-mixed"}


def test_a_precision_the_entry_point_does_not_state_keeps_the_reached_evidence(tmp_path):
    # near miss: the arguments' precision comes from the command line: the package's autocast is still one of its runs
    assert _modes(tmp_path, train_cli="fp16=cli.fp16") == {"train_cli.py": "fp16-mixed"}
