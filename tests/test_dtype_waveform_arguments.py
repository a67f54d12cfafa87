"""A recording passed to a feature extractor (``forward(self, audio)``, ``wavs``, ``waveform``) is
input data from the loader: autocast never casts it, so under fp16 autocast it is float32, and so
are the frames a helper computes from it (speechbrain's VocalFeatures -> compute_periodic_features,
where ``avg_amps.clamp(min=1e-10)`` is no float16 guard). Near misses: an argument named as an
activation (``x``) is still taken float16 under fp16 autocast; under a half model (pure fp16) the
recording is cast to float16 by the caller and the guard is reported."""
import textwrap

import pytest

from amplint.api import lint_source

SRC = """
import torch
from torch import nn


def shimmer(frames):
    peaks = frames.amax(dim=-1)
    avg = peaks.mean(dim=-1, keepdim=True)
    return (peaks - avg).abs().mean(dim=-1) / avg.squeeze(-1).clamp(min=1e-10)


class Features(nn.Module):
    def forward(self, {arg}):
        frames = {arg}.unfold(-1, 400, 160)
        return shimmer(frames)


def train(model, feats, loader, opt):
    {cast}
    scaler = torch.amp.GradScaler("cuda")
    for wav, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(feats(wav)).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def amp102(arg, cast="pass"):
    src = textwrap.dedent(SRC).replace("{arg}", arg).replace("{cast}", cast)
    return [f.line for f in lint_source(src, filename="feats.py") if f.code == "AMP102"]


@pytest.mark.parametrize("arg", ["audio", "wavs", "waveform"])
def test_a_recording_is_float32_data(arg):
    assert amp102(arg) == []


def test_near_miss_an_activation():
    assert amp102("x") == [9]


def test_near_miss_a_half_model():
    assert amp102("audio", cast="model.half(); feats.half()") == [9]
