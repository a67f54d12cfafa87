"""A launcher script that forwards its arguments (``python run.py --lr $LR "$@"``) runs once per launcher command that
runs it (``bash run_fewshot.sh --efficient_zero_order "$@"`` in MeZO's mezo.sh), with those arguments in place; a
script no launcher runs is run as written (its ``"$@"`` is its user's extras). A command whose arguments are all known
leaves the switches it does not pass at their defaults: MeZO's run.py loads float16 only under
``--efficient_zero_order_fp16``, which no launcher passes, and was judged pure fp16 (triage T20-1, AMP101 FP on set 20).
Near misses: a launcher passing the switch keeps AMP101; a word-of-its-own variable the script does not set may hold it."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

RUN = """
from dataclasses import dataclass

import torch
from transformers import AutoModelForSequenceClassification, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class DynamicTrainingArguments(TrainingArguments):
    efficient_zero_order: bool = False
    efficient_zero_order_fp16: bool = False


def main():
    args = HfArgumentParser(DynamicTrainingArguments).parse_args_into_dataclasses()[0]
    model = AutoModelForSequenceClassification.from_pretrained(
        "roberta-large",
        torch_dtype=torch.float16 if args.efficient_zero_order_fp16 else torch.float32,
    )
    Trainer(model=model, args=args).train()


if __name__ == "__main__":
    main()
"""
SCRIPTS = {
    "run_fewshot.sh": '#!/bin/bash\npython run.py --output_dir result/$TAG --learning_rate $LR "$@"\n',
    "mezo.sh": '#!/bin/bash\nTAG=mezo LR=1e-6 bash run_fewshot.sh --efficient_zero_order "$@"\n',
    "finetune.sh": '#!/bin/bash\nTAG=ft LR=1e-5 bash run_fewshot.sh "$@"\n',
}


def check(tmp_path, extra):
    root = write_project(tmp_path / "p", {"run.py": textwrap.dedent(RUN), **SCRIPTS, **extra})
    p = Project(root)
    (ep,) = p.entry_points()
    amp101 = "AMP101" in run(["check", "--no-cache", "--select", "AMP101", "."], root).out
    return p.regime_for(ep.path).mode, amp101


@pytest.mark.parametrize("extra, mode, amp101", [
    ({}, "fp32", False),
    # the README runs the top script with arguments of its own: still no float16 switch
    ({"README.md": "```bash\nTASK=SST-2 bash mezo.sh --prefix_tuning --num_prefix 5\n```\n"}, "fp32", False),
    # near misses: a launcher in the chain passes the switch; a variable of the user's holds the arguments
    ({"mezo16.sh": '#!/bin/bash\nbash mezo.sh --efficient_zero_order_fp16 "$@"\n'}, "fp16", True),
])
def test_a_switch_no_launcher_chain_passes_is_at_its_default(tmp_path, extra, mode, amp101):
    assert check(tmp_path, extra) == (mode, amp101)


def test_a_variable_the_script_does_not_set_may_hold_the_switch(tmp_path):
    scripts = {"run_fewshot.sh": '#!/bin/bash\npython run.py --output_dir out $EXTRA_ARGS\n'}
    root = write_project(tmp_path / "p", {"run.py": textwrap.dedent(RUN), **scripts})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == "fp16"
