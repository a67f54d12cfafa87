"""A helper's parameter is float16 when a caller in float16 code passes a float16 value, not
because of the helper's name or a ``Tensor`` annotation: named near misses (an fp32 nn.Parameter,
a value upcast with .float(), a numpy array, the output of an fp32-list op) and the positives."""
import textwrap

import pytest

from training_util import MODEL_TRAIN as TRAIN, found, lines


HELPER = """
    def nll_loss(p: torch.Tensor):
        return -torch.log(p + 1e-8).mean()
    """


def model(arg, helper=HELPER, extra_init=""):
    return textwrap.dedent(f"""
    import numpy as np
    import torch
    from torch import nn
    """) + textwrap.dedent(helper) + textwrap.dedent(f"""
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
            self.prior = nn.Parameter(torch.ones(8))
        def forward(self, x):
            h = self.fc(x)
            return nll_loss({arg})
    """)


def test_a_float16_value_passed_by_the_forward():
    out = found("AMP102", model("h.sigmoid()"), filename="model.py", extra_files={"train.py": TRAIN})
    assert [line for line, _ in out] == [7]


@pytest.mark.parametrize("name, arg", [
    ("an fp32 nn.Parameter", "self.prior"),
    ("a value upcast with .float()", "h.float().sigmoid()"),
    ("the output of an fp32-list op", "h.softmax(-1)"),
    ("a numpy array", "np.asarray([0.5])"),
])
def test_near_misses_every_caller_passes_something_else(name, arg):
    assert lines("AMP102", model(arg), filename="model.py", extra_files={"train.py": TRAIN}) == [], name


def test_one_float16_caller_is_enough():
    source = model("self.prior") + "\n    def aux(self, x):\n        return nll_loss(self.fc(x).sigmoid())\n"
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == [7]


def test_no_caller_in_sight_keeps_the_regime_assumption():
    # a loss helper in a file of its own, called from nowhere the project shows: model code of an fp16 project
    source = "import torch\n" + textwrap.dedent(HELPER)
    assert lines("AMP102", source, filename="losses.py", extra_files={"train.py": TRAIN, "model.py": model("h")}) == [4]


@pytest.mark.parametrize("arg, expected", [
    ("self.fc(x).sigmoid()", [4]),
    ("self.fc(x).float().sigmoid()", []),  # every caller, in another file, passes float32
])
def test_callers_in_other_files(arg, expected):
    helper_file = "import torch\n" + textwrap.dedent(HELPER)
    caller = textwrap.dedent(f"""
        import torch
        from torch import nn
        from losses import nll_loss
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
            def forward(self, x):
                return nll_loss({arg})
        """)
    assert lines("AMP102", helper_file, filename="losses.py",
                 extra_files={"train.py": TRAIN, "model.py": caller}) == expected


def diffusion(sigma):
    """A helper reached through a method: forward -> self.c_noise(sigma) -> log(sigma)."""
    return textwrap.dedent(f"""
    import torch
    from torch import nn
    def log(t, eps=1e-20):
        return torch.log(t.clamp(min=eps))
    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 1)
        def c_noise(self, sigma):
            return log(sigma) * 0.25
        def forward(self, x):
            sigma = {sigma}
            return self.c_noise(sigma)
    """)


def test_a_float32_argument_passed_on_through_a_method_stays_float32():
    # randn is float32 and exp is on autocast's fp32 list: two calls further down, still float32
    source = diffusion("(-1.2 + 1.2 * torch.randn(x.shape[0], device=x.device)).exp()")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == []


def test_a_float16_argument_passed_on_through_a_method_is_float16():
    # near miss: the same chain with a Linear's output (float16 under autocast) is reported
    source = diffusion("self.fc(x).sigmoid().squeeze(-1)")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == [4]


@pytest.mark.parametrize("arg, expected", [
    ("self.fc(x).sigmoid()", [4]),
    ("self.fc(x).float().sigmoid()", []),
])
def test_a_caller_that_imports_the_helper_under_another_name(arg, expected):
    # the project index names the caller (a line grep for `nll_loss(` could not: it is called as `nl(`)
    helper_file = "import torch\n" + textwrap.dedent(HELPER)
    caller = textwrap.dedent(f"""
        import torch
        from torch import nn
        from losses import nll_loss as nl
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
            def forward(self, x):
                return nl({arg})
        """)
    assert lines("AMP102", helper_file, filename="losses.py",
                 extra_files={"train.py": TRAIN, "model.py": caller}) == expected


