"""A CLIP whose ``forward`` no training calls (triage set 21, T21-2b: multimodal-prompt-learning's trainers
build CLIP through ``load_clip_to_cpu`` and hand it to ``CustomCLIP(cfg, classnames, clip_model)``, whose
``__init__`` takes its parts - ``clip_model.visual``, ``clip_model.logit_scale``, ``TextEncoder(clip_model)``,
``clip_model.token_embedding(ids)`` - and the zero-shot trainer keeps it as ``self.clip_model`` and only calls
``encode_image`` / ``encode_text``). AMP401 fired on ``self.logit_scale.exp()`` in ``CLIP.forward`` under the
trainer's autocast, though that forward never runs. The instances are followed into the constructors they are
handed to, through ``self`` attributes holding them, and over method calls that run no forward. Near misses
(AMP401 stays): the wrapper keeps the CLIP whole and calls it; the training loop calls it; the wrapper calls a
CLIP method that calls ``self(...)``; the zero-shot holder calls ``self.clip_model(...)``; the wrapper hands it
to a function."""
import pytest
from cliutil import hazard_findings, write_project

CLIP = '''
import numpy as np
import torch
import torch.nn as nn


class CLIP(nn.Module):
    def __init__(self, dim=16, vocab=100):
        super().__init__()
        self.visual = nn.Linear(dim, dim)
        self.token_embedding = nn.Embedding(vocab, dim)
        self.text = nn.Linear(dim, dim)
        self.logit_scale = nn.Parameter(torch.ones([]) * np.log(1 / 0.07))

    def encode_image(self, x):
        return self.visual(x)

    def encode_text(self, t):
        return self.text(self.token_embedding(t)).mean(1)

    def similarity(self, image, text):
        return self(image, text)

    def forward(self, image, text):
        image_features = self.encode_image(image)
        text_features = self.encode_text(text)
        image_features = image_features / image_features.norm(dim=1, keepdim=True)
        text_features = text_features / text_features.norm(dim=1, keepdim=True)
        logit_scale = self.logit_scale.exp()
        return logit_scale * image_features @ text_features.t()


def build_model(dim=16):
    model = CLIP(dim)
    return model.eval()
'''

TRAIN = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

from clip.model import build_model


def load_clip_to_cpu():
    model = build_model()
    return model


class TextEncoder(nn.Module):
    def __init__(self, clip_model):
        super().__init__()
        self.text = clip_model.text
        self.dtype = clip_model.logit_scale.dtype

    def forward(self, x):
        return self.text(x)


class PromptLearner(nn.Module):
    def __init__(self, clip_model, n_cls=5):
        super().__init__()
        ids = torch.randint(0, 100, (n_cls, 4))
        with torch.no_grad():
            embedding = clip_model.token_embedding(ids)
        self.ctx = nn.Parameter(embedding.mean(1))


class CustomCLIP(nn.Module):
    def __init__(self, clip_model):
        super().__init__()
        self.prompt_learner = PromptLearner(clip_model)
        self.image_encoder = clip_model.visual
        self.text_encoder = TextEncoder(clip_model)
        self.logit_scale = clip_model.logit_scale
        {wrapper}

    def forward(self, image, label=None):
        image_features = self.image_encoder(image)
        text_features = self.text_encoder(self.prompt_learner.ctx)
        image_features = image_features / image_features.norm(dim=-1, keepdim=True)
        text_features = text_features / text_features.norm(dim=-1, keepdim=True)
        logits = self.logit_scale.exp() * image_features @ text_features.t()
        {wrapper_forward}
        return F.cross_entropy(logits, label)


def main():
    clip_model = load_clip_to_cpu()
    clip_model.float()
    model = CustomCLIP(clip_model).cuda()
    optim = torch.optim.SGD(model.prompt_learner.parameters(), lr=0.002, momentum=0.9)
    scaler = torch.cuda.amp.GradScaler()
    for _ in range(10):
        image, label = torch.randn(4, 16).cuda(), torch.randint(0, 5, (4,)).cuda()
        with torch.cuda.amp.autocast():
            loss = model(image, label)
            {loop}
        optim.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optim)
        scaler.update()


if __name__ == "__main__":
    main()
'''

ZEROSHOT = '''
import torch

from train import load_clip_to_cpu


class ZeroshotCLIP:
    def build_model(self, ids):
        clip_model = load_clip_to_cpu()
        clip_model.to("cuda")
        with torch.no_grad():
            self.text_features = clip_model.encode_text(ids)
        self.clip_model = clip_model

    def model_inference(self, image):
        image_features = self.clip_model.encode_image(image)
        logit_scale = self.clip_model.logit_scale.exp()
        {zeroshot}
        return logit_scale * image_features @ self.text_features.t()
'''


def project(tmp_path, wrapper="", wrapper_forward="", loop="", zeroshot=""):
    files = {
        "clip/__init__.py": "",
        "clip/model.py": CLIP,
        "train.py": TRAIN.format(wrapper=wrapper, wrapper_forward=wrapper_forward, loop=loop),
        "zeroshot.py": ZEROSHOT.format(zeroshot=zeroshot),
    }
    return hazard_findings(write_project(tmp_path / "p", files))


def test_a_clip_handed_to_constructors_that_take_its_parts_never_runs_forward(tmp_path):
    assert ("clip/model.py", "AMP401") not in project(tmp_path)


KEPT = {
    "the wrapper keeps it whole and calls it": dict(wrapper="self.clip = clip_model",
                                                   wrapper_forward="logits = logits + self.clip(image, image.long())"),
    "the training loop calls it": dict(loop="loss = loss + clip_model(image, label[:, None]).mean()"),
    "a method that calls self(...)": dict(wrapper="self.sim = clip_model.similarity(torch.ones(1, 16), torch.ones(1, 4).long())"),
    "the zero-shot holder calls it": dict(zeroshot="image_features = self.clip_model(image, image.long())"),
    "handed to a function": dict(wrapper="self.frozen = torch.nn.ModuleList([clip_model])"),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_the_clip_forward_may_run(tmp_path, name):
    assert ("clip/model.py", "AMP401") in project(tmp_path, **KEPT[name]), name
