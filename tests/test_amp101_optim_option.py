"""AMP101 on ``TrainingArguments(..., optim=args.optim)`` reads the option's default in the file:
a dataclass field (``optim: str = field(default="adamw_hf")``, MedicalGPT's dpo_training.py, bug set
8 B44) or an argparse default. An Adam default with float16 parameters keeps the Trainer's
adam_epsilon=1e-8 finding. Near misses: an eps-less default (adafactor); no default in the file."""
import pytest

from amplint.api import lint_source

TRAIN = """
from dataclasses import dataclass, field

import torch
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ScriptArguments:
    model_name_or_path: str = field(default="gpt2")
    {field}


args = HfArgumentParser(ScriptArguments).parse_args_into_dataclasses()[0]
model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, torch_dtype=torch.float16)
training_args = TrainingArguments(output_dir="out", fp16=True, optim={optim})
Trainer(model=model, args=training_args, train_dataset=[]).train()
"""


def amp101(field, optim="args.optim"):
    return [f.line for f in lint_source(TRAIN.replace("{field}", field).replace("{optim}", optim), filename="train.py")
            if f.code == "AMP101"]


@pytest.mark.parametrize("field", ['optim: str = field(default="adamw_hf")', 'optim: str = "adamw_torch"'])
def test_an_adam_option_default(field):
    assert amp101(field) == [16]


@pytest.mark.parametrize("field, optim", [('optim: str = field(default="adafactor")', "args.optim"),
                                          ("pass", "args.optim"), ('optim: str = "adamw_torch"', "other.optim_name")])
def test_near_miss_no_adam_default(field, optim):
    assert amp101(field, optim) == []
