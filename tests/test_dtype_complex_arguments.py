"""An argument the function raises on unless it is complex is complex (torchaudio's MVDR weights:
``if not (rtf.is_complex() and psd_n.is_complex()): raise TypeError``): autocast casts floating
tensors only, so what the function computes from it is complex, and ``.real`` of it float32. Judged
as library code (a package with no training) and under a forced fp16 autocast. Near misses: a check
that raises on complex input, a check that only warns, a check on one argument of two (``and`` in the
raise condition proves nothing about either), and the check after the division."""
import textwrap

import pytest

from amplint.api import lint_source

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}

MVDR = """
import torch
from torch import Tensor


def _tik_reg(mat: Tensor, reg: float = 1e-7, eps: float = 1e-8) -> Tensor:
    eye = torch.eye(mat.size(-1), dtype=mat.dtype, device=mat.device)
    epsilon = torch.diagonal(mat, 0, dim1=-1, dim2=-2).sum(-1).real[..., None, None] * reg
    return mat + (epsilon + eps) * eye


def mvdr(rtf: Tensor, psd_n: Tensor, eps: float = 1e-8) -> Tensor:
    if not (rtf.is_complex() and psd_n.is_complex()):
        raise TypeError("rtf and psd_n must be complex")
    psd_n = _tik_reg(psd_n)
    numerator = torch.linalg.solve(psd_n, rtf.unsqueeze(-1)).squeeze(-1)
    denominator = torch.einsum("...d,...d->...", [rtf.conj(), numerator])
    return numerator / (denominator.real.unsqueeze(-1) + eps)


def by_dtype(rtf: Tensor, w: Tensor) -> Tensor:
    if rtf.dtype not in (torch.cfloat, torch.cdouble):
        raise TypeError("rtf must be complex")
    d = torch.einsum("...d,...d->...", [rtf.conj(), w])
    return w / (d.real + 1e-8)


def either(rtf: Tensor, w: Tensor) -> Tensor:
    if not torch.is_complex(rtf) or not w.is_complex():
        raise ValueError("complex input expected")
    d = rtf.conj() @ w
    return d.real / (d.real + 1e-8)
"""

NEAR_MISSES = """
import warnings
import torch
from torch import Tensor


def real_only(x: Tensor, w: Tensor) -> Tensor:
    if x.is_complex():
        raise TypeError("real input expected")
    d = x @ w
    return d / (d + 1e-8)


def warns(x: Tensor, w: Tensor) -> Tensor:
    if not x.is_complex():
        warnings.warn("expected complex input")
    d = x @ w
    return d.real / (d.real + 1e-8)


def one_of_two(x: Tensor, y: Tensor) -> Tensor:
    if not x.is_complex() and not y.is_complex():
        raise TypeError("one of them must be complex")
    d = x @ x
    return d.real / (d.real + 1e-8)


def checked_late(x: Tensor, w: Tensor) -> Tensor:
    d = x @ w
    r = d.real / (d.real + 1e-8)
    if not x.is_complex():
        raise TypeError("complex input expected")
    return r
"""


def lines(source, **kw):
    return sorted(f.line for f in lint_source(textwrap.dedent(source), filename="pkg/beam.py", extra_files=PACKAGE,
                                              **kw) if f.code == "AMP102")


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
def test_arguments_checked_complex_are_complex(precision):
    assert lines(MVDR, precision=precision) == []


@pytest.mark.parametrize("precision", ["auto", "fp16-mixed"])
def test_checks_that_do_not_prove_complex(precision):
    assert lines(NEAR_MISSES, precision=precision) == [11, 18, 25, 30]
