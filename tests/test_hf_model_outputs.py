"""A Hugging Face base model's output under autocast is not float16: every BERT-family layer ends in
``LayerNorm`` (CUDA autocast's float32 list), so ``cls_hidden[~cls_mask] = -1e20`` on its hidden
states writes into float32 (HanLP's transformer_sliding_window, unseen set 17 T17-3: the encoder a
parameter annotated ``PreTrainedModel``, imported through a module of the package that re-exports
transformers' names). Near misses keep AMP103: a task-head model's logits (an ``nn.Linear``'s
output, float16 under autocast), a project layer applied to the hidden states, and a parameter whose
annotation names a task-head model."""
import json
import textwrap

import pytest

from amplint.api import lint_source
from cliutil import run, write_project

REEXPORTS = """
from transformers import AutoModel, PreTrainedModel, BertForTokenClassification
"""
UTILS = """
import torch
from pkg.hf_imports import {annotation}


def encode(transformer: {annotation}, input_ids, input_mask, ret_cls=None):
    batch_size = input_ids.size(0)
    outputs = transformer(input_ids=input_ids, attention_mask=input_mask).to_tuple()
    hidden = outputs[0]
    if ret_cls is not None:
        cls_mask = input_ids[:, 0] == input_ids[0][0]
        cls_hidden = hidden[:, 0, :]
        if ret_cls == "max":
            cls_hidden[~cls_mask] = -1e20
        cls_hidden = cls_hidden.reshape(-1, batch_size, cls_hidden.size(-1)).transpose(0, 1)
        if ret_cls == "raw":
            return cls_hidden, cls_mask
        return cls_hidden.max(1)[0]
    return hidden
"""
COMPONENT = """
import torch
from pkg.hf_imports import AutoModel
from pkg.utils import encode


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.transformer = AutoModel.from_pretrained("bert-base-cased")
        self.out = torch.nn.Linear(768, 2)

    def forward(self, input_ids, mask):
        return self.out(encode(self.transformer, input_ids, mask, ret_cls="max"))


def fit(model, loader):
    opt = torch.optim.Adam(model.parameters(), lr=1e-5)
    for ids, mask, y in loader:
        loss = torch.nn.functional.cross_entropy(model(ids, mask), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
"""


def _library(tmp_path, annotation):
    files = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": "",
             "pkg/hf_imports.py": REEXPORTS, "pkg/utils.py": UTILS.replace("{annotation}", annotation),
             "pkg/component.py": COMPONENT}
    root = write_project(tmp_path / annotation, {k: textwrap.dedent(v) for k, v in files.items()}, marker=None)
    r = run(["check", "--no-cache", "--select", "AMP103", "--output-format", "json", "."], root)
    return [(f["filename"].replace("\\", "/").rsplit("/", 1)[-1], f["location"]["row"]) for f in json.loads(r.out)]


def test_library_pretrained_model_hidden_states_are_not_float16(tmp_path):
    # the library policy looks at the package as under fp16 autocast: BERT's hidden states are float32 there
    assert _library(tmp_path, "PreTrainedModel") == []


def test_near_miss_an_annotation_naming_a_task_head_model(tmp_path):
    # a token classifier's first output is its logits, an nn.Linear's: float16 under autocast
    assert _library(tmp_path, "BertForTokenClassification") == [("utils.py", 14)]


TRAINING = """
import torch
from torch import nn
from transformers import {cls}


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = {cls}.from_pretrained("bert-base-cased")
        self.proj = nn.Linear(768, 768)

    def forward(self, ids, mask):
        h = {read}
        return h.masked_fill(~mask[..., None], -1e9)


model = Tagger().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
scaler = torch.cuda.amp.GradScaler()
for ids, mask, y in loader:
    with torch.autocast("cuda"):
        loss = model(ids, mask).logsumexp(-1).mean()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
"""


def amp103(cls, read="self.encoder(ids, attention_mask=mask)[0]"):
    source = TRAINING.replace("{cls}", cls).replace("{read}", read)
    return [f.line for f in lint_source(source, filename="train.py") if f.code == "AMP103"]


@pytest.mark.parametrize("cls", ["AutoModel", "BertModel", "RobertaModel"])
def test_autocast_base_model_hidden_states_are_not_float16(cls):
    assert amp103(cls) == []


@pytest.mark.parametrize("cls", ["AutoModelForTokenClassification", "BertForTokenClassification"])
def test_near_miss_a_task_head_models_logits_are_float16(cls):
    assert amp103(cls) == [15]


def test_near_miss_a_linear_on_the_hidden_states_is_float16():
    assert amp103("AutoModel", read="self.proj(self.encoder(ids, attention_mask=mask)[0])") == [15]
