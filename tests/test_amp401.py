"""AMP401 unclamped-learnable-temperature: true positives in several shapes, named near misses,
the fixes."""
import textwrap

import pytest

from amplint.config import Settings
from training_util import found, fixed, lines

FP16 = {"train.py": "import torch\nscaler = torch.amp.GradScaler('cuda')\n"}
BF16 = {"train.py": "import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    loss = model(x)\n"}

CLIP = """
import math
import torch
from torch import nn


class CLIP(nn.Module):
    def __init__(self):
        super().__init__()
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))

    def forward(self, image_features, text_features):
        logit_scale = self.logit_scale.exp()
        return logit_scale * image_features @ text_features.t()
"""


def test_clip_logit_scale_is_flagged_with_the_regime_evidence():
    (line, message), = found("AMP401", CLIP, extra_files=FP16)
    assert line == 13
    assert "ln(65504) ≈ 11.1" in message and "train.py:2" in message


@pytest.mark.parametrize("name, source, line", [
    ("torch.exp of the parameter, from torch.nn import Parameter", """
        import torch
        from torch.nn import Module, Parameter

        class Head(Module):
            def __init__(self):
                super().__init__()
                self.logit_scale = Parameter(torch.tensor(2.659))

            def forward(self, a, b):
                return torch.exp(self.logit_scale) * (a @ b.T)
        """, 11),
    ("temperature dividing similarities", """
        import torch
        import torch.nn as nn

        class InfoNCE(nn.Module):
            def __init__(self, init_temperature=0.07):
                super().__init__()
                self.temperature = nn.Parameter(torch.tensor(init_temperature))

            def forward(self, q, k):
                sim = q @ k.T
                return sim / self.temperature
        """, 12),
    ("temperature through a local alias, multi-line", """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.tau = nn.Parameter(torch.tensor(0.1))

            def forward(self, q, k):
                t = self.tau
                logits = torch.einsum(
                    "nc,mc->nm", q, k,
                ) / t
                return logits
        """, 14),
    ("a parameter of any name exponentiated and multiplying a matmul", """
        import torch
        from torch import nn

        class Attn(nn.Module):
            def __init__(self):
                super().__init__()
                self.alpha = nn.Parameter(torch.zeros(1))

            def forward(self, q, k):
                return (q @ k.transpose(-2, -1)) * self.alpha.exp()
        """, 11),
])
def test_flags_unclamped_learnable_scales(name, source, line):
    assert lines("AMP401", source, extra_files=FP16) == [line], name


@pytest.mark.parametrize("name, source, extra", [
    ("bf16 project (float32's range)", CLIP, BF16),
    ("fp32 project", CLIP, None),
    ("clamped at the use site", CLIP.replace("self.logit_scale.exp()",
                                             "self.logit_scale.clamp(max=4.6052).exp()"), FP16),
    ("exp clamped with torch.clamp", CLIP.replace("self.logit_scale.exp()",
                                                  "torch.clamp(self.logit_scale.exp(), max=100)"), FP16),
    ("local alias clamped", CLIP.replace(
        "        return logit_scale", "        logit_scale = torch.clamp(logit_scale, max=100)\n        return logit_scale"),
     FP16),
    ("clamped in forward through .data", CLIP.replace(
        "        logit_scale = self.logit_scale.exp()",
        "        self.logit_scale.data.clamp_(0, 4.6052)\n        logit_scale = self.logit_scale.exp()"), FP16),
    ("the training loop in another file clamps it (open_clip)", CLIP, {
        **FP16,
        "loop.py": "import math\nimport torch\nwith torch.no_grad():\n"
                   "    unwrap_model(model).logit_scale.clamp_(0, math.log(100))\n"}),
    ("a loss in another file clamps the logit scale it is given", CLIP, {
        **FP16, "loss.py": "def clip_loss(a, b, logit_scale):\n    logit_scale = logit_scale.clamp(max=100)\n"
                           "    return logit_scale * a @ b.T\n"}),
    ("not learnable", CLIP.replace("math.log(1 / 0.07))", "math.log(1 / 0.07), requires_grad=False)"), FP16),
    ("a learnable log-variance weighting a loss is not a logit scale", """
        import torch
        from torch import nn

        class Uncertainty(nn.Module):
            def __init__(self):
                super().__init__()
                self.log_var = nn.Parameter(torch.zeros(()))

            def forward(self, loss):
                return loss * self.log_var.exp() + self.log_var
        """, FP16),
    ("a learnable scale that is not exponentiated and does not divide", """
        import torch
        from torch import nn

        class LayerScale(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.gamma = nn.Parameter(1e-5 * torch.ones(dim))

            def forward(self, x):
                return x * self.gamma
        """, FP16),
    ("a fixed temperature (a float, not a parameter)", """
        import torch

        class Head(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.temperature = 0.07  # clamp(...) not needed: fixed

            def forward(self, q, k):
                return (q @ k.T) / self.temperature
        """, FP16),
])
def test_near_misses_stay_silent(name, source, extra):
    assert lines("AMP401", source, extra_files=extra) == [], name


def test_a_clamp_mentioned_only_in_a_comment_does_not_silence():
    source = CLIP.replace("        logit_scale = self.logit_scale.exp()",
                          "        # TODO: logit_scale.clamp_(0, 4.6)\n        logit_scale = self.logit_scale.exp()")
    assert lines("AMP401", source, extra_files=FP16) == [14]


# ---- fixes ---------------------------------------------------------------------------------------
def test_fix_clamps_the_logit_scale_before_exp_and_imports_math():
    source = """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.logit_scale = nn.Parameter(torch.tensor(2.659))

            def forward(self, a, b):
                return torch.exp(self.logit_scale) * (a @ b.T)
        """
    assert fixed(source, extra_files=FP16) == textwrap.dedent(source)  # unsafe: not applied by default
    out = fixed(source, extra_files=FP16, unsafe=True)
    assert "        return torch.exp(self.logit_scale.clamp(max=math.log(100))) * (a @ b.T)\n" in out
    assert "\nimport math\n" in out
    assert out.replace("import math\n", "").replace(".clamp(max=math.log(100))", "") == textwrap.dedent(source)
    assert lines("AMP401", out, extra_files=FP16) == []


def test_fix_clamps_a_temperature_divisor_with_configured_bounds():
    source = """
        import torch
        from torch import nn

        class Head(nn.Module):
            def __init__(self):
                super().__init__()
                self.tau = nn.Parameter(torch.tensor(0.1))
                self.logit_scale = nn.Parameter(torch.tensor(2.659))

            def forward(self, q, k):
                t = self.tau
                return (q @ k.T) / t, self.logit_scale.exp()
        """
    settings = Settings(logit_scale_max="4.6052", temperature_min=0.05)
    out = fixed(source, extra_files=FP16, unsafe=True, settings=settings)
    assert "return (q @ k.T) / t.clamp(min=0.05), self.logit_scale.clamp(max=4.6052).exp()" in out
    assert "import math" not in out
    assert lines("AMP401", out, extra_files=FP16) == []


def test_another_class_clamping_its_own_logit_scale_does_not_silence():
    other = ("import torch\nfrom torch import nn\n\nclass Pool(nn.Module):\n    def forward(self, x):\n"
             "        s = torch.clamp(self.logit_scale, max=4.6).exp()\n        return s * x\n")
    assert lines("AMP401", CLIP, extra_files={**FP16, "pool.py": other}) == [13]


def test_models_in_test_modules_are_fixtures():
    assert lines("AMP401", CLIP, extra_files=FP16, filename="tests/test_clip.py") == []
