"""Where a value's float16 comes from, across methods and files, in the shapes of real false
positives: a ``self.m(...)`` of another class of the file is no call of this ``m``; a parameter
moved to a device is input data; a module-level utility no project code uses is not reached by the
training step; a helper's normalised return bounds a contraction. Each with its near miss."""
import textwrap

import pytest

from conftest import codes
from training_util import MODEL_TRAIN as TRAIN, lines



def lint(code, source, filename="model.py", **extra):
    return lines(code, textwrap.dedent(source), filename=filename, extra_files={"train.py": TRAIN, **extra})


# ---- self.m(...) runs the m of this class (and of its relatives), not another class's ---------------
def two_classes(base):
    return f"""
    import torch
    from torch import nn
    class Aligner(nn.Module):
        def __init__(self):
            super().__init__()
            self.prior = nn.Parameter(torch.ones(8))
        def forward(self, x):
            return self.score(self.prior)
        def score(self, weights):
            return torch.log(weights.clamp(min=1e-12))
    class Predictor({base}):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)
        def forward(self, x):
            return self.score(self.fc(x).sigmoid())
        def infer(self, x):
            return x
    """


def test_a_method_of_another_class_calling_the_same_name_is_not_a_caller():
    # speechbrain FastSpeech2.py: SPNPredictor.infer's self.forward(...) was taken for a call of
    # BinaryAlignmentLoss.forward further down the file
    assert lint("AMP102", two_classes("nn.Module")) == []


def test_near_miss_a_subclass_calling_the_inherited_method_is_a_caller():
    assert lint("AMP102", two_classes("Aligner")) == [11]


# ---- a parameter moved to a device is input data ----------------------------------------------------
def enhancer(move):
    return f"""
    import torch
    from torch import nn
    class Enhancer(nn.Module):
        def __init__(self):
            super().__init__()
            self.device = "cuda"
        def forward(self, noisy):
            noisy = {move}
            norms = torch.clamp(noisy.abs().amax(dim=1, keepdim=True), min=1e-8)
            return noisy / norms
    """


@pytest.mark.parametrize("move", ["noisy.to(self.device)", "noisy.cuda()", "noisy.to(device=self.device)"])
def test_an_argument_moved_to_a_device_is_float32_input_data(move):
    # speechbrain inference/enhancement.py: the waveform the caller hands in, scaled to [-1, 1]
    assert lint("AMP102", enhancer(move)) == []


@pytest.mark.parametrize("move", ["noisy", "noisy.to(torch.float16)", "noisy.half()"])
def test_near_miss_an_argument_not_moved_or_cast_to_half_stays_float16(move):
    assert lint("AMP102", enhancer(move)) == [10]


def test_near_miss_a_float16_value_a_caller_passes_is_float16_wherever_it_is_moved():
    source = enhancer("noisy.to(self.device)").replace(
        "return noisy / norms", "return noisy / norms\n        def run(self, x):\n"
                                "            return self.forward(self.fc(x))") \
        .replace('self.device = "cuda"', 'self.device = "cuda"\n            self.fc = nn.Linear(8, 8)')
    assert lint("AMP102", source) == [11]


# ---- a module-level utility that no project code uses ------------------------------------------------
UTILITY = """
    import torch
    def separate_spectra(w, h):
        v = w @ h
        return torch.log10(torch.clamp(v, min=1e-10))
    """


PACKAGE = {"pkg/__init__.py": "", "model.py": "import torch\nclass Net(torch.nn.Module):\n    pass\n"}


def test_a_package_utility_no_project_code_calls_is_not_reached_by_the_training_step():
    # speechbrain processing/NMF.py: NMF_separate_spectra, run by users after training
    assert lint("AMP102", UTILITY, filename="pkg/utils.py", **PACKAGE) == []


def test_near_miss_a_script_helper_stands_for_a_helper_called_out_of_sight():
    assert lint("AMP102", UTILITY, filename="utils.py", **PACKAGE) == [5]


