"""AMP202 bce-under-autocast: BCE on probabilities where autocast refuses it or float16 breaks it."""
import textwrap

import pytest

from amplint.api import lint_source
from amplint.config import Settings
from amplint.docs import examples, read_page

from conftest import HALF_TRAINING, MIXED_TRAINING, codes, fixed_source



def only(source, **kw):
    return [c for c in codes(textwrap.dedent(source), **kw) if c == "AMP202"]


def findings(source, **kw):
    return [f for f in lint_source(textwrap.dedent(source), **kw) if f.code == "AMP202"]


def fixed(source, extra_files=None, unsafe=True, select=("AMP202",)):
    return fixed_source(source, extra_files, unsafe, Settings(select=list(select)))


# ---- true positives ------------------------------------------------------------------------------
def test_functional_bce_in_autocast_block_is_certain_and_names_evidence():
    [f] = findings("""
        import torch
        import torch.nn.functional as F
        def step(model, x, y):
            with torch.autocast("cuda"):
                loss = F.binary_cross_entropy(torch.sigmoid(model(x)), y)
            return loss
    """)
    assert f.confidence == "certain" and f.line == 6
    assert "unsafe to autocast" in f.message and "binary_cross_entropy_with_logits" in f.help
    [ev] = f.evidence
    assert ev.path.endswith("snippet.py") and ev.line == 5 and "float16 autocast" in ev.what


@pytest.mark.parametrize("name, source, extra", [
    ("import torch as th, bf16 autocast (CUDA refuses it for any dtype)",
     """
     import torch as th
     def step(model, x, y):
         with th.autocast("cuda", dtype=th.bfloat16):
             return th.nn.functional.binary_cross_entropy(model(x), y)
     """, {}),
    ("from torch.nn import functional as F, decorator",
     """
     import torch
     from torch.nn import functional as F
     @torch.autocast("cuda")
     def loss_fn(p, y):
         return F.binary_cross_entropy(p, y)
     """, {}),
    ("from torch.nn.functional import binary_cross_entropy, deprecated autocast",
     """
     from torch.cuda.amp import autocast
     from torch.nn.functional import binary_cross_entropy
     def step(model, x, y):
         with autocast():
             return binary_cross_entropy(model(x), y)
     """, {}),
    ("nn.BCELoss attribute called in a forward of an fp16-mixed project (likely)",
     """
     import torch.nn as nn
     class Loss(nn.Module):
         def __init__(self):
             super().__init__()
             self.crit = nn.BCELoss(reduction="sum")
         def forward(self, probs, target):
             return self.crit(probs, target)
     """, {"train.py": MIXED_TRAINING}),
    ("local nn.BCELoss, multi-line call",
     """
     import torch
     from torch import nn
     def step(model, x, y):
         criterion = nn.BCELoss()
         with torch.autocast(device_type="cuda"):
             loss = criterion(
                 model(x),
                 y,
             )
         return loss
     """, {}),
    ("nn.BCELoss()(...) inline",
     """
     import torch
     def step(model, x, y):
         with torch.autocast("cuda"):
             return torch.nn.BCELoss()(model(x), y)
     """, {}),
    ("hand-written BCE on a float16 sigmoid, pure half",
     """
     import torch
     def bce(logits, target):
         p = torch.sigmoid(logits)
         return -(target * torch.log(p) + (1 - target) * torch.log(1 - p)).mean()
     """, {"train.py": HALF_TRAINING}),
    ("hand-written BCE, methods, other sign and order",
     """
     import torch
     def bce(model, x, y):
         with torch.autocast("cuda"):
             p = model(x).sigmoid()
             return -(1 - y) * (1 - p).log() - y * p.log()
     """, {}),
    ("hand-written BCE with guards that vanish in float16",
     """
     import torch
     EPS = 1e-8
     def bce(model, x, y):
         with torch.autocast("cuda"):
             p = torch.sigmoid(model(x))
             return -(y * torch.log(p + EPS) + (1 - y) * torch.log(1 - p + EPS))
     """, {}),
    ("hand-written BCE with guards named by locals (doctr's LW-DETR focal cost, bug set 12)",
     """
     import torch
     def bce(model, x, y):
         alpha, gamma, eps = 0.25, 2.0, 1e-8
         with torch.autocast("cuda"):
             p = torch.sigmoid(model(x))
             return -(alpha * y * (p + eps).log() + (1 - alpha) * (1 - y) * (1 - p + eps).log()).mean()
     """, {}),
    ("nn.BCELoss picked by a conditional expression (sentence-transformers' CrossEncoder, bug set 12)",
     """
     import torch
     from torch import nn
     def fit(model, batches, num_labels=1, loss_fct=None):
         if loss_fct is None:
             loss_fct = nn.BCELoss() if num_labels == 1 else nn.CrossEntropyLoss()
         for x, y in batches:
             with torch.autocast("cuda"):
                 loss = loss_fct(torch.sigmoid(model(x)).view(-1), y)
     """, {}),
    ("hand-written BCE in bf16: log(1 - p)",
     """
     import torch
     def bce(model, x, y):
         with torch.autocast("cuda", dtype=torch.bfloat16):
             p = torch.sigmoid(model(x))
             return -(y * torch.log(p) + (1 - y) * torch.log(1 - p))
     """, {}),
])
def test_true_positives(name, source, extra):
    assert only(source, extra_files=extra) == ["AMP202"], name


