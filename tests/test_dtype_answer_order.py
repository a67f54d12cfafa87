"""A dtype answer does not depend on which question came first (the rules a run selects, the order
they ask in). speechbrain's Tacotron2: ``LocationLayer.forward(attention_weights_cat)`` is called by
``Attention.get_alignment_energies`` with its argument, which ``Attention.forward`` passes on: asking
what the callers pass took the two ``forward``s for one function (a cycle cut short: unknown) when
the question started at the inner one, and float32 when the outer one had been answered before.
Answers a cut made are kept only while the question that met the cut is answered."""
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from amplint.context.precision import precision_model
from amplint.engine import build_context
from amplint.project import Project

SOURCE = """
import torch
import torch.nn as nn


class Location(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, 3)

    def forward(self, cat):
        signal = cat
        return self.conv(signal)


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.location = Location()

    def energies(self, cat):
        return self.location(cat)

    def forward(self, query, cat):
        return self.energies(cat) + query


def step(query):
    attention = Attention()
    cat = torch.cat((query.float(), query.float()), dim=1)
    with torch.autocast("cuda"):
        return attention(query, cat)
"""


def answers(tmp_path: Path, reverse: bool):
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "m.py"
    path.write_text(textwrap.dedent(SOURCE))
    ctx = build_context(path, "m.py", path.read_bytes(), Project(tmp_path))
    pm = precision_model(ctx)
    names = list(ctx.nodes(cst.Name))
    out = {}
    for n in (names[::-1] if reverse else names):
        f = pm.dtype_of(n)
        out[(ctx.line_of(n), n.value, ctx.order(n))] = f.dtype
    return out


@pytest.mark.parametrize("reverse", [False, True])
def test_inner_forward_argument_whatever_is_asked_first(tmp_path, reverse):
    got = answers(tmp_path, reverse)
    assert got[max(k for k in got if k[1] == "signal")] == "float32"  # ``self.conv(signal)``


def test_same_answers_in_either_order(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert answers(tmp_path / "a", False) == answers(tmp_path / "b", True)
