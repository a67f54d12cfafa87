"""A loss whose only caller is the ``forward`` of a model the project builds for inference only (triage set
22, T22-3: DiffBIR vendors recognize-anything, whose ``AsymmetricLoss`` (``clamp(min=1e-8)`` then ``log``)
is built in ``RAM.__init__`` and called only in ``RAM.forward``, its training; DiffBIR builds RAM only for
captions, ``model.generate_tag(image)`` under no_grad, and its trainings never import it). AMP102 fired
under the launcher's fp16 look at code no training reaches. The model's forward never runs: every instance
is held where only its parts are taken or methods that run no forward are called; so the loss's forward,
called only there, never runs either. Near misses (AMP102 stays): the trained model uses the loss; the
captioner, or a helper function it hands the tagger to, calls it (its forward runs); another file calls ``captioner.model(x)``; the tagging
package is library code with no training of the project (its users run it: the library look keeps it)."""
import pytest
from cliutil import hazard_findings, write_project

TRAIN = '''
import torch
from accelerate import Accelerator

from restore.model import Restorer


def main():
    accelerator = Accelerator(split_batches=True)
    model = Restorer()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    model, opt = accelerator.prepare(model, opt)
    for step in range(100):
        x = torch.randn(4, 3, 64, 64, device=accelerator.device)
        {train_loss}
        accelerator.backward(loss)
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
'''

RESTORER = '''
import torch.nn as nn
{restorer_import}


class Restorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Conv2d(3, 3, 3, padding=1)
        {restorer_init}

    def forward(self, x{restorer_args}):
        {restorer_forward}
'''

CAPTION = '''
import torch

from tagger import TagModel


class Captioner:
    def __init__(self, path):
        self.model = TagModel()
        self.model.load_state_dict(torch.load(path))
        self.model.eval()

    @torch.no_grad()
    def __call__(self, image):
        {caption_call}


class OtherCaptioner:
    def __init__(self, build):
        self.model, self.processor = build()

    def __call__(self, image):
        return self.model(self.processor(image))
'''

HELPERS = '''
import torch


def inference_tags(image, model):
    with torch.no_grad():
        {helper_body}
'''

INFERENCE = '''
import sys

import torch

from restore.caption import Captioner

cap = Captioner(sys.argv[1])
print(cap(torch.randn(1, 512)))
{inference_extra}
'''

TAGGER = '''
import torch
import torch.nn as nn


class AsymmetricLoss(nn.Module):
    def __init__(self, gamma_neg=4, clip=0.05, eps=1e-8):
        super().__init__()
        self.gamma_neg = gamma_neg
        self.clip = clip
        self.eps = eps

    def forward(self, x, y):
        xs_pos = torch.sigmoid(x)
        xs_neg = (1 - xs_pos + self.clip).clamp(max=1)
        los_pos = y * torch.log(xs_pos.clamp(min=self.eps))
        los_neg = (1 - y) * torch.log(xs_neg.clamp(min=self.eps))
        return -(los_pos + los_neg).sum()


class TagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(512, 100)
        self.loss_fn = AsymmetricLoss()

    def forward(self, feats, tags):
        return self.loss_fn(self.head(feats), tags)

    def generate_tag(self, feats):
        return self.head(feats).sigmoid() > 0.5
'''

DEFAULTS = dict(
    train_loss="loss = (model(x) - x).abs().mean()",
    restorer_import="", restorer_init="", restorer_args="", restorer_forward="return self.body(x)",
    caption_call="return self.model.generate_tag(image)", inference_extra="",
    helper_body="return model.generate_tag(image)",
)
HANDED = "from restore.helpers import inference_tags\n        return inference_tags(image, self.model)"


def project(tmp_path, trains=True, **changes):
    parts = {**DEFAULTS, **changes}
    files = {
        "restore/__init__.py": "",
        "restore/caption.py": CAPTION.format(**parts),
        "tagger/__init__.py": "from .models import TagModel\n",
        "tagger/models.py": TAGGER,
        "restore/helpers.py": HELPERS.format(**parts),
        "inference.py": INFERENCE.format(**parts),
    }
    if trains:
        files["train.py"] = TRAIN.format(**parts)
        files["restore/model.py"] = RESTORER.format(**parts)
    return hazard_findings(write_project(tmp_path / "p", files))


def test_a_loss_only_an_inference_models_forward_calls_never_runs(tmp_path):
    assert project(tmp_path) == []


def test_the_model_handed_to_a_helper_function_that_only_tags(tmp_path):
    # (beside another class of the captioner's file whose ``self.model`` is another object, called)
    assert project(tmp_path, caption_call=HANDED) == []


KEPT = {
    "the trained model uses the loss": dict(
        restorer_import="from tagger.models import AsymmetricLoss",
        restorer_init="self.tag_head = nn.Linear(3, 10)\n        self.tag_loss = AsymmetricLoss()",
        restorer_args=", tags",
        restorer_forward="out = self.body(x)\n        return out, self.tag_loss(self.tag_head(out.mean((2, 3))), tags)",
        train_loss="tags = torch.rand(4, 10, device=accelerator.device)\n        out, tag_loss = model(x, tags)\n"
                   "        loss = (out - x).abs().mean() + tag_loss"),
    "the captioner calls the tagger": dict(caption_call="return self.model(image, torch.ones(1, 100))"),
    "another file calls captioner.model": dict(inference_extra="print(cap.model(torch.randn(1, 512), torch.ones(1, 100)))"),
    "library code with no training": dict(trains=False),
    "the helper function calls the tagger": dict(caption_call=HANDED,
                                                 helper_body="return model(image, torch.ones(1, 100))"),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_the_loss_may_run(tmp_path, name):
    assert ("tagger/models.py", "AMP102") in project(tmp_path, **KEPT[name]), name
