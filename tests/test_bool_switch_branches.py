"""Float16 evidence taken only under a test of boolean command-line switches (T17-1, mPLUG-Owl):
``torch_dtype=torch.bfloat16 if args.bf16 else torch.half`` and ``TrainingArguments(bf16=args.bf16, fp16=not args.bf16)``
with ``--bf16`` a ``store_true`` switch defaulting to True (no command line turns it off); a ``TrainingArguments`` parsed
from the command line, every launcher passing ``--bf16 True``, the float16 casts on the sides of ``if training_args.fp16``
/ ``else`` of ``training_args.bf16``. No run takes the float16 side: the training is bf16 and AMP101 (the Trainer's
default adam_epsilon on float16 parameters) is silent. Near misses keep float16 as one of the runs: a plain ``store_true``
with no launcher, a launcher passing ``--fp16 True``, a launcher that states no precision."""
import json
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

ALWAYS_BF16 = """
import argparse

import torch
from transformers import AutoModelForCausalLM, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--bf16", action="store_true"{default})
parser.add_argument("--lr", type=float, default=2e-5)


def main():
    args = parser.parse_args()
    model = AutoModelForCausalLM.from_pretrained("ckpt", torch_dtype=torch.bfloat16 if args.bf16 else torch.half)
    trainer = Trainer(model=model, args=TrainingArguments(output_dir="out", learning_rate=args.lr,
                                                          bf16=args.bf16, fp16=not args.bf16))
    trainer.train()


if __name__ == "__main__":
    main()
"""

HF_PARSED = """
import torch
import transformers


def train():
    parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    compute_dtype = torch.float16 if training_args.fp16 else (torch.bfloat16 if training_args.bf16 else torch.float32)
    model = transformers.AutoModelForCausalLM.from_pretrained("ckpt", torch_dtype=compute_dtype)
    if training_args.fp16:
        model.to(torch.float16)
    trainer = transformers.Trainer(model=model, args=training_args)
    trainer.train()


if __name__ == "__main__":
    train()
"""

RUNNER = """
from train import train

if __name__ == "__main__":
    train()
"""


def _codes(root):
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    found = json.loads(r.out)
    found = found if isinstance(found, list) else found["findings"]
    return sorted(f["code"] for f in found if f["code"] != "AMP501")


def _modes(root):
    p = Project(root)
    return {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


@pytest.mark.parametrize("default, scripts, mode, codes", [
    (", default=True", {}, "bf16", []),
    (", default=True", {"train.sh": "python train.py --lr 2e-5 --bf16\n"}, "bf16", []),
    # near miss: a plain store_true switch and no launcher: float16 is one of the runs (`--bf16` not passed)
    ("", {}, "fp16-mixed", ["AMP101"]),
])
def test_store_true_switch_defaulting_true(tmp_path, default, scripts, mode, codes):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(ALWAYS_BF16.format(default=default)), **scripts})
    assert _modes(root) == {"train.py": mode}
    assert _codes(root) == codes
    if mode == "bf16":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        assert "`not (args.bf16)` is false in this program's runs" in r.out, r.out


@pytest.mark.parametrize("script, mode, codes", [
    ("python train.py --lr 2e-5 --bf16\n", "bf16", []),
    # the switch held in a variable the command expands (mPLUG-Owl's train_it.sh)
    ('options=" \\\n    --lr 2e-5 \\\n    --bf16"\npython -m torch.distributed.launch ./train.py $@ ${options}\n', "bf16", []),
    # near miss: a script running the program twice, once without --bf16 (a float16 run)
    ("python train.py --lr 2e-5 --bf16\npython train.py --lr 1e-5\n", "fp16-mixed", ["AMP101"]),
])
def test_each_command_of_a_launcher_is_a_run(tmp_path, script, mode, codes):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(ALWAYS_BF16.format(default="")),
                                          "train.sh": script})
    assert _modes(root) == {"train.py": mode}
    assert _codes(root) == codes


@pytest.mark.parametrize("flags, mode, codes", [
    ("--bf16 True", "bf16", []),
    ("--bf16", "bf16", []),
    # near misses: a launcher running float16; a launcher that states no precision (the usual precision switches may
    # be given by hand: sentiment-discovery's finetune_classifier.py --fp16, triage M17-1)
    ("--fp16 True", "fp16", ["AMP101"]),
    ("--learning_rate 2e-5", "fp16", ["AMP101"]),
])
def test_training_arguments_switches_from_the_launchers(tmp_path, flags, mode, codes):
    root = write_project(tmp_path / "p", {
        "train.py": textwrap.dedent(HF_PARSED),
        "scripts/finetune.sh": f"deepspeed train.py \\\n    --output_dir out \\\n    {flags}\n"})
    assert _modes(root) == {"train.py": mode}
    assert _codes(root) == codes


@pytest.mark.parametrize("flags, mode", [("--bf16 True", "bf16"), ("--fp16 True", "fp16")])
def test_a_loop_run_by_another_program_takes_its_launchers(tmp_path, flags, mode):
    """train.py (a program of its own, no launcher) has its ``train`` run by train_mem.py, which the launchers run:
    their switches are the runs of train.py's loop too. Near miss: the launchers pass --fp16 True."""
    root = write_project(tmp_path / "p", {
        "train.py": textwrap.dedent(HF_PARSED), "train_mem.py": textwrap.dedent(RUNNER),
        "scripts/finetune.sh": f"deepspeed train_mem.py --output_dir out {flags}\n"})
    assert _modes(root) == {"train.py": mode, "train_mem.py": mode}
