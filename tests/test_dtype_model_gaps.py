"""The dtype model's gaps seen in real code: complex tensors are never autocast; a guard the
enclosing condition makes unnecessary; an autocast context returned by a project helper."""
import textwrap

import pytest

from training_util import lines


def autocast(body, params="x, w"):
    return f"import torch\n\ndef f({params}):\n    with torch.autocast('cuda'):\n" + textwrap.indent(textwrap.dedent(body), " " * 8)


# ---- complex tensors -------------------------------------------------------------------------------
@pytest.mark.parametrize("name, body", [
    ("an FFT's output", "y = torch.fft.rfft(x, dim=-1) * w\nreturn y / (y + 1e-8)\n"),
    ("rotary embeddings through view_as_complex", "c = torch.view_as_complex(x.reshape(4, -1, 2))\n"
                                                  "s = c @ c.transpose(-2, -1)\nreturn s / (s + 1e-8)\n"),
    ("a cast to complex64", "c = (x @ w).to(torch.complex64)\nreturn c / (c + 1e-8)\n"),
    # NeMo's multichannel reference estimator: the beamformer W and the PSDs are complex spectra
    ("a quadratic form of a conjugated argument", "p = torch.einsum('...fjm,...fjk,...fkm->...m', x.conj(), w, x).abs()\n"
                                                 "return p / (p + 1e-8)\n"),
    ("torch.conj of an argument", "p = (torch.conj(x) @ w).abs()\nreturn p / (p + 1e-8)\n"),
])
def test_complex_tensors_are_not_autocast(name, body):
    assert lines("AMP102", autocast(body)) == [], name


def test_the_real_product_beside_them_is():
    assert lines("AMP102", autocast("s = x @ w\nreturn s / (s + 1e-8)\n")) == [6]


def test_a_conjugate_of_a_float16_value_is_float16():
    # (conj of a real tensor does nothing: a value known to be float16 stays so)
    assert lines("AMP102", autocast("p = (x @ w).conj()\nreturn p / (p + 1e-8)\n")) == [6]


# ---- a guard made unnecessary by the enclosing condition ---------------------------------------------
@pytest.mark.parametrize("name, body", [
    ("inside `if norm > eps:`", "norm = x @ w\nif norm > 1e-3:\n    x = x / (norm + 1e-12)\nreturn x\n"),
    ("after `if norm.item() <= 0: return`", "norm = x @ w\nif norm.item() <= 0:\n    return x\nreturn x / (norm + 1e-12)\n"),
    ("in the else of `if norm < 1e-6:`", "norm = x @ w\nif norm < 1e-6:\n    y = x\nelse:\n    y = x / (norm + 1e-12)\nreturn y\n"),
])
def test_guard_made_unnecessary_by_the_condition(name, body):
    assert lines("AMP102", autocast(body)) == [], name


@pytest.mark.parametrize("name, body", [
    ("a condition on another value", "norm = x @ w\nif w.sum() > 1e-3:\n    x = x / (norm + 1e-12)\nreturn x\n"),
    ("a bound that admits 0", "norm = x @ w\nif norm > -1:\n    x = x / (norm + 1e-12)\nreturn x\n"),
    ("the division outside the `if`", "norm = x @ w\nif norm > 1e-3:\n    print(norm)\nreturn x / (norm + 1e-12)\n"),
])
def test_conditions_that_do_not_guard(name, body):
    assert lines("AMP102", autocast(body)) != [], name


# ---- an autocast context returned by a project helper -------------------------------------------------
HELPER = """
    import contextlib
    import torch
    def avoid_float16_autocast_context():
        if torch.is_autocast_enabled():
            return torch.autocast(device_type="cuda", dtype=torch.float32)
        return contextlib.nullcontext()
    """
USE = """
    import torch
    {imports}
    def attn(q, k):
        with torch.autocast("cuda"):
            with {helper}():
                s = q @ k.transpose(-2, -1)
                return k / (s + 1e-8)
    """


@pytest.mark.parametrize("name, helper_file, imports, helper", [
    ("in the same file", None, "", "avoid_float16_autocast_context"),
    ("imported from the project", "utils.py", "from utils import avoid_float16_autocast_context",
     "avoid_float16_autocast_context"),
    ("a context-manager class", "utils.py", "from utils import NoAutocast", "NoAutocast"),
])
def test_autocast_helpers_are_resolved(name, helper_file, imports, helper):
    cls = ("import torch\nclass NoAutocast:\n    def __enter__(self):\n"
           "        self.ctx = torch.autocast('cuda', enabled=False)\n        return self.ctx.__enter__()\n"
           "    def __exit__(self, *exc):\n        return self.ctx.__exit__(*exc)\n")
    source = textwrap.dedent(USE.format(imports=imports, helper=helper))
    extra = {}
    if helper_file is None:
        source = textwrap.dedent(HELPER) + source
    else:
        extra[helper_file] = textwrap.dedent(HELPER) + cls
    assert lines("AMP102", source, extra_files=extra) == [], name


def test_a_helper_that_opens_no_autocast_leaves_the_region_as_it_was():
    source = "import contextlib\ndef quiet():\n    return contextlib.nullcontext()\n" + \
        textwrap.dedent(USE.format(imports="", helper="quiet"))
    assert lines("AMP102", source) == [11]


WHISPER_LOG_MEL = '''
import torch
from torch import nn


class Whisper(nn.Module):
    def __init__(self, n_fft=400, hop=160):
        super().__init__()
        self._n_fft = n_fft
        self._hop_length = hop
        self.register_buffer("_mel_filters", torch.zeros(80, 201))

    def _get_mel(self, audio):
        window = torch.hann_window(self._n_fft, device=audio.device)
        stft = torch.stft(audio, self._n_fft, self._hop_length, window=window, return_complex=True)
        magnitudes = stft[..., :-1].abs() ** 2
        mel_spec = self._mel_filters @ magnitudes
        return torch.clamp(mel_spec, min=1e-10).log10()
'''


def test_a_log_mel_of_a_complex_stft_under_the_library_policy(tmp_path):
    # speechbrain's whisper log-mel (a sweep TP): the STFT of a float16 signal is complex32, whose magnitude is
    # float16 again; taking every complex STFT as complex64 lost it
    from cliutil import run, write_project
    root = write_project(tmp_path / "p", {"setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
                                          "pkg/__init__.py": "", "pkg/whisper.py": WHISPER_LOG_MEL})
    out = run(["check", "--no-cache", "--output-format", "concise", "."], root).out
    assert "whisper.py:18:" in out and "AMP102" in out