def vq(calls, init="pass", decorator="", helper=""):
    """A helper's default guard, and callers that pass (or leave out) an eps of their own."""
    return textwrap.dedent(f"""
    import torch
    from torch import nn
    def log(t, eps=1e-20):
        return torch.log(t.clamp(min=eps))
    def entropy(prob, eps=1e-5):
        return (-prob * log(prob, eps=eps)).sum(dim=-1)
    {helper}
    class VQ(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            {init}
        {decorator}
        def forward(self, x):
            h = self.proj(x)
            return {calls}
    """)


def test_a_default_guard_every_float16_caller_overrides_is_not_reported():
    source = vq("log(h, eps=1e-3).mean() + entropy(h.sigmoid()).mean()")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == []


def test_a_default_guard_a_float16_caller_relies_on_is_reported():
    # near miss: one float16 caller leaves eps out
    source = vq("log(h, eps=1e-3).mean() + log(h.sigmoid()).mean()")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == [4]


def test_a_default_guard_relied_on_only_by_a_float32_caller_is_not_reported():
    # near miss: the caller that uses the default passes float32; the float16 one passes its own eps
    source = vq("log(h, eps=1e-3).mean() + log(h.float().sigmoid()).mean()")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == []


# (not Gumbel noise of a uniform draw: AMP102 leaves sampling noise alone, test_amp102_sampling_noise.py)
NEG_LOG = "def neg_log_prob(t): return -log(t.sigmoid())"


def test_a_function_held_in_an_attribute_is_called_through_it():
    # ``self.sample = neg_log_prob`` then ``self.sample(h)`` from a region with autocast off: the helper
    # runs in float32, its default guard is fine; called under autocast (near miss), it is float16
    off = vq("self.sample(h)", init="self.sample = neg_log_prob", helper=NEG_LOG, decorator="@torch.autocast('cuda', enabled=False)")
    on = vq("self.sample(h)", init="self.sample = neg_log_prob", helper=NEG_LOG)
    assert lines("AMP102", off, filename="model.py", extra_files={"train.py": TRAIN}) == []
    assert lines("AMP102", on, filename="model.py", extra_files={"train.py": TRAIN}) == [4]


def schedule(draw):
    """A value drawn by a method, passed on through a call with ``*args`` to a helper's guard."""
    return textwrap.dedent(f"""
    import torch
    from torch import nn
    def log(t, eps=1e-20):
        return torch.log(t.clamp(min=eps))
    class Diffusion(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 1)
        def random_times(self, x):
            return {draw}
        def p_losses(self, x, times, noise=None):
            return log(times).mean()
        def forward(self, x, *args, **kwargs):
            times = self.random_times(x)
            return self.p_losses(x, times, *args, **kwargs)
    """)


def test_a_method_that_returns_float32_gives_float32_through_starred_calls():
    source = schedule("torch.zeros(x.shape[0], device=x.device).float().uniform_(0, 1)")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == []


def test_a_method_that_returns_a_float16_value_keeps_the_regime():
    # near miss: the drawn value is a Linear's output under autocast
    source = schedule("self.fc(x).sigmoid().squeeze(-1)")
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == [4]


def test_a_module_function_that_returns_float32_gives_float32():
    # denoising-diffusion's discretized likelihood: cdf = approx_cdf(exp(-log_scales) * x) is float32
    source = textwrap.dedent("""
    import torch
    from torch import nn
    def log(t, eps=1e-15):
        return torch.log(t.clamp(min=eps))
    def approx_cdf(x):
        return 0.5 * (1.0 + torch.tanh(0.8 * (x + 0.044715 * (x ** 3))))
    def likelihood(x, log_scales):
        return log(approx_cdf(torch.exp(-log_scales) * x))
    class Net(nn.Module):
        def forward(self, x, lv):
            return likelihood(x, 0.5 * lv)
    """)
    assert lines("AMP102", source, filename="model.py", extra_files={"train.py": TRAIN}) == []
    # near miss: a helper whose result is float16 (a sigmoid of a float16 product; the model's input
    # itself is the loader's float32 data) keeps the regime's float16
    half = source.replace("log(approx_cdf(torch.exp(-log_scales) * x))", "log(halve(x @ x))") + \
        "def halve(x):\n    return x.sigmoid() / 2\n"
    assert lines("AMP102", half, filename="model.py", extra_files={"train.py": TRAIN}) == [4]


