"""A learnable temperature dividing similarities of unit vectors (BLIP-2's ``sim_i2t / self.temp`` with
``F.normalize``d features, picked by ``max``) reaches float16's max only for t < 1.5e-5, thousands of
times below its 0.07 start: not reported. Near misses: the same temperature dividing raw products of
two projections, and a logit scale exponentiated (exp passes 65504 at ln 65504 ≈ 11.1)."""
import textwrap

import pytest

from amplint.api import lint_source

MODEL = """
import torch
import torch.nn.functional as F
from torch import nn


class Qformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.vision_proj = nn.Linear(8, 8)
        self.text_proj = nn.Linear(8, 8)
        self.temp = nn.Parameter(0.07 * torch.ones([]))

    def forward(self, img, txt):
        image_feats = F.normalize(self.vision_proj(img), dim=-1)
        text_feat = F.normalize(self.text_proj(txt), dim=-1)
        {body}
"""


@pytest.mark.parametrize("name, body, expected", [
    ("cosine similarities picked by max",
     "sim_q2t = torch.matmul(image_feats.unsqueeze(1), text_feat.unsqueeze(-1)).squeeze()\n"
     "        sim_i2t, _ = sim_q2t.max(-1)\n        return sim_i2t / self.temp", []),
    ("cosine similarities with @", "return image_feats @ text_feat.t() / self.temp", []),
    ("near miss: raw products of two projections",
     "raw = self.vision_proj(img) @ self.text_proj(txt).T\n        return raw / self.temp", [18]),
    ("near miss: exponentiated", "return image_feats @ text_feat.t() * self.temp.exp()", [17]),
])
def test_temperature_over_similarities(name, body, expected):
    src = textwrap.dedent(MODEL.format(body=body))
    found = [f.line for f in lint_source(src, filename="model.py", precision="fp16-mixed") if f.code == "AMP401"]
    assert found == expected, name
