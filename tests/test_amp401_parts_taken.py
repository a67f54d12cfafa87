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


# A metric wrapper of a pretrained CLIP (imaginaire's caption metrics, triage set 14, T14-4): the
# instance is handed to a class of the same file that keeps it as ``self.model`` and calls only
# ``self.model.encode_image(...)``. Near miss: the wrapper calls the model itself.
METRICS = """
import torch
import torch.nn as nn

from pkg.clip_model import build_model


def get_image_encoder(path):
    encoder = build_model(torch.load(path, map_location="cpu")).cuda()
    return ImageEncoder(encoder)


class ImageEncoder(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.model = encoder

    @torch.no_grad()
    def forward(self, images, text):
        return {use}


def r_precision(encoder, images, text):
    return encoder(images, text).argmax(1)
"""

GAN = """
import torch
import torch.nn as nn

from pkg.metrics import get_image_encoder, r_precision


def main():
    gen = nn.Sequential(nn.Linear(48, 48), nn.Tanh()).cuda()
    opt = torch.optim.Adam(gen.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    encoder = get_image_encoder("clip.pt")
    for step in range(1000):
        z = torch.randn(8, 48, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16):
            loss = gen(z).pow(2).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        if step % 100 == 0:
            r_precision(encoder, gen(z), torch.zeros(8, 7).long().cuda())


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("name, use, expected", [
    ("the wrapper calls only encode_image", "self.model.encode_text(text) @ self.model.encode_image(images).t()", []),
    ("near miss: the wrapper calls the model", "self.model(images, text)", ["AMP401"]),
])
def test_parts_taken_through_a_wrapper(name, use, expected):
    clip = textwrap.dedent(CLIP).replace("def build_model(state_dict=None):", "def build_model(state_dict):")
    files = {"pkg/__init__.py": "", "train.py": GAN, "pkg/metrics.py": textwrap.dedent(METRICS).format(use=use)}
    assert [f.code for f in lint_source(clip, filename="pkg/clip_model.py", extra_files=files,
                                        select=("AMP401",))] == expected, name


# The same metric wrapper, with the upstream CLIP API kept in the model's file (imaginaire's copy of
# OpenAI's clip.py, triage set 14, T14-4b): ``load()`` returns the CLIP ``build_model`` makes, and
# nothing in the project calls it. A function no training run calls holds no instance anyone trains.
# Near misses: a training script fine-tunes the CLIP ``load()`` returns; ``load`` is named in a
# registry of its file (something may call it by that name).
LOAD = """

def load(path, device="cuda"):
    model = build_model(torch.load(path, map_location="cpu")).to(device)
    return model, None
"""

FINETUNE = """
import torch
from pkg.clip_model import load


def main():
    model, _ = load("clip.pt")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    scaler = torch.amp.GradScaler("cuda")
    for image, text in []:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(image, text).mean()
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("name, extra, finetune, expected", [
    ("an uncalled load() returns the CLIP", "", False, []),
    ("near miss: a training script fine-tunes what load() returns", "", True, ["AMP401"]),
    ("near miss: load is named in a registry of its file", 'LOADERS = {"clip": load}\n', False, ["AMP401"]),
])
def test_parts_taken_beside_an_uncalled_loader(name, extra, finetune, expected):
    clip = textwrap.dedent(CLIP).replace("def build_model(state_dict=None):", "def build_model(state_dict):")
    clip += LOAD + extra
    files = {"pkg/__init__.py": "", "train.py": GAN,
             "pkg/metrics.py": textwrap.dedent(METRICS).format(use="self.model.encode_image(images)")}
    if finetune:
        files["finetune.py"] = FINETUNE
    assert [f.code for f in lint_source(clip, filename="pkg/clip_model.py", extra_files=files,
                                        select=("AMP401",))] == expected, name


# VQ-Diffusion's real text embedding (triage set 13, T13-2 as it is there): the CLIP comes from the upstream
# ``model, _ = clip.load(...)`` and is rebuilt from its state dict (``model = build_model(model.state_dict())``)
# before its text tower is taken. A name bound by unpacking a tuple is a binding like any other.
UNPACKED = """
import torch.nn as nn
from pkg import clip_model


class CLIPTextEmbedding(nn.Module):
    def __init__(self):
        super().__init__()
        model, _ = clip_model.load("ViT-B/32")
        model = clip_model.build_model(model.state_dict())
        self.token_embedding = model.token_embedding
        self.transformer = model.transformer
        {extra}
        for p in self.parameters():
            p.requires_grad = False

    def forward(self, text):
        return self.transformer(self.token_embedding(text))
"""


@pytest.mark.parametrize("name, extra, expected", [
    ("a CLIP unpacked from load() and rebuilt: only its text tower is taken", "pass", []),
    ("near miss: the unpacked instance is kept as a submodule", "self.clip = model", ["AMP401"]),
])
def test_parts_taken_of_an_unpacked_instance(name, extra, expected):
    clip = textwrap.dedent(CLIP) + LOAD
    files = {"pkg/__init__.py": "", "train.py": TRAIN,
             "pkg/text_embedding.py": textwrap.dedent(UNPACKED).format(extra=extra)}
    assert [f.code for f in lint_source(clip, filename="pkg/clip_model.py", extra_files=files,
                                        select=("AMP401",))] == expected, name
