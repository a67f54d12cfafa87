"""Under the library policy (any float16 use of library code) a guard that rounds to 0 in a
denominator is reported where the numerator vanishes with the denominator (``delta / (max + eps)`` of
kornia's rgb_to_hsv: a black pixel is 0/0, 0 in float32 and NaN in float16). A numerator that does not
(``baseline * focal / (disparity + eps)``, ``sqrt(2) / (mean_radius + eps)``) is about c / eps at 0 in
float32 as well: an infinite answer for a degenerate input, float16 only spells it inf. Near misses:
the same unrelated numerator in application code trained in float16 (effdet's box coder, a real
upstream fix), and a log guard in the library."""
import textwrap

import pytest

from amplint.api import lint_source

PACKAGE = {"setup.py": "from setuptools import setup\nsetup(name='pkg', packages=['pkg'])\n", "pkg/__init__.py": ""}

LIB = """
import math
import torch


def rgb_to_hsv(image: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    max_rgb = image.amax(-3)
    delta = max_rgb - image.amin(-3)
    return delta / (max_rgb + eps)


def depth_from_disparity(disparity: torch.Tensor, baseline: float, focal: float) -> torch.Tensor:
    return baseline * focal / (disparity + 1e-8)


def normalize_points(points: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    centered = points - points.mean(dim=1, keepdim=True)
    mean_radius = centered.norm(dim=-1).mean(dim=-1)
    return math.sqrt(2.0) / (mean_radius + eps)


def log_depth(depth: torch.Tensor) -> torch.Tensor:
    return torch.log(depth + 1e-8)
"""

TRAIN = """
import torch
from pkg.geo import depth_from_disparity, normalize_points, rgb_to_hsv, log_depth


def train(model, loader):
    opt = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            out = model(x)
            loss = (depth_from_disparity(out, 0.5, 700.0) + rgb_to_hsv(out) + log_depth(out)).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def lines(extra):
    src = textwrap.dedent(LIB)
    return sorted(f.line for f in lint_source(src, filename="pkg/geo.py", extra_files={**PACKAGE, **extra})
                  if f.code == "AMP102")


def test_library_reports_only_quotients_that_are_zero_over_zero():
    assert lines({}) == [6, 23]  # rgb_to_hsv's eps, log_depth


def test_the_same_quotients_in_float16_training_are_reported():
    assert lines({"train.py": TRAIN}) == [6, 13, 23]  # normalize_points is not reached by training


LOCAL = """
import torch


def separate(mix: torch.Tensor, w: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    eps = 1e-20
    return mix / (torch.matmul(w, h) + eps)
"""

LOCAL_TRAIN = """
import torch
from pkg.nmf import separate


def train(model, loader, w, h):
    opt = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x, y in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = separate(model(x), w, h).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


@pytest.mark.parametrize("extra, reported", [
    ({}, []),  # the library look: a utility's own local working constant is its own (speechbrain's NMF)
    ({"train.py": LOCAL_TRAIN}, [6]),  # near miss: trained in float16 by the project, reported at the local
])
def test_a_guard_held_by_a_local_is_read_where_a_training_judges_the_code(extra, reported):
    found = [f.line for f in lint_source(textwrap.dedent(LOCAL), filename="pkg/nmf.py", extra_files={**PACKAGE, **extra})
             if f.code == "AMP102"]
    assert found == reported
