"""A float16 dtype set only for a pre-quantized checkpoint is no training precision (triage set 20, T20-3:
bert4torch's ``set_default_torch_dtype(torch_dtype, model_config)`` takes the caller's dtype and, ``if
hasattr(model_config, "quantization_config")``, float16, then ``torch.set_default_dtype(torch_dtype)``).
The branch's ``torch_dtype = torch.float16`` made every example that builds a model "pure fp16": AMP101 on
their fp32 Adam, AMP102 on the layers. Quantized (int4 / int8) weights are not what an optimizer trains;
the float16 there is the quantized model's compute dtype. Near misses (AMP101 stays): the caller asks
for float16 weights (``torch_dtype=torch.float16``); the branch tests a precision option (``fp16``); the
name is also set to float16 outside the quantization branch."""
import pytest
from cliutil import hazard_findings, write_project

MODELS = '''
import json
from functools import wraps

import torch
from torch import nn


def restore_default_torch_dtype(func):
    @wraps(func)
    def _wrapper(*args, **kwargs):
        old_dtype = torch.get_default_dtype()
        try:
            return func(*args, **kwargs)
        finally:
            torch.set_default_dtype(old_dtype)
    return _wrapper


def set_default_torch_dtype(torch_dtype, model_config=None):
    if isinstance(torch_dtype, str):
        torch_dtype = getattr(torch, torch_dtype)
    if {test}:
        torch_dtype = torch.float16
    torch.set_default_dtype(torch_dtype)
    return torch_dtype


def half_dtype():
    {extra}


class Encoder(nn.Module):
    def __init__(self, hidden_size=64, num_labels=2):
        super().__init__()
        self.dense = nn.Linear(hidden_size, hidden_size)
        self.head = nn.Linear(hidden_size, num_labels)

    def forward(self, x):
        return self.head(torch.relu(self.dense(x)))


@restore_default_torch_dtype
def build_transformer_model(config_path, torch_dtype=None, **kwargs):
    with open(config_path) as f:
        config = json.load(f)
    config.update(kwargs)
    torch_dtype = config.pop("torch_dtype", torch_dtype)
    if torch_dtype is not None:
        torch_dtype = set_default_torch_dtype(torch_dtype, config)
    return Encoder(config.get("hidden_size", 64))
'''

TRAIN = '''
import torch
from torch import optim

from mylib.models import build_transformer_model

model = build_transformer_model("bert_config.json"{dtype})
optimizer = optim.Adam(model.parameters(), lr=2e-5)
for _ in range(10):
    x = torch.randn(8, 64)
    y = torch.randint(0, 2, (8,))
    loss = torch.nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''

QUANTIZED = {
    "key in the config": '"quantization_config" in model_config',
    "attribute of the config": 'hasattr(model_config, "quantization_config")',
    "4-bit load": 'model_config.get("load_in_4bit")',
}


def findings(tmp_path, test, dtype="", extra="return None"):
    models = MODELS.replace("{test}", test).replace("{extra}", extra)
    return hazard_findings(write_project(tmp_path / "p", {"mylib/__init__.py": "", "mylib/models.py": models,
                                                          "train.py": TRAIN.replace("{dtype}", dtype)}))


@pytest.mark.parametrize("name", sorted(QUANTIZED))
def test_a_quantized_checkpoints_float16_is_no_training_precision(tmp_path, name):
    assert findings(tmp_path, QUANTIZED[name]) == [], name


KEPT = {
    "the caller asks for float16 weights": dict(test=QUANTIZED["key in the config"], dtype=", torch_dtype=torch.float16"),
    "the branch tests a precision option": dict(test='model_config.get("fp16")'),
    "float16 set outside the branch too": dict(test=QUANTIZED["key in the config"],
                                               extra="torch_dtype = torch.float16\n    return torch_dtype"),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_float16_weights_train(tmp_path, name):
    assert ("train.py", "AMP101") in findings(tmp_path, **KEPT[name]), name
