"""Under the library policy a public function's default guard is what its users get, even where
the library's own wrapper passes a safe one (kornia's rgb_to_hsv(image, eps=1e-8), which its
RgbToHsv module calls with 1e-6; kornia's own test of rgb_to_hsv skips float16). Near misses: a
private helper, a public-looking helper the package does not export (named by no ``__init__.py``), and the
same file in application code whose only caller passes its own eps."""
import textwrap

import pytest

from amplint.api import lint_source
from training_util import fp16_train_script

HSV = """
import torch
from torch import nn


def {name}(image: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    max_rgb = image.amax(-3)
    min_rgb = image.amin(-3)
    return (max_rgb - min_rgb) / (max_rgb + eps)


class ToHsv(nn.Module):
    def __init__(self, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps

    def forward(self, image: torch.Tensor) -> torch.Tensor:
        return {name}(image, self.eps)
"""

TRAIN = fp16_train_script("pkg.color", "ToHsv")


def amp102(name, extra=None, init=None):
    init = f"from .color import {name}\n" if init is None else init
    files = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": init,
             **(extra or {})}
    return [f.line for f in lint_source(textwrap.dedent(HSV.format(name=name)), filename="pkg/color.py",
                                        extra_files=files) if f.code == "AMP102"]


def test_a_public_library_function_is_judged_with_its_default():
    assert amp102("rgb_to_hsv") == [6]
    assert amp102("rgb_to_hsv", init="__all__ = ['rgb_to_hsv']\n") == [6]
    assert amp102("rgb_to_hsv", init="import os\nfrom .color import *\n") == [6]


def test_a_helper_the_package_does_not_export_is_judged_by_its_callers():
    # audiolm's ``log(t, eps=1e-20)``: public-looking, never exported; its only caller passes 1e-6
    assert amp102("rgb_to_hsv", init="from .color import ToHsv\n") == []
    assert amp102("rgb_to_hsv", init="from .colour import *\n") == []  # another module's names


@pytest.mark.parametrize("name, fn, extra", [
    ("a private helper of the library", "_rgb_to_hsv", None),
    ("application code whose only caller passes 1e-6", "rgb_to_hsv", {"train.py": TRAIN}),
])
def test_near_misses(name, fn, extra):
    assert amp102(fn, extra) == [], name