def test_an_uncalled_function_of_a_module_the_model_uses_is_not_reached():
    # imagen video: `def log(t, eps=1e-12)` never called, beside helpers the model does call
    source = textwrap.dedent(UTILITY) + "\ndef l2norm(t):\n    return t / t.norm(dim=-1, keepdim=True)\n"
    model = "import torch\nimport utils\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return utils.l2norm(x)\n"
    assert lint("AMP102", source, filename="utils.py", **{"model.py": model}) == []


@pytest.mark.parametrize("name, model", [
    ("imported by name", "import torch\nfrom pkg.utils import separate_spectra\nclass Net(torch.nn.Module):\n"
                         "    def forward(self, w, h):\n        return separate_spectra(w, h)\n"),
    ("through its module", "import torch\nfrom pkg import utils\nclass Net(torch.nn.Module):\n"
                           "    def forward(self, w, h):\n        return utils.separate_spectra(w, h)\n"),
])
def test_near_miss_a_utility_the_model_calls_is_reached(name, model):
    assert lint("AMP102", UTILITY, filename="pkg/utils.py", **{**PACKAGE, "model.py": model}) == [5], name


def test_near_miss_a_utility_named_in_its_own_file_is_kept():
    source = textwrap.dedent(UTILITY) + "\nSEPARATORS = {'nmf': separate_spectra}\n"
    assert lint("AMP102", source, filename="pkg/utils.py", **PACKAGE) == [5]


# ---- a contraction with a helper's normalised attention ----------------------------------------------
def attention_map(normalise):
    return f"""
    import torch
    from torch import nn
    def f(x):
        with torch.autocast("cuda"):
            return Attn()(x)
    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qk = nn.Linear(8, 16)
            self.attn_drop = nn.Dropout(0.1)
        def get_attention(self, x):
            q, k = self.qk(x).chunk(2, dim=-1)
            attn = (q @ k.transpose(-2, -1)).exp()
            {normalise}
            attn = self.attn_drop(attn)
            return attn
        def forward(self, x, distances):
            attn_map = self.get_attention(x).mean(0)
            return torch.einsum("nm,hnm->h", distances, attn_map) / distances.size(0)
    """


def test_a_contraction_with_attention_a_helper_normalises_is_bounded():
    # timm convit.py get_attention_map: attention rows normalised by their own sum, averaged over the batch
    assert [c for c in codes(textwrap.dedent(attention_map("attn /= attn.sum(dim=-1).unsqueeze(-1)")))
            if c == "AMP204"] == []


@pytest.mark.parametrize("normalise", ["attn = attn * 2.0", "attn /= attn.amax(dim=-1, keepdim=True).sum()"])
def test_near_miss_unnormalised_scores_from_the_helper_are_not_bounded(normalise):
    assert [c for c in codes(textwrap.dedent(attention_map(normalise))) if c == "AMP204"] == ["AMP204"]


LAUNCHED = textwrap.dedent("""
    import torch
    from accelerate import Accelerator
    import helpers
    def train(model, loader):
        accelerator = Accelerator()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        model, opt, loader = accelerator.prepare(model, opt, loader)
        for x in loader:
            loss = helpers.{call}(model(x)).mean()
            accelerator.backward(loss)
            opt.step()
    """)
HELPERS = """
    import torch
    def log(t, eps=1e-20):
        return torch.log(t.clamp(min=eps))
    def l2norm(t):
        return t / t.norm(dim=-1, keepdim=True)
    """


@pytest.mark.parametrize("call, expected", [
    ("l2norm", []),  # audiolm soundstream.py: `def log(t, eps=1e-20)` never called, under the launcher's fp16 run
    ("log", [3]),  # near miss: the launcher's run calls it (reported at the default)
])
def test_an_uncalled_helper_under_a_launchers_fp16_run(call, expected):
    assert lines("AMP102", textwrap.dedent(HELPERS), filename="helpers.py",
                 extra_files={"train.py": LAUNCHED.format(call=call)}) == expected
