"""A helper whose every caller has already raised in float16 before calling it never sees float16.

pytorch3d's efficient PnP: ``efficient_pnp`` runs ``torch.linalg.eigh`` (no float16 kernel, cast by no
autocast list) on a matrix computed from its inputs through ``_null_space``, then hands the reprojection
``y_hat`` to ``_reproj_error``, whose ``/ (y_hat[..., 2:] + eps)`` has eps=1e-9 (0 in float16). In float16
(half inputs, or autocast's half bmm) the eigh raises first, so ``_reproj_error`` only ever gets float32.
The same holds one call further down: ``_compute_norm_sign_scaling_factor``, which calls ``_reproj_error``,
is itself called only (in a list comprehension) after the eigh.
Near misses: the helper called before the eigh; the eigh of a float64 copy (it runs); the eigh in a branch
or a comprehension (it may not run); a public helper between them (its users may call it in float16).
"""
import textwrap

import pytest

from amplint.api import lint_source

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}

PNP = """
import torch


def _null_space(m, kernel_dim):
    mTm = torch.bmm(m.transpose(1, 2), m)
    s, v = torch.linalg.eigh(mTm{upcast})
    return v[:, :, :kernel_dim], s[:, :kernel_dim]


def _reproj_error(y_hat, y, eps=1e-9):
    dist = ((y - y_hat[..., :2] / (y_hat[..., 2:] + eps)) ** 2).sum(dim=-1) ** 0.5
    return dist.mean(dim=-1)


def efficient_pnp(x, y, solve: bool):
{body}
"""

AFTER = """\
    kernel, _ = _null_space(torch.cat([x, y], dim=-1), 4)
    y_hat = torch.einsum("bnk,bkj->bnj", x, kernel[..., :3])
    return _reproj_error(y_hat, y)"""

BEFORE = """\
    first = _reproj_error(torch.einsum("bnk,bkj->bnj", x, y), y)
    kernel, _ = _null_space(torch.cat([x, y], dim=-1), 4)
    return first, kernel"""

BRANCH = """\
    kernel = x
    if solve:
        kernel, _ = _null_space(torch.cat([x, y], dim=-1), 4)
    y_hat = torch.einsum("bnk,bkj->bnj", x, kernel[..., :3])
    return _reproj_error(y_hat, y)"""


TWO_LEVELS = """\
    kernel, _ = _null_space(torch.cat([x, y], dim=-1), 4)
    return [{helper}(c, x, y) for c in [kernel, kernel * 2]]


def {helper}(c, x, y):
    x_w = torch.matmul(x, c[..., :3])
    return _reproj_error(x_w, y)"""

IN_COMPREHENSION = """\
    kernels = [_null_space(m, 4)[0] for m in [torch.cat([x, y], dim=-1)]]
    y_hat = torch.einsum("bnk,bkj->bnj", x, kernels[0][..., :3])
    return _reproj_error(y_hat, y)"""


def lines(body, upcast="", **kw):
    source = textwrap.dedent(PNP).format(body=body, upcast=upcast)
    return sorted(f.line for f in lint_source(source, filename="pkg/pnp.py", extra_files=PACKAGE, **kw)
                  if f.code == "AMP102")


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
def test_helper_called_only_after_an_op_with_no_float16_kernel(precision):
    assert lines(AFTER, precision=precision) == []


def test_helper_called_before_the_op_is_reported():
    assert lines(BEFORE) == [11]


def test_op_on_a_float64_copy_runs_in_float16_code():
    assert lines(AFTER, upcast=".double()") == [11]


def test_op_in_a_branch_is_not_always_run():
    assert lines(BRANCH) == [11]


def test_helper_of_a_helper_called_only_after_the_op():
    assert lines(TWO_LEVELS.format(helper="_scale_and_score")) == []


def test_public_helper_between_them_is_reported():
    assert lines(TWO_LEVELS.format(helper="scale_and_score")) == [11]


def test_op_in_a_comprehension_may_not_run():
    assert lines(IN_COMPREHENSION) == [11]