# ---- near misses ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name, source, extra", [
    ("BCEWithLogitsLoss",
     """
     import torch
     import torch.nn as nn
     def step(model, x, y):
         crit = nn.BCEWithLogitsLoss()
         with torch.autocast("cuda"):
             return crit(model(x), y)
     """, {}),
    ("binary_cross_entropy_with_logits",
     """
     import torch
     import torch.nn.functional as F
     def step(model, x, y):
         with torch.autocast("cuda"):
             return F.binary_cross_entropy_with_logits(model(x), y)
     """, {}),
    ("BCE outside autocast in a float32 project",
     """
     import torch
     import torch.nn.functional as F
     def loss_fn(p, y):
         return F.binary_cross_entropy(p, y)
     """, {}),
    ("BCE after the autocast block of the same function",
     """
     import torch
     import torch.nn.functional as F
     def step(model, x, y):
         with torch.autocast("cuda"):
             logits = model(x)
         return F.binary_cross_entropy(torch.sigmoid(logits.float()), y)
     """, {}),
    ("BCE inside autocast(enabled=False)",
     """
     import torch
     import torch.nn.functional as F
     def step(model, x, y):
         with torch.autocast("cuda"):
             logits = model(x)
             with torch.autocast("cuda", enabled=False):
                 return F.binary_cross_entropy(torch.sigmoid(logits.float()), y)
     """, {}),
    ("CPU autocast does not ban BCE",
     """
     import torch
     import torch.nn.functional as F
     def step(model, x, y):
         with torch.autocast("cpu"):
             return F.binary_cross_entropy(model(x), y)
     """, {}),
    ("hand-written BCE on float32 probabilities",
     """
     import torch
     def bce(model, x, y):
         with torch.autocast("cuda"):
             p = torch.sigmoid(model(x).float())
             return -(y * torch.log(p) + (1 - y) * torch.log(1 - p))
     """, {}),
    ("hand-written BCE with guards that survive float16",
     """
     import torch
     def bce(model, x, y):
         with torch.autocast("cuda"):
             p = torch.sigmoid(model(x))
             return -(y * torch.log(p + 1e-4) + (1 - y) * torch.log(1 - p + 1e-4))
     """, {}),
    ("hand-written BCE in a float32 project",
     """
     import torch
     def bce(logits, y):
         p = torch.sigmoid(logits)
         return -(y * torch.log(p) + (1 - y) * torch.log(1 - p))
     """, {}),
    ("a conditional expression picking no BCELoss",
     """
     import torch
     from torch import nn
     def fit(model, batches, num_labels=1):
         loss_fct = nn.BCEWithLogitsLoss() if num_labels == 1 else nn.CrossEntropyLoss()
         for x, y in batches:
             with torch.autocast("cuda"):
                 loss = loss_fct(model(x).view(-1), y)
     """, {}),
    ("hand-written BCE with a local guard large enough for float16",
     """
     import torch
     def bce(model, x, y):
         alpha, eps = 0.25, 1e-3
         with torch.autocast("cuda"):
             p = torch.sigmoid(model(x)).clamp(eps, 1 - eps)
             return -(alpha * y * p.log() + (1 - alpha) * (1 - y) * (1 - p).log()).mean()
     """, {}),
    ("a BCELoss class that is not torch's",
     """
     import torch
     from mylib import BCELoss
     def step(model, x, y):
         crit = BCELoss()
         with torch.autocast("cuda"):
             return crit(model(x), y)
     """, {}),
])
def test_near_misses(name, source, extra):
    assert only(source, extra_files=extra) == [], name


