"""A CLIP whose ``forward`` never runs (VQ-Diffusion's text embedding, triage set 13, T13-2): the
program builds CLIP through ``build_model()`` and keeps only its text tower (``self.transformer =
model.transformer``, ...); the instance itself is never called, passed on or kept, so
``self.logit_scale.exp()`` in ``CLIP.forward`` never runs and the logit scale is never trained.
Near misses: the text embedding calls the instance (forward runs), and keeps the whole instance as a
submodule and calls it."""
import textwrap

import pytest

from amplint.api import lint_source

CLIP = """
import numpy as np
import torch
import torch.nn as nn


class CLIP(nn.Module):
    def __init__(self, dim=32, vocab=100):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.transformer = nn.TransformerEncoder(nn.TransformerEncoderLayer(dim, 4), 2)
        self.ln_final = nn.LayerNorm(dim)
        self.visual = nn.Linear(48, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def encode_text(self, text):
        return self.ln_final(self.transformer(self.token_embedding(text)))[:, -1]

    def forward(self, image, text):
        i = self.visual(image)
        t = self.encode_text(text)
        i = i / i.norm(dim=-1, keepdim=True)
        t = t / t.norm(dim=-1, keepdim=True)
        logit_scale = self.logit_scale.exp()
        return logit_scale * i @ t.t()


def build_model(state_dict=None):
    model = CLIP()
    if state_dict is not None:
        model.load_state_dict(state_dict)
    return model.eval()
"""

EMBEDDING = """
import torch.nn as nn
from pkg import clip_model


class CLIPTextEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        model = clip_model.build_model()
        self.token_embedding = model.token_embedding
        self.transformer = model.transformer
        self.ln_final = model.ln_final
        {extra}
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, text):
        return self.ln_final(self.transformer(self.token_embedding(text)))
"""

TRAIN = """
import torch
import torch.nn as nn
from pkg.text_embedding import CLIPTextEmbedding


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.cond = CLIPTextEmbedding()
        self.head = nn.Linear(32, 10)

    def forward(self, text):
        return self.head(self.cond(text)).mean(1)


def main():
    model = Model().cuda()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    scaler = torch.cuda.amp.GradScaler()
    for step in range(100):
        text = torch.randint(0, 100, (4, 7)).cuda()
        y = torch.randint(0, 10, (4,)).cuda()
        with torch.cuda.amp.autocast():
            loss = nn.functional.cross_entropy(model(text), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""


def codes(extra="pass"):
    files = {"pkg/__init__.py": "", "train.py": TRAIN,
             "pkg/text_embedding.py": textwrap.dedent(EMBEDDING).format(extra=extra)}
    return [f.code for f in lint_source(textwrap.dedent(CLIP), filename="pkg/clip_model.py", extra_files=files,
                                        select=("AMP401",))]


@pytest.mark.parametrize("name, extra, expected", [
    ("only the text tower is taken: forward never runs", "pass", []),
    ("near miss: the instance is called", "self.sim = model(torch.zeros(1, 48), torch.zeros(1, 7).long())", ["AMP401"]),
    ("near miss: the instance is kept as a submodule", "self.clip = model", ["AMP401"]),
])
def test_parts_taken(name, extra, expected):
    assert codes(extra) == expected, name
