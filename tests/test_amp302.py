"""AMP302 clip-before-unscale: true positives in several shapes, named near misses, the fix."""
import textwrap

import pytest

from training_util import found, fixed, lines

HEAD = """
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils import clip_grad_norm_

model = nn.Linear(16, 1).cuda()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.amp.GradScaler("cuda")
"""


def test_message_names_the_scaler_and_optimizer():
    (line, message), = found("AMP302", HEAD + """
for x, y in loader:
    with torch.autocast("cuda"):
        loss = F.mse_loss(model(x), y)
    scaler.scale(loss).backward()
    clip_grad_norm_(model.parameters(), 1.0)
    scaler.step(optimizer)
    scaler.update()
""")
    assert line == 15
    assert "scaler.unscale_(optimizer)" in message and "65536" in message


@pytest.mark.parametrize("name, source, line", [
    ("local scaler, from-import", """
        from torch.nn.utils import clip_grad_norm_

        def step(model, loss, optimizer):
            scaler = torch.amp.GradScaler("cuda")
            scaler.scale(loss).backward()
            clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
            scaler.update()
        """, 7),
    ("attribute scaler, nn.utils, value clipping, multi-line", """
        from torch import nn

        class Trainer:
            def step(self, loss):
                self.scaler.scale(loss).backward()
                nn.utils.clip_grad_value_(
                    self.model.parameters(),
                    clip_value=0.5,
                )
                self.scaler.step(self.optimizer)
                self.scaler.update()
        """, 7),
    ("scaler as a parameter, alias torch as th, clip under a condition", """
        import torch as th

        def step(model, loss, opt, grad_scaler, max_norm):
            grad_scaler.scale(loss).backward()
            if max_norm:
                norm = th.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
            grad_scaler.step(opt)
            grad_scaler.update()
        """, 7),
    ("the scaler branch of an if/else reaches the clip without unscale_", """
        import torch

        def step(model, loss, opt, scaler):
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if scaler is not None:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
        """, 9),
    ("scaled loss bound to a name first", """
        import torch

        def step(model, loss, opt, scaler):
            scaled = scaler.scale(loss)
            scaled.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        """, 7),
])
def test_flags_clip_of_scaled_gradients(name, source, line):
    assert lines("AMP302", source) == [line], name


@pytest.mark.parametrize("name, source", [
    ("unscale_ then clip", """
        import torch

        def step(model, loss, opt, scaler):
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
        """),
    ("clip with no scaler at all", """
        import torch

        def step(model, loss, opt):
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        """),
    ("clip in a bf16 loop", """
        import torch

        def train(model, loader, opt, scaler):
            for x, y in loader:
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x, y)
                scaler.scale(loss).backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(opt)
                scaler.update()
        """),
    ("gradient accumulation: unscale, clip and step every k-th iteration", """
        import torch

        def train(model, loader, opt, scaler, k):
            for i, (x, y) in enumerate(loader):
                with torch.autocast("cuda"):
                    loss = model(x, y) / k
                scaler.scale(loss).backward()
                if (i + 1) % k == 0:
                    scaler.unscale_(opt)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                    scaler.step(opt)
                    scaler.update()
                    opt.zero_grad()
        """),
    ("the same AMP switch tested twice", """
        import torch

        def step(model, loss, opt, scaler, use_amp, clip):
            if use_amp:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            if use_amp:
                scaler.unscale_(opt)
            if clip:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        """),
    ("two spellings of the AMP switch", """
        import torch

        def step(self, loss, clip):
            if self.use_amp:
                self.scaler.scale(loss).backward()
            else:
                loss.backward()
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), clip)
        """),
    ("a helper that unscales between backward and clip", """
        import torch

        class Trainer:
            def step(self, loss):
                self.scaler.scale(loss).backward()
                self._unscale_grads()
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
                self.scaler.step(self.optimizer)
                self.scaler.update()
        """),
    ("accelerate clips unscaled gradients itself", """
        def step(accelerator, model, loss, opt):
            accelerator.backward(loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
        """),
    ("zero_grad between the scaled backward and a clip of fresh gradients", """
        import torch

        def steps(model, l1, l2, opt, scaler):
            scaler.scale(l1).backward()
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            l2.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        """),
])
def test_near_misses_stay_silent(name, source):
    assert lines("AMP302", source) == [], name


def test_fix_inserts_unscale_with_the_names_of_the_following_step():
    source = """
        import torch

        class Trainer:
            def step(self, loss, max_norm):
                self.grad_scaler.scale(loss).backward()
                if max_norm:  # keep this comment
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
                self.grad_scaler.step(self.opt)
                self.grad_scaler.update()
        """
    assert fixed(source) == textwrap.dedent("""
        import torch

        class Trainer:
            def step(self, loss, max_norm):
                self.grad_scaler.scale(loss).backward()
                if max_norm:  # keep this comment
                    self.grad_scaler.unscale_(self.opt)
                    torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
                self.grad_scaler.step(self.opt)
                self.grad_scaler.update()
        """)


def test_fix_in_a_one_line_suite_and_fixed_code_is_clean():
    source = """
        import torch

        def step(model, loss, opt, scaler, clip):
            scaler.scale(loss).backward()
            if clip: torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            scaler.step(opt)
            scaler.update()
        """
    out = fixed(source)
    assert "if clip: scaler.unscale_(opt); torch.nn.utils.clip_grad_norm_(model.parameters(), clip)" in out
    assert lines("AMP302", out) == []


def test_no_fix_when_several_optimizers_are_stepped():
    source = """
        import torch

        def step(gen, disc, loss, opt_g, opt_d, scaler):
            scaler.scale(loss).backward()
            torch.nn.utils.clip_grad_norm_([*gen.parameters(), *disc.parameters()], 1.0)
            scaler.step(opt_g)
            scaler.step(opt_d)
            scaler.update()
        """
    assert lines("AMP302", source) == [6]
    assert fixed(source) == textwrap.dedent(source)
