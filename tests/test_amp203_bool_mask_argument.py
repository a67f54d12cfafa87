"""A helper's argument that every caller passes a boolean or integer tensor is no float16 value, even
in a half model: FastCorrect's duration predictor is handed ``src_masks = ~encoder_padding_mask``
(bitwise not raises on a floating tensor) and divides by ``x_nonpadding.sum(1)``, a count of
positions, not a float16 sum (unseen set 21, exposed by P21-3's fp16-master). Near misses: a caller
casting the mask to half, or to the features' dtype, or passing an activation, keeps AMP203."""
import pytest

from amplint.api import lint_source

MODEL = """
import torch
import torch.nn as nn


class DurationPredictor(nn.Module):
    def __init__(self, idim):
        super().__init__()
        self.linear = nn.Linear(idim, 1)

    def forward(self, xs, x_nonpadding=None):
        xs = xs * x_nonpadding[:, :, None]
        return self.linear(xs.sum(1) / x_nonpadding.sum(1, keepdim=True))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.dur_predictor = DurationPredictor(8)

    def forward(self, enc_feats, padding_mask, lengths):
        enc_feats = self.proj(enc_feats)
        {mask}
        return self.dur_predictor(enc_feats, src_masks)
"""

SUM_LINE = MODEL.splitlines().index("        return self.linear(xs.sum(1) / x_nonpadding.sum(1, keepdim=True))") + 1


def amp203(mask):
    findings = lint_source(MODEL.replace("{mask}", mask), filename="model.py", precision="fp16-master")
    assert not [f for f in findings if f.code.startswith("E9")]
    return [f.line for f in findings if f.code == "AMP203"]


@pytest.mark.parametrize("mask", [
    "src_masks = ~padding_mask",
    "src_masks = padding_mask.eq(0)",
    "src_masks = torch.arange(8, device=lengths.device)[None, :] < lengths[:, None]",
    "src_masks = padding_mask.logical_not().long()",
])
def test_boolean_or_integer_masks_are_not_float16(mask):
    assert amp203(mask) == []


@pytest.mark.parametrize("mask", [
    "src_masks = (~padding_mask).half()",
    "src_masks = (~padding_mask).to(enc_feats.dtype)",
    "src_masks = enc_feats[:, :, 0]",
])
def test_near_misses_stay_reported(mask):
    assert amp203(mask) == [SUM_LINE], mask
