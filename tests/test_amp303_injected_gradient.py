"""AMP303 and a backward given its gradient: insightface's Partial FC computes the loss and the
features' gradient itself, then back-propagates the backbone with
``features.backward(grad_amp.scale(x_grad))``. Scaling the injected gradient is loss scaling
(d(s*L)/dfeatures = s * x_grad), so ``grad_amp.step`` unscales gradients that were scaled (set-16
triage T16-4). Near misses: the same backward given the unscaled gradient, and a ``.scale(...)`` of
something that is no scaler."""
from training_util import lines

LOOP = """
import torch
from torch import nn

def train(backbone, module_fc, opt_backbone, loader):
    grad_amp = torch.amp.GradScaler("cuda")
    for img, label in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            features = backbone(img)
        x_grad = module_fc.forward_backward(label, features.float())
        features.backward({gradient})
        grad_amp.unscale_(opt_backbone)
        nn.utils.clip_grad_norm_(backbone.parameters(), max_norm=5)
        grad_amp.step(opt_backbone)
        grad_amp.update()
        opt_backbone.zero_grad()
"""


def test_a_scaled_injected_gradient_is_scaled():
    assert lines("AMP303", LOOP.replace("{gradient}", "grad_amp.scale(x_grad)")) == []


def test_the_gradient_keyword_too():
    assert lines("AMP303", LOOP.replace("{gradient}", "gradient=grad_amp.scale(x_grad)")) == []


def test_near_miss_the_unscaled_gradient():
    assert lines("AMP303", LOOP.replace("{gradient}", "x_grad")) == [11]


def test_near_miss_a_scale_of_no_scaler():
    assert lines("AMP303", LOOP.replace("{gradient}", "module_fc.scale(x_grad)")) == [11]
