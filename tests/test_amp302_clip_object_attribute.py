"""AMP302 follows a clip through a callable object the trainer holds in an attribute:
``self.clip_grad = NoOp()``, under an option ``self.clip_grad = ClipGrad(cfg["clip"])``, whose
``__call__`` clips, then ``self.clip_grad(self.model)`` between ``scaler.scale(loss).backward()`` and
``scaler.step`` (OpenStereo's trainer, fixed upstream by an ``unscale_`` first; set 16, B16-1).
Near misses: an ``unscale_`` before the call, objects none of whose ``__call__`` clips, and an
attribute holding a value that is no construction of a project class stay silent."""
import pytest

from amplint.api import lint_source

CLIP = """
import torch


class ClipGrad:
    def __init__(self, max_norm=1.0):
        self.max_norm = max_norm

    def __call__(self, model):
        torch.nn.utils.clip_grad_norm_(model.parameters(), self.max_norm)


class NoOp:
    def __call__(self, *args, **kwargs):
        pass


class Logger:
    def __call__(self, model):
        print(sum(p.grad.norm() for p in model.parameters()))


def make_clipper(cfg):
    return ClipGrad(cfg["clip"])
"""

TRAINER = """
import torch

from .clip_grad import ClipGrad, Logger, NoOp, make_clipper


class Trainer:
    def __init__(self, model, loader, cfg):
        self.model = model
        self.loader = loader
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
        self.scaler = torch.amp.GradScaler("cuda")
        self.clip_grad = NoOp()
        if cfg.get("clip", None):
            self.clip_grad = {clipper}

    def train_epoch(self):
        for x, y in self.loader:
            self.optimizer.zero_grad()
            with torch.autocast("cuda", dtype=torch.float16):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.scaler.scale(loss).backward()
            {before}
            self.clip_grad(self.model)
            self.scaler.step(self.optimizer)
            self.scaler.update()
"""

FILES = {"pkg/__init__.py": "", "pkg/clip_grad.py": CLIP}
CALL_LINE = TRAINER.splitlines().index("            self.clip_grad(self.model)") + 1


def amp302(clipper="ClipGrad(cfg['clip'])", before="pass"):
    findings = lint_source(TRAINER.format(clipper=clipper, before=before), filename="pkg/trainer.py",
                           extra_files=FILES)
    assert not [f for f in findings if f.code.startswith("E9")]
    return [f.line for f in findings if f.code == "AMP302"]


def test_clip_through_an_object_held_in_an_attribute():
    assert amp302() == [CALL_LINE]


def test_the_fix_inserts_unscale_before_the_call():
    findings = lint_source(TRAINER.format(clipper="ClipGrad(1.0)", before="pass"), filename="pkg/trainer.py",
                           extra_files=FILES)
    fix = next(f for f in findings if f.code == "AMP302").fix
    assert fix is not None and "self.scaler.unscale_(self.optimizer)" in fix.message


@pytest.mark.parametrize("name, clipper, before", [
    ("unscaled first", "ClipGrad(cfg['clip'])", "self.scaler.unscale_(self.optimizer)"),
    ("no assigned object clips", "Logger()", "pass"),
    ("a factory's result: not known", "make_clipper(cfg)", "pass"),
])
def test_near_misses_stay_silent(name, clipper, before):
    assert amp302(clipper, before) == [], name
