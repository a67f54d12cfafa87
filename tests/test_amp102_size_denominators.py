"""A guarded denominator computed only from sizes (shapes, lengths, ``int`` parameters) is 0 only for
a degenerate size, whatever the data: kornia's ``normalize_pixel_coordinates`` divides by
``(hw - 1).clamp(eps)`` with ``hw`` built from ``width: int`` / ``height: int`` (a one-pixel image).
Not a float16 hazard of the data. Near misses: a count of data (``mask.sum()``), a value of the data
(``x.amax()``), an unannotated parameter (it may be a tensor)."""
import textwrap

import pytest

from amplint.api import lint_source

SRC = """
import torch


def scale(x: torch.Tensor, height: int, width, mask):
    {setup}
    return x / ({denominator}).clamp(1e-8)
"""


@pytest.mark.parametrize("name, setup, denominator, expected", [
    ("int parameters, stacked and cast (kornia)",
     "hw = torch.stack([torch.tensor(height), torch.tensor(height)]).to(x.device).to(x.dtype)", "hw - 1", []),
    ("a shape", "n = x.shape[-1]", "torch.tensor(n, dtype=x.dtype) - 1", []),
    ("a size() and len()", "n = x.size(1) * len(mask)", "torch.tensor(n).to(x) - 1", []),
    ("near miss: a count of the data", "n = mask.sum()", "n.to(x.dtype)", [7]),
    ("near miss: the data", "n = x.amax(-1, keepdim=True)", "n - x.amin(-1, keepdim=True)", [7]),
    ("near miss: an unannotated parameter", "hw = torch.tensor([width, height]).to(x.dtype)", "hw - 1", [7]),
])
def test_size_denominators(name, setup, denominator, expected):
    source = textwrap.dedent(SRC.format(setup=setup, denominator=denominator))
    found = [f.line for f in lint_source(source, filename="geo.py", precision="fp16-mixed") if f.code == "AMP102"]
    assert found == expected, name
