"""An argument only assumed float16 (the regime's guess for the tensor arguments of code under fp16
autocast, no caller passing a float16 value) is not float16 where its function turns autocast off
around its use: code written under ``autocast(enabled=False)`` without a cast expects float32 inputs
(FunASR's SOND: ``with autocast(False): F.normalize(profile)`` on the speaker profiles that
``forward(**batch)`` hands down from the data loader; triage set 10, T10-1).
Near misses: a caller that passes a layer's output (float16 for sure) keeps the finding, and so does
a pure-half model, whose activations are float16 whatever autocast says."""
import textwrap

import pytest

from amplint.api import lint_source

SRC = """
import torch
import torch.nn.functional as F
from torch.cuda.amp import autocast


class SpeakerModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(16, 16)

    def encode_speaker(self, profile):
        {region}
            return F.normalize(profile, dim=2)

    def forward(self, speech, profile):
        profile = self.encode_speaker({passed})
        return self.proj(speech) @ profile.transpose(1, 2)
"""


def codes(region, passed, precision="fp16-mixed"):
    src = textwrap.dedent(SRC).format(region=region, passed=passed)
    return [f.code for f in lint_source(src, filename="model.py", precision=precision, select=("AMP102",))]


@pytest.mark.parametrize("name, region, passed, expected", [
    ("an assumed argument inside autocast(False)", "with autocast(False):", "profile", []),
    ("an assumed argument inside autocast(enabled=False)", "with torch.autocast('cuda', enabled=False):", "profile", []),
    ("near miss: a caller passes a layer's float16 output", "with autocast(False):", "self.proj(profile)", ["AMP102"]),
])
def test_assumed_argument_where_autocast_is_off(name, region, passed, expected):
    assert codes(region, passed) == expected, name


def test_near_miss_a_pure_half_models_activations():
    assert codes("with autocast(False):", "profile", precision="fp16") == ["AMP102"]
