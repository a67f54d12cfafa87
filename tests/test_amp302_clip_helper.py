"""AMP302 when the clip sits in a helper of the same file: ``self._clip_gradients()`` (or a module
function) called between ``scaler.scale(loss).backward()`` and ``scaler.step`` clips scaled gradients."""
import pytest

from training_util import fixed, found, lines

TRAINER = """
import torch


def clip_all(model, max_norm):
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)


class Trainer:
    def __init__(self, model):
        self.model = model
        self.optimizer = torch.optim.AdamW(model.parameters())
        self.scaler = torch.amp.GradScaler("cuda")
        self.max_norm = 1.0
        self.use_amp = True

    def _clip_gradients(self):
        {helper}

    def fit(self, loader):
        for x in loader:
            with torch.autocast("cuda", dtype=torch.float16):
                loss = self.model(x).mean()
            {backward}
            {clip}
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""
CLIP = """if self.max_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)"""
SCALED = "self.scaler.scale(loss).backward()"


def source(helper=CLIP, clip="self._clip_gradients()", backward=SCALED):
    return TRAINER.replace("{helper}", helper).replace("{clip}", clip).replace("{backward}", backward)


@pytest.mark.parametrize("name, clip", [
    ("a method of the class", "self._clip_gradients()"),
    ("a module-level function", "clip_all(self.model, self.max_norm)"),
])
def test_clip_in_a_helper_after_a_scaled_backward(name, clip):
    (line, message), = found("AMP302", source(clip=clip))
    assert line == 26, name
    assert "self.scaler.unscale_(self.optimizer)" in message or "self.scaler.scale(loss)" in message, name


def test_fix_unscales_before_the_helper_call_and_is_recognised():
    after = fixed(source())
    assert "self.scaler.unscale_(self.optimizer)\n            self._clip_gradients()" in after
    assert lines("AMP302", after) == []


@pytest.mark.parametrize("name, helper, clip, backward", [
    ("the helper unscales before clipping", "self.scaler.unscale_(self.optimizer)\n        " + CLIP,
     "self._clip_gradients()", SCALED),
    ("the helper clips only without AMP", """if not self.use_amp:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.max_norm)""", "self._clip_gradients()", SCALED),
    ("unscale_ before the helper call", CLIP,
     "self.scaler.unscale_(self.optimizer); self._clip_gradients()", SCALED),
    ("a plain backward", CLIP, "self._clip_gradients()", "loss.backward()"),
    ("the helper steps too (judged in itself)", CLIP + "\n        self.optimizer.step()", "self._clip_gradients()", SCALED),
])
def test_near_misses_stay_silent(name, helper, clip, backward):
    assert lines("AMP302", source(helper, clip, backward)) == [], name


@pytest.mark.parametrize("name, imports, clip", [
    ("timm's dispatch_clip_grad", "from timm.utils import dispatch_clip_grad",
     "dispatch_clip_grad(model.parameters(), 1.0, mode='norm')"),
    ("timm's adaptive_clip_grad", "from timm.utils import adaptive_clip_grad", "adaptive_clip_grad(model.parameters())"),
    ("torch's clip_grads_with_norm_", "from torch.nn.utils import clip_grads_with_norm_, get_total_norm",
     "clip_grads_with_norm_(model.parameters(), 1.0, get_total_norm(model.parameters()))"),
])
def test_other_clipping_functions(name, imports, clip):
    loop = f"""
import torch
{imports}

def train(model, loader, optimizer, scaler):
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        {{between}}{clip}
        scaler.step(optimizer)
        scaler.update()
"""
    assert lines("AMP302", loop.replace("{between}", "")) == [10], name
    assert lines("AMP302", loop.replace("{between}", "scaler.unscale_(optimizer)\n        ")) == [], name


FSDP_LOOP = """
import torch
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler


def train(net, loader, accelerator):
    model = FSDP(net)
    optimizer = torch.optim.AdamW(model.parameters())
    scaler = ShardedGradScaler()
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x).mean()
        scaler.scale(loss).backward()
        {between}{clip}
        scaler.step(optimizer)
        scaler.update()
"""


def test_fsdp_models_clip_method_after_a_scaled_backward():
    assert lines("AMP302", FSDP_LOOP.replace("{between}", "").replace("{clip}", "model.clip_grad_norm_(1.0)")) == [15]


@pytest.mark.parametrize("name, between, clip", [
    ("unscale_ first", "scaler.unscale_(optimizer)\n        ", "model.clip_grad_norm_(1.0)"),
    ("accelerate's clip unscales itself", "", "accelerator.clip_grad_norm_(model.parameters(), 1.0)"),
])
def test_fsdp_near_misses(name, between, clip):
    assert lines("AMP302", FSDP_LOOP.replace("{between}", between).replace("{clip}", clip)) == [], name
