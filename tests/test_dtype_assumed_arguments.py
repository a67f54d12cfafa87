"""Arguments only assumed float16 (a tensor argument of code under fp16 autocast, no caller saying):
- against a tensor of unknown dtype (``gt[:, 2:] / priors[:, 2:]``, mmdet's YOLOX head), the result is
  not assumed float16: ground truth from the data pipeline is float32 under autocast, and promotion
  takes the wider dtype;
- an argument named as a mask (``attention_mask_l``, mmdet's GLIP fusion) is input data, not an
  autocast output, under autocast.
Near misses: the argument against itself, against a Python number, a layer output (float16 for sure)
against the same data, and a mask under pure half (the inputs are cast too)."""
import textwrap

import pytest

from amplint.api import lint_source

HEAD = """
import torch
from torch import nn
from boxes import to_cxcywh


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, priors: torch.Tensor, gt_bboxes, attention_mask_l: torch.Tensor, eps: float = 1e-8):
        gt = to_cxcywh(gt_bboxes)
        {line}
"""


def codes(line, precision="fp16-mixed"):
    src = textwrap.dedent(HEAD.format(line=line))
    return [f.code for f in lint_source(src, filename="head.py", precision=precision, select=("AMP102", "AMP103"))]


@pytest.mark.parametrize("name, line, expected", [
    ("ground truth over an assumed argument", "return torch.log(gt[:, 2:] / priors[:, 2:] + eps)", []),
    ("near miss: the argument against itself", "return torch.log(priors[:, 2:] / priors[:, :2] + eps)", ["AMP102"]),
    ("near miss: against a number", "return torch.log(priors[:, 2:] / 8 + eps)", ["AMP102"]),
    ("unchanged: a layer output (an activation for sure) against the data", "return torch.log(self.proj(priors)[:, 2:] / gt[:, 2:] + eps)",
     ["AMP102"]),
    ("a mask argument under autocast",
     "return attention_mask_l.unsqueeze(1).masked_fill(attention_mask_l.unsqueeze(1) == 0, -9e15)", []),
])
def test_assumed_arguments(name, line, expected):
    assert codes(line) == expected, name


def test_a_mask_heads_logits_are_activations():
    src = textwrap.dedent(HEAD.format(line="return mask_logits.masked_fill(attention_mask_l == 0, -9e15)")).replace(
        "attention_mask_l: torch.Tensor,", "attention_mask_l: torch.Tensor, mask_logits: torch.Tensor,")
    found = [f.code for f in lint_source(src, filename="head.py", precision="fp16-mixed", select=("AMP103",))]
    assert found == ["AMP103"]


def test_a_mask_under_pure_half_is_float16():
    line = "return attention_mask_l.unsqueeze(1).masked_fill(attention_mask_l.unsqueeze(1) == 0, -9e15)"
    assert codes(line, precision="fp16") == ["AMP103"]


LOSS = """
import torch
from torch import nn


class SFTLoss(nn.Module):
    def forward(self, logps: torch.Tensor, loss_mask: torch.Tensor) -> torch.Tensor:
        counts = loss_mask.sum(dim=-1)
        return ((-logps * loss_mask).sum(dim=-1) / (counts + 1e-8)).mean()
{caller}
"""
HALF_CALLER = """

def step(logps, mask):
    loss_fn = SFTLoss()
    return loss_fn.forward(logps, mask.half())
"""


def test_an_annotated_mask_is_not_an_activation_under_pure_half():
    # OpenRLHF's SFT loss (seen in the session-5 triage): ``loss_mask: torch.Tensor`` is float32 data
    # from the dataset; the annotation says it is a tensor, as the name says, not that it is float16
    src = textwrap.dedent(LOSS.format(caller=""))
    assert [f.line for f in lint_source(src, filename="loss.py", precision="fp16", select=("AMP102",))] == []


def test_an_annotated_mask_a_caller_passes_in_float16_is():
    src = textwrap.dedent(LOSS.format(caller=HALF_CALLER))
    assert [f.line for f in lint_source(src, filename="loss.py", precision="fp16", select=("AMP102",))] == [9]


def test_an_annotated_attention_mask_under_pure_half_is_still_float16():
    # fairseq's XMOD layer: ``attn_mask: Optional[Tensor]`` is built in the model's dtype and filled
    # with -1e8 under --fp16 (a true positive of the sweep): an additive mask is cast with the scores
    src = textwrap.dedent('''
        import torch
        from typing import Optional
        from torch import Tensor, nn


        class Layer(nn.Module):
            def forward(self, x, attn_mask: Optional[Tensor] = None):
                if attn_mask is not None:
                    attn_mask = attn_mask.masked_fill(attn_mask.to(torch.bool), -1e8)
                return x, attn_mask
        ''')
    assert [f.code for f in lint_source(src, filename="layer.py", precision="fp16", select=("AMP103",))] == ["AMP103"]