CODER = textwrap.dedent("""
import torch
from torch import nn
EPS = 1e-8
class BoxCoder:
    def __init__(self, eps: float = EPS):
        self.eps = eps
    def encode(self, h, ha):
        ha += self.eps
        return torch.log(h / ha)
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.size = nn.Linear(16, 2)
        self.coder = BoxCoder()
    def forward(self, x):
        h, ha = {pair}.unbind(-1)
        return self.coder.encode(h, ha)
""")


def test_a_method_called_through_an_instance_held_in_an_attribute():
    # effdet's box coder (eps too small for fp16, fixed upstream): the head passes float16 sizes
    assert lines("AMP102", CODER.format(pair="self.size(x).relu()"), filename="model.py",
                 extra_files={"train.py": TRAIN}) == [4]
    # near miss: the head passes float32 sizes
    assert lines("AMP102", CODER.format(pair="self.size(x).float().relu()"), filename="model.py",
                 extra_files={"train.py": TRAIN}) == []


# ---- methods called through an instance held in another file ---------------------------------------
CODER_FILE = textwrap.dedent("""
    import torch
    class BoxCoder:
        def __init__(self, eps: float = 1e-8):
            self.eps = eps
        def encode(self, h, ha):
            return torch.log(h / (ha + self.eps))
    """)

HEAD = textwrap.dedent("""
    from torch import nn
    from coder import BoxCoder
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.size = nn.Linear(16, 2)
            self.coder = {built}
        def forward(self, x):
            h, ha = {pair}.unbind(-1)
            return self.coder.encode(h, ha)
    """)


def test_a_method_called_through_an_instance_a_model_of_another_file_holds():
    # the effdet shape with the coder in its own module: the head passes float16 sizes
    head = HEAD.format(built="BoxCoder()", pair="self.size(x).relu()")
    assert lines("AMP102", CODER_FILE, filename="coder.py",
                 extra_files={"model.py": head, "train.py": TRAIN}) == [4]
    # near misses: the head passes float32 sizes; the attribute holds something else; a call
    # through the class that passes the instance itself is not a bound call
    fp32 = HEAD.format(built="BoxCoder()", pair="self.size(x).float().relu()")
    assert lines("AMP102", CODER_FILE, filename="coder.py",
                 extra_files={"model.py": fp32, "train.py": TRAIN}) == []
    other = HEAD.format(built="make_coder()", pair="self.size(x).relu()").replace(
        "from coder import BoxCoder", "from coder import BoxCoder\ndef make_coder():\n    return BoxCoder()")
    assert lines("AMP102", CODER_FILE, filename="coder.py",
                 extra_files={"model.py": other, "train.py": TRAIN}) == []


ASSIGNER = textwrap.dedent("""
    import torch.nn.functional as F
    class Assigner:
        def assign(self, scores, labels):
            return F.binary_cross_entropy(scores, labels, reduction="none").sum(-1)
    """)

ASSIGNING_HEAD = textwrap.dedent("""
    import torch
    from torch import nn
    import torch.nn.functional as F
    from assigner import Assigner
    class {cls}:
        def __init__(self):
            super().__init__()
            self.cls = nn.Linear(8, 4)
            self.assigner = Assigner()
        @torch.no_grad()
        def target_assign(self, scores, labels):
            return self.assigner.assign(scores.sigmoid(), labels)
        def {method}(self, x, labels):
            logits = self.cls(x)
            cost = self.target_assign(logits.detach(), labels)
            return F.binary_cross_entropy_with_logits(logits, labels) + 0 * cost.mean()
    """)


def test_a_plain_class_method_a_model_calls_from_another_file_runs_under_its_autocast():
    # nanodet's soft-label assigner: F.binary_cross_entropy in a plain class that a detection head
    # calls inside the training step's fp16 autocast (a RuntimeError there)
    head = ASSIGNING_HEAD.format(cls="Net(nn.Module)", method="forward")
    assert lines("AMP202", ASSIGNER, filename="assigner.py",
                 extra_files={"model.py": head, "train.py": TRAIN}) == [5]
    # near miss: the caller is a data-side class (no forward, no Module base), not model code
    data = ASSIGNING_HEAD.format(cls="LabelBuilder", method="build")
    assert lines("AMP202", ASSIGNER, filename="assigner.py",
                 extra_files={"model.py": data, "train.py": TRAIN}) == []
