"""AMP203 on denominators that cannot overflow, from projects never used for tuning: homogeneous
coordinates divided by their last one (kornia's projections and homographies: a contraction over
the 3-4 coordinates of a point) and a softmax written out after subtracting the max (gpt-neox's
vocab-parallel cross entropy: every exp is at most 1). Each with near misses that stay reported."""
import textwrap

import pytest

from conftest import codes
from test_amp203 import HALF, MIXED


def amp203(body, params="K, T, pts, tilt, x, y, a, b"):
    source = f"import torch\ndef f({params}):\n" + textwrap.indent(textwrap.dedent(body), "    ")
    return [c for c in codes(source, precision="fp16-mixed") if c == "AMP203"]


# ---- homogeneous coordinates over their last one ---------------------------------------------------
@pytest.mark.parametrize("body", [
    "uvw = K @ pts\nreturn uvw[:, :2] / uvw[:, 2:3]\n",  # a pinhole projection
    "p = torch.stack([x, y, torch.ones_like(x)], -1) @ tilt.transpose(-2, -1)\nreturn p[..., 0] / p[..., 2]\n",
    "H = K @ T\nreturn H / (H[..., -1:, -1:] + 1e-8)\n",  # a homography normalised to H[2, 2] = 1
    "flow = torch.matmul(K, pts)\nz = 1.0 / flow[:, 2]\nreturn flow[:, 0] * z\n",
    "w = (K @ pts).transpose(2, 1)\nreturn w[:, :, :2] / (w[:, :, [2]] + 1e-4)\n",
    "H = K @ T\nH /= H[..., 2:3, 2:3]\nreturn H\n",
])
def test_a_perspective_division_is_not_reported(body):
    assert amp203(body) == []


@pytest.mark.parametrize("name, body", [
    ("another value over the product's entry", "uvw = K @ pts\nreturn x / uvw[:, 2:3]\n"),
    ("the whole product, viewed", "s = a @ b.transpose(-2, -1)\nreturn x / s[..., None]\n"),
    ("a slice of unknown length", "s = a @ b.transpose(-2, -1)\nn = x.shape[0]\nreturn s[:, :n] / s[:, n:]\n"),
])
def test_near_misses_stay_reported(name, body):
    assert amp203(body) == ["AMP203"], name


# ---- a softmax written out after subtracting the max -----------------------------------------------
SOFTMAX = {
    "in place": """
        def softmax_ce(logits):
            logits_max = torch.max(logits, dim=-1)[0]
            logits.sub_(logits_max.unsqueeze(dim=-1))
            exp_logits = torch.exp(logits)
            sum_exp = exp_logits.sum(dim=-1)
            return exp_logits / sum_exp.unsqueeze(-1)
        """,
    "by subtraction": """
        def softmax_ce(logits):
            shifted = logits - logits.max(dim=-1, keepdim=True).values
            exp_logits = shifted.exp()
            return exp_logits / exp_logits.sum(dim=-1, keepdim=True)
        """,
    "amax": """
        def softmax_ce(logits):
            exp_logits = torch.exp(logits - torch.amax(logits, dim=-1, keepdim=True))
            return exp_logits / exp_logits.sum(dim=-1, keepdim=True)
        """,
}


def lint_half(body):
    source = "import torch\n" + textwrap.dedent(body)
    return [c for c in codes(source, extra_files={"train.py": HALF}) if c == "AMP203"]


@pytest.mark.parametrize("name", sorted(SOFTMAX))
def test_a_sum_of_max_shifted_exps_is_not_reported(name):
    assert lint_half(SOFTMAX[name]) == [], name


@pytest.mark.parametrize("name, body", [
    ("no shift", SOFTMAX["by subtraction"].replace(" - logits.max(dim=-1, keepdim=True).values", "")),
    ("shifted by another tensor's max", SOFTMAX["by subtraction"].replace("logits.max(", "other.max(")
     .replace("softmax_ce(logits)", "softmax_ce(logits, other)")),
    ("shifted by a min", SOFTMAX["amax"].replace("torch.amax", "torch.amin")),
    ("shifted in place after the exp", SOFTMAX["in place"].replace(
        "logits.sub_(logits_max.unsqueeze(dim=-1))\n            exp_logits = torch.exp(logits)",
        "exp_logits = torch.exp(logits)\n            logits.sub_(logits_max.unsqueeze(dim=-1))")),
])
def test_near_misses_unshifted_exps_stay_reported(name, body):
    assert lint_half(body) == ["AMP203"], name


def test_under_autocast_neither_is_reported_for_the_sum():
    # autocast runs exp and sum in float32: nothing to report either way (the regime check, not this one)
    source = "import torch\n" + textwrap.dedent(SOFTMAX["by subtraction"].replace(" - logits.max(dim=-1, keepdim=True).values", ""))
    assert [c for c in codes(source, extra_files={"train.py": MIXED}) if c == "AMP203"] == []


def test_an_exp_written_into_an_alias_of_max_shifted_logits():
    # gpt-neox mpu/cross_entropy.py: exp_logits = logits; torch.exp(logits, out=exp_logits); div_ by its sum
    body = """
        def softmax_ce(logits):
            logits_max = torch.max(logits, dim=-1)[0]
            logits.sub_(logits_max.unsqueeze(dim=-1))
            exp_logits = logits
            torch.exp(logits, out=exp_logits)
            sum_exp = exp_logits.sum(dim=-1)
            exp_logits.div_(sum_exp.unsqueeze(dim=-1))
            return exp_logits
        """
    assert lint_half(body) == []
    # near miss: no shift before the exp
    assert lint_half(body.replace("logits.sub_(logits_max.unsqueeze(dim=-1))", "pass")) == ["AMP203"]
