"""Two guards AMP102 leaves alone, with their near misses.

- ``torch.where(|z| > eps, 1 / (z + eps), 1)`` (kornia's convert_points_from_homogeneous): the division
  is selected only where z is off 0, so the forward never sees the guard act. With a backward through
  it the unselected inf becomes a NaN gradient (0 * inf), so that holds only where no gradient flows
  (library code under any float16 use, no_grad). Near misses: the division in the other branch, a test
  on another value, the same code with a gradient (a configured precision).
- a function that also calls an op with no float16 kernel (``.inverse()``, ``torch.linalg.solve``) on
  what it computes cannot run in float16 at all (kornia's ellipse_to_laf). Near misses: the op on a
  float32 copy, the op in an ``if`` branch.
"""
import textwrap

import pytest

from amplint.api import lint_source

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}

WHERE = """
import torch


def from_homogeneous(points: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    z_vec = points[..., -1:]
    mask = torch.abs(z_vec) > eps
    scale = torch.where(mask, 1.0 / (z_vec + eps), torch.ones_like(z_vec))
    return scale * points[..., :-1]


def inline(points: torch.Tensor) -> torch.Tensor:
    z = points[..., -1:]
    return torch.where(z.abs() > 0, points[..., :-1] / (z + 1e-8), points[..., :-1])


def wrong_branch(points: torch.Tensor) -> torch.Tensor:
    z = points[..., -1:]
    return torch.where(z.abs() > 0, points[..., :-1], points[..., :-1] / (z + 1e-8))


def other_value(points: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    z = points[..., -1:]
    return torch.where(w.abs() > 0, points[..., :-1] / (z + 1e-8), points[..., :-1])
"""


def lines(source, **kw):
    return sorted(f.line for f in lint_source(textwrap.dedent(source), filename="pkg/geo.py", extra_files=PACKAGE,
                                              **kw) if f.code == "AMP102")


def test_where_masked_division_in_library_code():
    assert lines(WHERE) == [19, 24]  # wrong branch, other value


def test_where_masked_division_with_a_gradient_is_reported():
    assert lines(WHERE, precision="fp16-mixed") == [5, 14, 19, 24]


UNSUPPORTED = """
import torch


def ellipse_to_laf(ells: torch.Tensor) -> torch.Tensor:
    a11 = ells[..., 2:3].abs().sqrt()
    a22 = ells[..., 4:5].abs().sqrt()
    a21 = ells[..., 3:4] / (a11 + a22).clamp(1e-9)
    return torch.stack([a11, torch.zeros_like(a11), a21, a22], dim=-1).view(-1, 2, 2).inverse()


def solved(x: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    n = x / (x.amax(-1, keepdim=True) + 1e-8)
    return torch.linalg.solve(n, b)


def upcast_first(x: torch.Tensor) -> torch.Tensor:
    n = x / (x.amax(-1, keepdim=True) + 1e-8)
    return torch.linalg.inv(n.float())


def sometimes(x: torch.Tensor, invert: bool) -> torch.Tensor:
    n = x / (x.amax(-1, keepdim=True) + 1e-8)
    if invert:
        n = n.inverse()
    return n
"""


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
def test_function_that_cannot_run_in_float16(precision):
    assert lines(UNSUPPORTED, precision=precision) == [18, 23]  # the float32 copy, the if branch
