"""AMP102 fp16-unsafe-epsilon: guards that vanish (or overflow as divisors) in float16."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.config import Settings
from amplint.docs import examples, read_page

from conftest import HALF_TRAINING, MIXED_TRAINING, codes, fixed_source



def only(source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c == "AMP102"]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), **kw) if f.code == "AMP102"]


def fixed(source, extra_files=None, unsafe=True, settings=None):
    return fixed_source(source, extra_files, unsafe, settings or Settings(select=["AMP102"]))


# ---- true positives ------------------------------------------------------------------------------
AUTOCAST_DECORATOR = """
    import torch
    import torch.nn as nn
    class Gate(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
        @torch.autocast("cuda")
        def forward(self, x):
            w = self.proj(x).relu()
            return w / (w.amax(dim=-1, keepdim=True) + 1e-8)
"""


def test_decorated_forward_denominator_is_certain_and_names_evidence():
    [f] = findings(AUTOCAST_DECORATOR)
    assert f.confidence == "certain"
    assert f.line == 11 and "1e-8 rounds to 0 in float16" in f.message
    [ev] = f.evidence
    assert 'torch.autocast("cuda")' in ev.what and ev.path.endswith("snippet.py") and ev.line == 8


@pytest.mark.parametrize("name, source, extra", [
    ("alias th, with block, matmul output",
     """
     import torch as th
     def f(a, b, x):
         with th.autocast("cuda"):
             s = a @ b
             return x / (s.abs() + 1e-10)
     """, {}),
    ("self.eps from an __init__ default, pure half",
     """
     import torch
     class Norm(torch.nn.Module):
         def __init__(self, eps=1e-8):
             super().__init__()
             self.eps = eps
         def forward(self, x, y):
             return x / (y + self.eps)
     """, {"train.py": HALF_TRAINING}),
    ("module constant in a log argument",
     """
     import torch
     EPS = 1e-12
     def nll(probs):
         return -torch.log(probs + EPS)
     """, {"train.py": HALF_TRAINING}),
    ("method log of a guarded sum",
     """
     import torch
     def entropy(weights):
         return (weights + 1e-9).log()
     """, {"train.py": HALF_TRAINING}),
    ("clamp(min=...) method",
     """
     import torch
     def f(x):
         return x.clamp(min=1e-10)
     """, {"train.py": HALF_TRAINING}),
    ("torch.clamp function, positional min",
     """
     from torch import clamp
     def f(x):
         return clamp(x, 1e-8)
     """, {"train.py": HALF_TRAINING}),
    ("clamp_min",
     """
     import torch
     def f(x):
         return torch.log(x.clamp_min(1e-8))
     """, {"train.py": HALF_TRAINING}),
    ("through a local name, multi-line",
     """
     import torch
     def f(x, y):
         denom = (
             y.abs().amax(dim=-1, keepdim=True)
             + 1e-8
         )
         return x / denom
     """, {"train.py": HALF_TRAINING}),
    ("sqrt in a denominator (hand-written layer norm, pure half)",
     """
     import torch
     def layer_norm(x):
         mu = x.mean(-1, keepdim=True)
         var = (x - mu).square().mean(-1, keepdim=True)
         return (x - mu) / torch.sqrt(var + 1e-8)
     """, {"train.py": HALF_TRAINING}),
    ("parameter default",
     """
     import torch
     def ratio(x, y, eps=1e-8):
         return torch.div(x, y + eps)
     """, {"train.py": HALF_TRAINING}),
    ("F.normalize default eps in pure half, from torch.nn import functional",
     """
     from torch.nn import functional as F
     def embed(x):
         return F.normalize(x, dim=-1)
     """, {"train.py": HALF_TRAINING}),
    ("F.normalize explicit eps",
     """
     import torch.nn.functional as F
     def embed(x):
         return F.normalize(x, p=2, dim=-1, eps=1e-12)
     """, {"train.py": HALF_TRAINING}),
    ("fp16-mixed project: argument of a helper (likely)",
     """
     import torch
     def weights(x, y):
         return x / (y + 1e-8)
     """, {"train.py": MIXED_TRAINING}),
    ("subnormal guard, constant numerator",
     """
     import torch
     def inverse(x):
         return 1 / (x + 1e-6)
     """, {"train.py": HALF_TRAINING}),
    ("subnormal guard, unrelated numerator, augmented division",
     """
     import torch
     def scale(x, y):
         x /= y + 1e-7
         return x
     """, {"train.py": HALF_TRAINING}),
])
def test_true_positives(name, source, extra):
    assert only(source, extra_files=extra) == ["AMP102"], name


def test_subnormal_guard_is_likely_and_explains_the_overflow():
    [f] = findings("import torch\ndef inverse(x):\n    return 1 / (x + 1e-6)\n", extra_files={"train.py": HALF_TRAINING})
    assert f.confidence == "likely"
    assert "1e-6 is subnormal in float16" in f.message and "65504" in f.message and "train.py:3" in f.explained()


def test_precision_override_makes_arguments_half():
    src = "import torch\ndef f(x, y):\n    return x / (y + 1e-8)\n"
    assert only(src, precision="fp16") == ["AMP102"]
    assert only(src, precision="fp32") == []


# ---- near misses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source, extra", [
    ("norm runs in float32 under autocast",
     """
     import torch
     def f(layer, x):
         with torch.autocast("cuda"):
             h = layer(x)
             return h / (h.norm(dim=-1, keepdim=True) + 1e-8)
     """, {}),
    ("sum runs in float32 under autocast",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             w = (a @ b).relu()
             return w / (w.sum(-1, keepdim=True) + 1e-8)
     """, {}),
    ("bf16 autocast keeps float32's range",
     """
     import torch
     def f(a, b, x):
         with torch.autocast("cuda", dtype=torch.bfloat16):
             s = a @ b
             return x / (s + 1e-8)
     """, {}),
    ("bf16 project",
     """
     import torch
     def f(x, y):
         return x / (y + 1e-8)
     """, {"train.py": "import torch\nmodel = model.to(torch.bfloat16)\nloss.backward()\n"}),
    ("LayerNorm eps is added in float32 by the kernel",
     """
     import torch.nn as nn
     class Block(nn.Module):
         def __init__(self, d):
             super().__init__()
             self.norm = nn.LayerNorm(d, eps=1e-12)
         def forward(self, x):
             return self.norm(x)
     """, {"train.py": HALF_TRAINING}),
    ("numerator bounded by the denominator",
     """
     import torch
     def f(y):
         return y / (y + 1e-6)
     """, {"train.py": HALF_TRAINING}),
    ("numerator bounded through a local name",
     """
     import torch
     def f(w):
         total = w.abs().amax(-1, keepdim=True)
         return w / (total + 1e-6)
     """, {"train.py": HALF_TRAINING}),
    (".float() before the guard",
     """
     import torch
     def f(x, y):
         return x.float() / (y.float() + 1e-8)
     """, {"train.py": HALF_TRAINING}),
    ("pure float32 project",
     """
     import torch
     def f(x, y):
         return x / (y + 1e-8)
     """, {"train.py": "import snippet\ndef main(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n"}),  # trained in float32 (a lone library file: see test_library_policy.py)
    ("an fp16-normal guard",
     """
     import torch
     def f(x, y):
         return x / (y + 1e-4)
     """, {"train.py": HALF_TRAINING}),
    ("subnormal guard in a log is finite",
     """
     import torch
     def f(p):
         return torch.log(p + 1e-6)
     """, {"train.py": HALF_TRAINING}),
    ("1 / (x + 1e-6) under autocast: the reciprocal runs in float32",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             s = a @ b
             return 1 / (s + 1e-6)
     """, {}),
    ("F.normalize runs in float32 under autocast",
     """
     import torch
     import torch.nn.functional as F
     def f(a, b):
         with torch.autocast("cuda"):
             return F.normalize(a @ b, dim=-1)
     """, {}),
    ("a sum that is not applied as a denominator, log or sqrt",
     """
     import torch
     def f(x):
         y = x + 1e-8
         return y * 2
     """, {"train.py": HALF_TRAINING}),
    ("subnormal clamp that is not a denominator",
     """
     import torch
     def f(x):
         return torch.log(x.clamp(min=1e-6))
     """, {"train.py": HALF_TRAINING}),
    ("autocast disabled, float32 operands",
     """
     import torch
     def f(a, b, x):
         with torch.autocast("cuda"):
             s = a @ b
             with torch.autocast("cuda", enabled=False):
                 return x.float() / (s.float() + 1e-8)
     """, {}),
    ("guards of a hand-written BCE are AMP202's",
     """
     import torch
     def f(z, y):
         p = torch.sigmoid(z)
         return -(y * torch.log(p + 1e-8) + (1 - y) * torch.log(1 - p + 1e-8)).mean()
     """, {"train.py": HALF_TRAINING}),
    ("eps passed in by the caller is unknown",
     """
     import torch
     def f(x, y, eps):
         return x / (y + eps)
     """, {"train.py": HALF_TRAINING}),
])
def test_near_misses(name, source, extra):
    assert only(source, extra_files=extra) == [], name


def test_handwritten_bce_guards_are_reported_once_by_amp202():
    src = textwrap.dedent("""
        import torch
        def f(z, y):
            p = torch.sigmoid(z)
            return -(y * torch.log(p + 1e-8) + (1 - y) * torch.log(1 - p + 1e-8)).mean()
    """)
    found = codes(src, extra_files={"train.py": HALF_TRAINING})
    assert found.count("AMP202") == 1 and "AMP102" not in found and "AMP201" not in found


# ---- fixes ---------------------------------------------------------------------------------------
def test_page_example_fixes_to_use_instead():
    page = read_page("AMP102")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad) == good


def test_fix_is_unsafe_and_not_applied_by_default():
    src = textwrap.dedent(AUTOCAST_DECORATOR)
    assert fixed(src, unsafe=False) == src
    [f] = findings(AUTOCAST_DECORATOR)
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_a_constant_defined_once_is_reported_and_fixed_at_its_definition():
    src = """
        import torch
        class Norm(torch.nn.Module):
            def __init__(self, eps=1e-8):
                super().__init__()
                self.eps = eps
            def forward(self, x, y):
                d = x / (y + self.eps)
                return d, torch.log(y + self.eps)
    """
    [f] = findings(src, extra_files={"train.py": HALF_TRAINING})
    assert f.line == 4  # the default, where the value is written
    assert [r.line for r in f.related] == [8, 9] and all("`self.eps` used here" in r.what for r in f.related)
    out = fixed(src, extra_files={"train.py": HALF_TRAINING})
    assert "def __init__(self, eps=1e-4):" in out and "d = x / (y + self.eps)" in out


@pytest.mark.parametrize("definition, use", [
    ("EPS = 1e-8\n", "EPS"),
    ("", "eps"),
])
def test_module_constant_and_parameter_default(definition, use):
    src = (f"import torch\n{definition}def f(x, eps=1e-20):\n    with torch.autocast('cuda'):\n"
           f"        s = x @ x.T\n        d = x / (s + {use})\n        return d, torch.log(s + {use})\n")
    [f] = findings(src)
    assert f.line == 2 and len(f.related) == 2


def test_a_literal_is_reported_where_it_is():
    src = "import torch\ndef f(x):\n    with torch.autocast('cuda'):\n        s = x @ x.T\n        return x / (s + 1e-8)\n"
    [f] = findings(src)
    assert f.line == 5 and f.related == ()


def test_fix_adds_eps_to_normalize_and_uses_configured_value():
    src = "import torch.nn.functional as F\ndef embed(x):\n    return F.normalize(x, dim=-1)\n"
    out = fixed(src, extra_files={"train.py": HALF_TRAINING}, settings=Settings(select=["AMP102"], safe_eps=1e-3))
    assert out == "import torch.nn.functional as F\ndef embed(x):\n    return F.normalize(x, dim=-1, eps=0.001)\n"


def test_fix_for_subnormal_guard_clears_the_finding():
    src = "import torch\ndef inverse(x):\n    return 1 / (x + 1e-6)\n"
    out = fixed(src, extra_files={"train.py": HALF_TRAINING})
    assert out == "import torch\ndef inverse(x):\n    return 1 / (x + 1e-4)\n"
    assert only(out, extra_files={"train.py": HALF_TRAINING}) == []


def test_no_fix_when_configured_value_is_not_fp16_normal():
    src = "import torch\ndef inverse(x):\n    return 1 / (x + 1e-6)\n"
    out = fixed(src, extra_files={"train.py": HALF_TRAINING}, settings=Settings(select=["AMP102"], safe_eps=1e-5))
    assert out == src


@pytest.mark.parametrize("comments, reported", [
    (("", ""), True),
    (("  # noqa: AMP102", "  # noqa: AMP102"), False),  # every use suppressed: as before the finding moved
    (("  # noqa: AMP102", ""), True),  # one use left unsuppressed
    (("  # noqa: AMP501", "  # noqa"), True),  # another code on one of them
])
def test_noqa_on_every_use_of_a_constant_suppresses_the_finding_at_its_definition(comments, reported):
    first, second = comments
    src = ("import torch\nEPS = 1e-8\ndef f(x):\n    with torch.autocast('cuda'):\n        s = x @ x.T\n"
           f"        d = x / (s + EPS){first}\n        return d, torch.log(s + EPS){second}\n")
    assert [f.line for f in findings(src)] == ([2] if reported else [])