def test_handwritten_bce_is_one_finding_not_three():
    src = textwrap.dedent("""
        import torch
        def bce(model, x, y):
            with torch.autocast("cuda"):
                p = torch.sigmoid(model(x))
                return -(y * torch.log(p + 1e-8) + (1 - y) * torch.log(1 - p + 1e-8))
    """)
    assert [c for c in codes(src) if c in ("AMP102", "AMP201", "AMP202")] == ["AMP202"]


def test_logs_in_separate_statements_are_amp201s():
    src = textwrap.dedent("""
        import torch
        def bce(model, x, y):
            with torch.autocast("cuda"):
                p = torch.sigmoid(model(x))
                pos = y * torch.log(p)
                neg = (1 - y) * torch.log(1 - p)
                return -(pos + neg)
    """)
    assert sorted(c for c in codes(src) if c in ("AMP201", "AMP202")) == ["AMP201", "AMP201"]


# ---- fixes ---------------------------------------------------------------------------------------
def test_page_example_fixes_to_use_instead():
    page = read_page("AMP202")
    [bad], [good] = examples(page, "Example"), examples(page, "Use instead")
    assert fixed(bad, select=("ALL",)) == good


def test_functional_fix_keeps_arguments_and_is_safe():
    src = """
        import torch
        import torch.nn.functional as F
        def step(model, x, y, w):
            with torch.autocast("cuda"):
                z = model(x)
                return F.binary_cross_entropy(z.sigmoid(), y, weight=w, reduction="sum")
    """
    out = fixed(src, unsafe=False)
    assert 'return F.binary_cross_entropy_with_logits(z, y, weight=w, reduction="sum")' in out
    assert only(out) == []


def test_functional_fix_through_a_name_and_a_from_import():
    src = """
        import torch
        from torch.nn.functional import binary_cross_entropy
        def step(model, x, y):
            with torch.autocast("cuda"):
                z = model(x)
                p = torch.sigmoid(z)
                return binary_cross_entropy(p, y), p
    """
    out = fixed(src, unsafe=False)
    assert "return F.binary_cross_entropy_with_logits(z, y), p" in out
    assert "import torch.nn.functional as F" in out


def test_no_fix_when_the_input_is_not_a_sigmoid():
    src = """
        import torch
        import torch.nn.functional as F
        def step(model, x, y):
            with torch.autocast("cuda"):
                return F.binary_cross_entropy(model(x), y)
    """
    [f] = findings(src)
    assert f.fix is None
    assert fixed(src) == textwrap.dedent(src)


def test_bce_loss_object_fix_replaces_class_and_drops_every_sigmoid():
    src = """
        import torch
        import torch.nn as nn
        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.crit = nn.BCELoss(reduction="sum")
            @torch.autocast("cuda")
            def forward(self, z1, z2, y):
                return self.crit(torch.sigmoid(z1), y) + self.crit(z2.sigmoid(), y)
    """
    out = fixed(src, unsafe=False)
    assert 'self.crit = nn.BCEWithLogitsLoss(reduction="sum")' in out
    assert "return self.crit(z1, y) + self.crit(z2, y)" in out
    assert only(out) == []


def test_bce_loss_object_not_fixed_when_one_call_takes_probabilities():
    src = """
        import torch
        import torch.nn as nn
        class Loss(nn.Module):
            def __init__(self):
                super().__init__()
                self.crit = nn.BCELoss()
            @torch.autocast("cuda")
            def forward(self, z, p, y):
                return self.crit(torch.sigmoid(z), y) + self.crit(p, y)
    """
    assert fixed(src) == textwrap.dedent(src)


