"""AMP201 log-of-half-probability: log of a float16 sigmoid / softmax / 1 - p."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.config import Settings
from amplint.docs import examples, read_page

from conftest import HALF_TRAINING, codes, fixed_source

BF16_TRAINING = "import torch\nmodel = model.to(torch.bfloat16)\nloss = model(x).sum()\nloss.backward()\n"


def only(source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c == "AMP201"]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), **kw) if f.code == "AMP201"]


def fixed(source, extra_files=None, unsafe=True, select=("AMP201",)):
    return fixed_source(source, extra_files, unsafe, Settings(select=list(select)))


# ---- true positives ------------------------------------------------------------------------------
def test_decorated_forward_is_certain_and_names_evidence():
    [f] = findings("""
        import torch
        import torch.nn as nn
        class Scorer(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.head = nn.Linear(dim, 1)
            @torch.autocast("cuda")
            def forward(self, x):
                logits = self.head(x)
                return torch.log(torch.sigmoid(logits))
    """)
    assert f.confidence == "certain" and f.line == 11
    assert "sigmoid(x) rounds to 0 in float16 for x below about -17.3" in f.message
    assert "F.logsigmoid(x)" in f.help and "snippet.py:8" in f.explained()


@pytest.mark.parametrize("name, source, extra", [
    ("alias th, with block, through a name",
     """
     import torch as th
     def f(a, b):
         with th.autocast("cuda"):
             logits = a @ b
             probs = th.sigmoid(logits)
             return th.log(probs)
     """, {}),
    ("method forms, 1 - p",
     """
     import torch
     def f(model, x):
         with torch.autocast("cuda"):
             p = model(x).sigmoid()
             return (1 - p).log()
     """, {}),
    ("from torch import sigmoid, log2",
     """
     import torch
     from torch import sigmoid
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log2(sigmoid(a @ b))
     """, {}),
    ("log1p(-p)",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log1p(-torch.sigmoid(a @ b))
     """, {}),
    ("softmax in pure half, from torch.nn import functional as F",
     """
     import torch
     from torch.nn import functional as F
     def f(logits):
         probs = F.softmax(logits, dim=-1)
         return torch.log(probs)
     """, {"train.py": HALF_TRAINING}),
    ("softmax then indexing, multi-line",
     """
     import torch
     def nll(logits, target):
         probs = logits.softmax(-1)
         picked = probs.gather(
             1,
             target[:, None],
         )
         return -torch.log(picked).mean()
     """, {"train.py": HALF_TRAINING}),
    ("nn.Sigmoid module attribute",
     """
     import torch
     import torch.nn as nn
     class Head(nn.Module):
         def __init__(self):
             super().__init__()
             self.fc = nn.Linear(4, 1)
             self.act = nn.Sigmoid()
         def forward(self, x):
             return torch.log(self.act(self.fc(x)))
     """, {"train.py": HALF_TRAINING}),
    (".float() after the sigmoid is too late",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             p = torch.sigmoid(a @ b)
             return torch.log(p.float())
     """, {}),
    ("float32 softmax cast back to float16 before the log",
     """
     import torch
     import torch.nn.functional as F
     def f(scores):
         attn = F.softmax(scores.float(), dim=-1).type_as(scores)
         return -(attn * torch.log(attn)).sum(-1)
     """, {"train.py": HALF_TRAINING}),
    ("normalising division in pure half",
     """
     import torch
     def f(scores):
         w = scores.exp()
         return torch.log(w / w.sum(-1, keepdim=True))
     """, {"train.py": HALF_TRAINING}),
    ("bf16: log(1 - p) rounds at 1.0",
     """
     import torch
     def f(model, x):
         with torch.autocast("cuda", dtype=torch.bfloat16):
             p = torch.sigmoid(model(x))
             return torch.log(1 - p)
     """, {}),
])
def test_true_positives(name, source, extra):
    assert only(source, extra_files=extra) == ["AMP201"], name


def test_no_fix_when_a_later_cast_rounds():
    src = """
        import torch
        import torch.nn.functional as F
        def f(scores):
            attn = F.softmax(scores.float(), dim=-1).type_as(scores)
            return torch.log(attn)
    """
    [f] = findings(src, extra_files={"train.py": HALF_TRAINING})
    assert f.fix is None


def test_bf16_complement_message():
    [f] = findings("""
        import torch
        def f(model, x):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                p = torch.sigmoid(model(x))
                return torch.log(1 - p)
    """)
    assert "log(1 - p) with p a bfloat16 sigmoid" in f.message and "above about 6.2" in f.message


# ---- near misses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source, extra", [
    ("F.logsigmoid",
     """
     import torch
     import torch.nn.functional as F
     def f(a, b):
         with torch.autocast("cuda"):
             return F.logsigmoid(a @ b)
     """, {}),
    ("log_softmax",
     """
     import torch
     def f(logits):
         return torch.log_softmax(logits, -1)
     """, {"train.py": HALF_TRAINING}),
    ("softmax runs in float32 under autocast",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log(torch.softmax(a @ b, dim=-1))
     """, {}),
    ("softmax with dtype=torch.float32 in pure half",
     """
     import torch
     import torch.nn.functional as F
     def f(logits):
         return torch.log(F.softmax(logits, -1, dtype=torch.float32))
     """, {"train.py": HALF_TRAINING}),
    ("sigmoid of float32 logits",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             logits = a @ b
             return torch.log(torch.sigmoid(logits.float()))
     """, {}),
    ("log of a value that is not a probability we can trace",
     """
     import torch
     def f(probs):
         return torch.log(probs.float())
     """, {"train.py": HALF_TRAINING}),
    ("bf16: log(p) has float32's range",
     """
     import torch
     def f(model, x):
         with torch.autocast("cuda", dtype=torch.bfloat16):
             return torch.log(torch.sigmoid(model(x)))
     """, {}),
    ("float32 project",
     """
     import torch
     def f(logits):
         return torch.log(torch.sigmoid(logits))
     """, {"train.py": "import snippet\ndef main(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n"}),  # trained in float32 (a lone library file: see test_library_policy.py)
    ("guarded with a surviving constant",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log(torch.sigmoid(a @ b) + 1e-4)
     """, {}),
    ("guard that vanishes is AMP102's",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log(torch.sigmoid(a @ b).clamp(min=1e-8))
     """, {}),
    ("clamped at the definition",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             p = torch.sigmoid(a @ b).clamp(1e-4, 1 - 1e-3)
             return torch.log(p)
     """, {}),
    ("log1p(p) cannot reach log(0)",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return torch.log1p(torch.sigmoid(a @ b))
     """, {}),
    ("hand-written BCE is AMP202's",
     """
     import torch
     def f(a, b, y):
         with torch.autocast("cuda"):
             p = torch.sigmoid(a @ b)
             return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
     """, {}),
    ("autocast disabled with float32 inputs",
     """
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             s = a @ b
             with torch.autocast("cuda", enabled=False):
                 return torch.log(torch.sigmoid(s.float()))
     """, {}),
    ("math.log is not a tensor log",
     """
     import math
     import torch
     def f(a, b):
         with torch.autocast("cuda"):
             return math.log(torch.sigmoid(a @ b).item())
     """, {}),
])
def test_near_misses(name, source, extra):
    assert only(source, extra_files=extra) == [], name


def test_the_guard_case_goes_to_amp102_once():
    src = textwrap.dedent("""
        import torch
        def f(a, b):
            with torch.autocast("cuda"):
                return torch.log(torch.sigmoid(a @ b) + 1e-8)
    """)
    assert sorted(c for c in codes(src) if c in ("AMP102", "AMP201")) == ["AMP102"]


# ---- fixes ---------------------------------------------------------------------------------------
def test_page_example_fixes_to_use_instead():
    page = read_page("AMP201")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad, select=("ALL",)) == good


@pytest.mark.parametrize("before, after", [
    ("torch.log(torch.sigmoid(z))", "F.logsigmoid(z)"),
    ("torch.log(1 - torch.sigmoid(z))", "F.logsigmoid(-z)"),
    ("torch.log(1.0 - z.sigmoid())", "F.logsigmoid(-z)"),
    ("torch.log1p(-torch.sigmoid(z + 1))", "F.logsigmoid(-(z + 1))"),
    ("torch.log(1 - torch.sigmoid(-z))", "F.logsigmoid(z)"),
    ("torch.sigmoid(z).log()", "F.logsigmoid(z)"),
    ("torch.log(torch.softmax(z, dim=-1))", "torch.log_softmax(z, dim=-1)"),
    ("z.softmax(-1).log()", "z.log_softmax(-1)"),
    ("torch.log(F.softmax(z, -1))", "F.log_softmax(z, -1)"),
])
def test_safe_fixes(before, after):
    src = f"import torch\nimport torch.nn.functional as F\ndef f(z):\n    return {before}\n"
    out = fixed(src, extra_files={"train.py": HALF_TRAINING}, unsafe=False)
    assert out == f"import torch\nimport torch.nn.functional as F\ndef f(z):\n    return {after}\n"
    assert only(out, extra_files={"train.py": HALF_TRAINING}) == []


def test_fix_adds_the_functional_import_when_missing():
    src = "import torch\n\n\ndef f(z):\n    return torch.log(torch.sigmoid(z))\n"
    out = fixed(src, extra_files={"train.py": HALF_TRAINING})
    assert out == "import torch\nimport torch.nn.functional as F\n\n\ndef f(z):\n    return F.logsigmoid(z)\n"


def test_fix_uses_the_files_alias_or_spells_it_out():
    src = "import torch as th\nfrom torch.nn import functional as nnf\ndef f(z):\n    return th.log(th.sigmoid(z))\n"
    assert fixed(src, extra_files={"train.py": HALF_TRAINING}).endswith("return nnf.logsigmoid(z)\n")
    src = "import torch as th\nF = 3\ndef f(z):\n    return th.log(th.sigmoid(z))\n"
    assert fixed(src, extra_files={"train.py": HALF_TRAINING}).endswith("return th.nn.functional.logsigmoid(z)\n")


def test_fix_through_a_name_reuses_unchanged_logits():
    src = """
        import torch
        import torch.nn.functional as F
        def f(z):
            p = torch.sigmoid(z)
            acc = (p > 0.5).float().mean()
            return -torch.log(p).mean(), acc
    """
    out = fixed(src, extra_files={"train.py": HALF_TRAINING}, unsafe=False)
    assert "return -F.logsigmoid(z).mean(), acc" in out and "p = torch.sigmoid(z)" in out


def test_fix_when_logits_were_rebound_is_the_unsafe_float_cast():
    src = """
        import torch
        import torch.nn.functional as F
        def f(z):
            p = torch.sigmoid(z)
            z = z * 2
            return torch.log(p)
    """
    assert fixed(src, extra_files={"train.py": HALF_TRAINING}, unsafe=False) == textwrap.dedent(src)
    out = fixed(src, extra_files={"train.py": HALF_TRAINING}, unsafe=True)
    assert "p = torch.sigmoid(z.float())" in out and "return torch.log(p)" in out
    assert only(out, extra_files={"train.py": HALF_TRAINING}) == []


# ---- clamps on the way: a bound is a guard only if it survives rounding -----------------------------
CLAMPED = """
    import torch
    import torch.nn as nn
    class Scorer(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.head = nn.Linear(dim, 1)
        @torch.autocast("cuda")
        def forward(self, x):
            p = torch.sigmoid(self.head(x))
            return {log}
"""


@pytest.mark.parametrize("log, reported", [
    ("torch.log1p(-p.clamp(max=1.0 - 1e-6))", True),  # 1 - 1e-6 is 1.0 in float16: no guard
    ("torch.log(1 - p.clamp(max=1 - 1e-6))", True),
    ("torch.log(1 - torch.clamp(p, 1e-6, 1 - 1e-7))", True),  # the lower bound guards log(p), not log(1 - p)
    ("torch.log1p(-p.clamp_max(1 - 1e-6))", True),
    # near misses
    ("torch.log1p(-p.clamp(max=1.0 - 1e-3))", False),  # 0.999 rounds to 0.99902 in float16: 1 - p >= 9.8e-4
    ("torch.log(p.clamp(max=1 - 1e-6))", True),  # an upper bound does not keep log(p) off 0
    ("torch.log(p.clamp(min=1e-4, max=1 - 1e-6))", False),  # the lower bound does
    ("torch.log(1 - p.clamp(max=limit))", False),  # a bound in a name: not judged
    ("torch.log((1 - p).clamp(min=1e-3))", False),  # a guard on the log's own argument
])
def test_clamp_bounds_on_the_way_to_the_log(log, reported):
    src = CLAMPED.replace("{log}", log).replace("def forward(self, x)", "def forward(self, x, limit=0.999)")
    found = findings(src)
    assert bool(found) == reported


def test_a_vanished_upper_bound_is_named_and_its_fix_is_unsafe():
    src = CLAMPED.replace("{log}", "torch.log1p(-p.clamp(max=1.0 - 1e-6))")
    [f] = findings(src)
    assert "`p.clamp(max=1.0 - 1e-6)` does not prevent it: its upper bound rounds to 1.0 in float16" in f.message
    assert fixed(src, unsafe=False) == textwrap.dedent(src)  # no safe fix: the clamp also caps the loss
    out = fixed(src, unsafe=True)  # the sigmoid in float32, where the clamp is a guard again
    assert "p = torch.sigmoid(self.head(x).float())" in out and "p.clamp(max=1.0 - 1e-6)" in out


def test_bfloat16_rounds_a_coarser_upper_bound_to_one():
    # bfloat16 keeps 8 bits: 1 - 1e-3 is 1.0 there, though not in float16.
    src = textwrap.dedent(CLAMPED.replace("{log}", "torch.log(1 - p.clamp(max=1 - 1e-3))")
                          .replace('@torch.autocast("cuda")', '@torch.autocast("cuda", dtype=torch.bfloat16)'))
    assert [f.code for f in findings(src)] == ["AMP201"]


def test_a_lower_clamp_that_rounds_to_zero_stays_amp102s():
    src = CLAMPED.replace("{log}", "torch.log(p.clamp(min=1e-9, max=1.0))")
    assert findings(src) == []
    assert "AMP102" in codes(textwrap.dedent(src))


GLINER = """
import torch
from torch import nn
class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.pair = nn.Linear(8, 1)
    def forward(self, x, valid_mask):
        probabilities = torch.sigmoid(self.pair(x)) * {factor}
        return -torch.log1p(-probabilities.clamp(max=1.0 - 1e-6)).sum()
"""


@pytest.mark.parametrize("factor, expected", [
    ("valid_mask.to(x.dtype)", ["AMP201"]),  # GLiNER2's pair loss (fixed upstream): a 0/1 mask keeps p as it is
    ("(x[..., :1] > 0).half()", ["AMP201"]),
    ("self.weight", []),  # near miss: a weight scales p, it is no longer a probability
])
def test_probabilities_times_a_mask_are_still_probabilities(factor, expected):
    train = "import torch\nimport snippet\ndef main(model, opt, x):\n    with torch.autocast('cuda'):\n" \
            "        loss = model(x)\n    torch.amp.GradScaler('cuda').scale(loss).backward()\n"
    assert [c for c in codes(GLINER.format(factor=factor), extra_files={"train.py": train}) if c == "AMP201"] == expected


# ---- the in-place sigmoid: `x.sigmoid_()` is a sigmoid that overwrites its logits -------------------
FOCAL = """
    import torch
    import torch.nn as nn
    class Head(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.conv = nn.Conv2d(dim, 4, 3)
        @torch.autocast("cuda")
        def forward(self, x, targets):
            inputs = self.conv(x)
            pred = torch.clamp(SIGMOID, min=1e-4, max=1 - 1e-4)
            pos = torch.log(pred) * targets.eq(1)
            neg = torch.log(1 - pred) * torch.pow(1 - targets, 4)
            return -(pos + neg).sum()
"""


@pytest.mark.parametrize("sigmoid", ["inputs.sigmoid_()", "torch.sigmoid_(inputs)", "inputs.sigmoid()"])
def test_the_in_place_sigmoid_is_a_sigmoid(sigmoid):
    """CenterNet2's heatmap focal loss (fixed upstream for fp16): 1 - 1e-4 rounds to 1.0 in float16,
    so the clamp does not keep log(1 - p) finite, whichever form computes the sigmoid."""
    [f] = findings(FOCAL.replace("SIGMOID", sigmoid))
    assert "log(1 - p)" in f.message and "rounds to 1.0 in float16" in f.message


@pytest.mark.parametrize("unsafe", [False, True])
def test_no_fix_for_the_in_place_sigmoid(unsafe):
    """The logits were overwritten by the probabilities: neither logsigmoid of them nor a float32
    copy (which no longer overwrites them) is the same program."""
    src = FOCAL.replace("SIGMOID", "inputs.sigmoid_()")
    assert fixed(src, unsafe=unsafe) == textwrap.dedent(src)


def test_an_in_place_sigmoid_of_a_float32_value_is_silent():
    src = FOCAL.replace("SIGMOID", "inputs.float().sigmoid_()")
    assert findings(src) == []
