"""A float16 model handed to a project class whose ``__init__`` wraps it with PEFT (xtuner's ``build_lora_model``:
``llm = from_pretrained(..., torch_dtype=torch.float16)``, ``SupervisedFinetune(llm, lora=lora_config)``, whose
``_prepare_for_lora`` runs ``prepare_model_for_kbit_training`` and ``get_peft_model``) is read as the same calls
written inline are: a frozen base, float32 adapters, so the Trainer's AdamW eps is no AMP101 (triage T11-6).
Near misses: the wrapper built without ``lora`` fine-tunes the whole float16 model, and a builder that hands the
float16 model to the Trainer directly (xtuner's ``build_model`` in train_hf.py) keeps AMP101."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

SFT = """
from peft import get_peft_model, prepare_model_for_kbit_training
from torch import nn


class SupervisedFinetune(nn.Module):
    def __init__(self, llm, lora=None, use_varlen_attn=False):
        super().__init__()
        self.llm = self.build_llm(llm, use_varlen_attn)
        self.lora = lora
        self.use_lora = lora is not None
        if self.use_lora:
            self._prepare_for_lora()

    def build_llm(self, llm, use_varlen_attn):
        return llm

    def _prepare_for_lora(self):
        self.llm = prepare_model_for_kbit_training(self.llm)
        self.llm = get_peft_model(self.llm, self.lora)

    def forward(self, **batch):
        return self.llm(**batch)
"""
APIS = """
import torch
from peft import LoraConfig
from transformers import AutoModelForCausalLM

from mypkg.model import SupervisedFinetune


def build_lora_model(model_name_or_path, lora_config=None):
    if lora_config is None:
        lora_config = LoraConfig(r=64, lora_alpha=16, task_type="CAUSAL_LM")
    llm = AutoModelForCausalLM.from_pretrained(model_name_or_path, torch_dtype=torch.float16)
    model = SupervisedFinetune({args})
    return model.llm


def build_model(model_name_or_path):
    return AutoModelForCausalLM.from_pretrained(model_name_or_path, torch_dtype=torch.float16)
"""
TRAIN = """
import transformers
from transformers import Trainer, TrainingArguments

from mypkg.apis.model import {builder}


def train():
    parser = transformers.HfArgumentParser(TrainingArguments)
    training_args = parser.parse_args_into_dataclasses()[0]
    model = {builder}("internlm/internlm-7b")
    trainer = Trainer(model=model, args=training_args)
    trainer.train()


if __name__ == "__main__":
    train()
"""


@pytest.mark.parametrize("args, builder, amp101", [
    ("llm, lora=lora_config", "build_lora_model", False),  # xtuner's train_lora_hf.py / train_qlora_hf.py
    ("llm, lora_config", "build_lora_model", False),  # the switch passed by position
    ("llm", "build_lora_model", True),  # near miss: no lora, the whole float16 model trains
    ("llm, lora=None", "build_lora_model", True),  # near miss: lora None
    ("llm, lora=lora_config", "build_model", True),  # near miss: xtuner's train_hf.py (a TP)
])
def test_a_half_model_handed_to_a_peft_wrapper_class(tmp_path, args, builder, amp101):
    root = write_project(tmp_path / "p", {
        "mypkg/__init__.py": "",
        "mypkg/model/__init__.py": "from .sft import SupervisedFinetune\n",
        "mypkg/model/sft.py": textwrap.dedent(SFT),
        "mypkg/apis/__init__.py": "",
        "mypkg/apis/model.py": textwrap.dedent(APIS).replace("{args}", args),
        "train.py": textwrap.dedent(TRAIN).replace("{builder}", builder),
    })
    p = Project(root)
    (ep,) = p.entry_points()
    assert (p.regime_for(ep.path).mode == "fp16") is amp101
    r = run(["check", "--no-cache", "--select", "AMP101", "."], root)
    assert ("AMP101" in r.out) is amp101, r.out


def test_a_wrap_under_another_test_is_not_recorded():
    from amplint.precision_facts import file_facts
    src = textwrap.dedent(SFT)
    assert file_facts(src.encode(), "sft.py", "sft")["peft_classes"] == {
        "SupervisedFinetune": {"params": ["llm", "use_varlen_attn"], "when": ["lora"]}}
    # near miss: switched by something the caller does not pass (the environment), not recorded
    near = src.replace("if self.use_lora:", "if os.environ.get('LORA'):")
    assert file_facts(near.encode(), "sft.py", "sft")["peft_classes"] == {}