def test_bce_loss_object_not_fixed_when_passed_elsewhere():
    src = """
        import torch
        import torch.nn as nn
        def step(model, x, y, log):
            crit = nn.BCELoss()
            log(crit)
            with torch.autocast("cuda"):
                return crit(torch.sigmoid(model(x)), y)
    """
    assert fixed(src) == textwrap.dedent(src)


def test_inline_bce_loss_fix():
    src = """
        import torch
        def step(model, x, y):
            with torch.autocast("cuda"):
                z = model(x)
                return torch.nn.BCELoss()(torch.sigmoid(z), y)
    """
    assert "return torch.nn.BCEWithLogitsLoss()(z, y)" in fixed(src, unsafe=False)


@pytest.mark.parametrize("before", [
    "-(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()",
    "-(torch.log(p) * y + (1 - y) * torch.log(1 - p)).mean()",
    "-y * torch.log(p) - (1 - y) * torch.log(1 - p)",
    "torch.mean(-(y * p.log() + (1 - y) * (1 - p).log()))",
])
def test_handwritten_fix_is_unsafe(before):
    src = f"""
        import torch
        import torch.nn.functional as F
        def bce(model, x, y):
            with torch.autocast("cuda"):
                z = model(x)
                p = torch.sigmoid(z)
                return {before}
    """
    assert fixed(src, unsafe=False) == textwrap.dedent(src)
    out = fixed(src, unsafe=True)
    assert 'F.binary_cross_entropy_with_logits(z, y, reduction="none")' in out
    assert "torch.log" not in out.split("return", 1)[1] and ".log()" not in out.split("return", 1)[1]
    assert only(out) == []


def test_handwritten_focal_loss_is_flagged_without_a_fix():
    src = """
        import torch
        def focal(model, x, y):
            with torch.autocast("cuda"):
                p = torch.sigmoid(model(x))
                return -(y * (1 - p) ** 2 * torch.log(p) + (1 - y) * p ** 2 * torch.log(1 - p)).mean()
    """
    [f] = findings(src)
    assert f.fix is None


@pytest.mark.parametrize("eps, reported", [("1e-7", True), ("1e-3", False)])
def test_a_clamped_handwritten_bce_is_hazardous_when_its_upper_bound_rounds_to_one(eps, reported):
    # p.clamp(1e-7, 1 - 1e-7): 1 - 1e-7 is 1.0 in float16, so log(1 - p) is still -inf; 1 - 1e-3 survives.
    src = ("import torch\nimport torch.nn as nn\nclass Head(nn.Module):\n    def __init__(self, dim):\n"
           "        super().__init__()\n        self.fc = nn.Linear(dim, 1)\n    @torch.autocast('cuda')\n"
           f"    def forward(self, x, y):\n        p = torch.sigmoid(self.fc(x)).clamp({eps}, 1 - {eps})\n"
           "        return -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()\n")
    assert ("AMP202" in codes(src)) == reported


_METRIC = """
import torch
import torch.nn.functional as F
from torchmetrics import Metric
class ScalarMetricsBase(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("preds", default=[])
    def update(self, preds, targets):
        self.preds.append(preds)
class BinaryCrossEntropy(ScalarMetricsBase):
    def compute(self):
        preds, targets = torch.cat(self.preds), torch.cat(self.targets)
        return F.binary_cross_entropy(input=preds, target=targets)
"""


def test_bce_in_a_metric_compute_runs_under_the_training_steps_autocast():
    # InnerEye (microsoft/InnerEye-DeepLearning PR #402): a torchmetrics Metric called as
    # `metric(posteriors, labels)` in a Lightning training step runs update() and compute() in its
    # forward, under the step's autocast; the Metric is reached through a base class of the same file
    [f] = findings(_METRIC, extra_files={"train.py": MIXED_TRAINING})
    assert f.line == 14 and f.confidence == "likely"
    # near miss: a plain class deriving from a base of the same file that is no Module (a report
    # builder run after training) is not model code
    plain = _METRIC.replace("from torchmetrics import Metric", "class Metric:\n    pass")
    assert findings(plain, extra_files={"train.py": MIXED_TRAINING}) == []
