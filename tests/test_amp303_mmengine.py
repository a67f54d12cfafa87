"""AMP303 on mmengine optimizer wrappers: `loss.backward()` then `optim_wrapper.step()` where the wrapper
is (or, by the project's --amp launcher, may be) an AmpOptimWrapper, whose step() is its GradScaler's
(mmagic fixed its inpainting and GAN models this way: `optim_wrapper[key].backward(loss)`)."""
import textwrap

import pytest

from amplint.project import Project, Regime
from training_util import fixed, found, lines

BUILT = """
    import torch
    from torch import nn
    from mmengine.optim import AmpOptimWrapper

    def main():
        model = nn.Linear(16, 1).cuda()
        optim_wrapper = AmpOptimWrapper(optimizer=torch.optim.Adam(model.parameters()), dtype="float16")
        for _ in range(10):
            x = torch.randn(8, 16, device="cuda")
            with optim_wrapper.optim_context(model):
                loss = model(x).pow(2).mean()
            loss.backward()
            optim_wrapper.step()
            optim_wrapper.zero_grad()
    """

MODEL = """
    from torch import nn
    from mmengine.model import BaseModel

    class Inpaintor(BaseModel):
        def __init__(self):
            super().__init__()
            self.generator = nn.Linear(16, 16)
            self.disc = nn.Linear(16, 1)

        def train_step(self, data, optim_wrapper):
            x = data["img"]
            fake = self.generator(x)
            loss_disc = (self.disc(fake.detach()) - self.disc(x)).mean()
            loss_disc.backward()
            optim_wrapper["disc"].step()
            optim_wrapper["disc"].zero_grad()
            return dict(loss_disc=loss_disc.detach())
    """

LAUNCHER = textwrap.dedent("""
    import argparse
    from mmengine.config import Config
    from mmengine.runner import Runner

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("config")
        parser.add_argument("--amp", action="store_true")
        args = parser.parse_args()
        cfg = Config.fromfile(args.config)
        if args.amp:
            cfg.optim_wrapper.type = "AmpOptimWrapper"
        Runner.from_cfg(cfg).train()
    """)


def test_a_plain_backward_stepped_by_an_amp_optim_wrapper_built_here():
    (line, message), = found("AMP303", BUILT)
    assert line == 13
    assert "`optim_wrapper` is an `AmpOptimWrapper`" in message and "65536" in message


def test_an_amp_optim_wrapper_built_directly_is_fp16_autocast_evidence(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent(BUILT))
    [entry] = Project(tmp_path).entry_points()
    assert Regime(entry.signals).mode == "fp16-mixed"


def test_a_wrapper_argument_when_the_launcher_may_pick_amp():
    (line, message), = found("AMP303", MODEL, extra_files={"tools/train.py": LAUNCHER})
    assert line == 15
    assert '`optim_wrapper["disc"]` may be an `AmpOptimWrapper`' in message


@pytest.mark.parametrize("name, source, extra", [
    ("the wrapper's own backward", BUILT.replace("loss.backward()", "optim_wrapper.backward(loss)"), None),
    ("update_params does backward and step", BUILT.replace("loss.backward()\n", "optim_wrapper.update_params(loss)\n")
     .replace("        optim_wrapper.step()\n", ""), None),
    ("no AmpOptimWrapper anywhere in the project", MODEL, {"tools/train.py": LAUNCHER.replace(
        'cfg.optim_wrapper.type = "AmpOptimWrapper"', "pass")}),
    ("a plain OptimWrapper built here", BUILT.replace("AmpOptimWrapper", "OptimWrapper"), None),
])
def test_near_misses(name, source, extra):
    assert lines("AMP303", source, extra_files=extra) == [], name


def test_the_fix_backpropagates_through_the_wrapper():
    out = fixed(BUILT)
    assert "optim_wrapper.backward(loss)" in out and "loss.backward()" not in out
    assert lines("AMP303", out) == []
