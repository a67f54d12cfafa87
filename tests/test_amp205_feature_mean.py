"""A contraction over the feature axis normalised by that axis's own length (a mean over the
features: k-diffusion's KID polynomial kernel ``(x @ y.transpose(-2, -1) / x.shape[-1] + 1) ** 3``,
muP's 1/d attention) is the textbook q·kᵀ shape, AMP205's (off by default), not AMP204's. Near
misses that stay AMP204: a contraction over samples (``x.T @ x / x.size(0)``), the length of
another axis, the feature length of another tensor."""
import textwrap

import pytest

from conftest import codes

SELECT = ("ALL", "AMP205")


def kernel(line):
    source = textwrap.dedent(f"""
    import torch
    def polynomial_kernel(x, y, other):
        with torch.autocast("cuda"):
            {line}
            return (dot + 1) ** 3
    """)
    return [c for c in codes(source, select=SELECT) if c in ("AMP204", "AMP205")]


@pytest.mark.parametrize("line", [
    "d = x.shape[-1]\n            dot = x @ y.transpose(-2, -1) / d",
    "dot = x @ y.transpose(-2, -1) / x.size(-1)",
    "dot = torch.matmul(x, y.T) / y.shape[-1]",
])
def test_a_mean_over_the_features_is_the_textbook_shape(line):
    assert kernel(line) == ["AMP205"]


@pytest.mark.parametrize("name, line", [
    ("a contraction over samples", "dot = x.T @ x / x.size(0)"),
    ("the length of another axis", "dot = x @ y.transpose(-2, -1) / x.shape[0]"),
    ("another tensor's feature length", "dot = x @ y.transpose(-2, -1) / other.shape[-1]"),
])
def test_near_misses_stay_amp204(name, line):
    assert kernel(line) == ["AMP204"], name


def test_off_by_default_the_kernel_is_not_reported():
    source = textwrap.dedent("""
    import torch
    def polynomial_kernel(x, y):
        with torch.autocast("cuda"):
            dot = x @ y.transpose(-2, -1)
            return (dot / x.shape[-1] + 1) ** 3
    """)
    assert [c for c in codes(source) if c.startswith("AMP20")] == []
