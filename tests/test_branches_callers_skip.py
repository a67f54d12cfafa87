"""A branch no caller takes (stable-dreamfusion's ``near_far_from_bound(..., type='cube')`` whose only
caller passes ``type='sphere'``, seen in the session-5 triage): AMP102 / AMP103 in the ``'cube'``
branch are not reported, under fp16 autocast or not. Near misses: a caller that takes the branch
(by passing the literal, or by leaving the default), a caller passing a variable, a helper with no
callers in sight."""
import textwrap

import pytest

from amplint.api import lint_source

HELPER = """
import torch


def near_far(rays_o, rays_d, bound, type="cube"):
    radius = rays_o.norm(dim=-1, keepdim=True)
    if type == "sphere":
        near = radius - bound
    elif type == "cube":
        near = (-bound - rays_o) / (rays_d + 1e-15)
        near[near > 10] = 1e9
    return near


def run(model, rays_o, rays_d, mode):
    with torch.autocast("cuda", dtype=torch.float16):
        h = model(rays_o)
        return near_far(h, h @ rays_d, 1.0{passed})
"""


def codes(passed):
    src = textwrap.dedent(HELPER.replace("{passed}", passed))
    return sorted(f.code for f in lint_source(src, filename="render.py", precision="fp16-mixed")
                  if f.code in ("AMP102", "AMP103"))


def test_a_branch_every_caller_skips():
    assert codes(', type="sphere"') == []


@pytest.mark.parametrize("name, passed", [
    ("the caller takes the branch", ', type="cube"'),
    ("the default takes it", ""),
    ("a variable", ", type=mode"),
])
def test_near_misses(name, passed):
    assert codes(passed) == ["AMP102", "AMP103"], name


def test_near_miss_no_caller_in_sight():
    src = textwrap.dedent(HELPER.split("def run")[0])
    found = sorted(f.code for f in lint_source(src, filename="render.py", precision="fp16-mixed")
                   if f.code in ("AMP102", "AMP103"))
    assert found == ["AMP102", "AMP103"]
