"""One arithmetic for constants: a module constant has the same value in its own module (libcst, the
file context) and imported from another (stdlib ast, the project summaries)."""
from pathlib import Path

import libcst as cst
import pytest

from amplint.constants import fold_text
from amplint.engine import build_context
from amplint.summary import summarise

EXPRESSIONS = ["-2 ** 30", "1e4 * 2", "-(2 ** 15) + 1", "65504 // 2", "7 % 4", "float('-inf')", "1 / 0",
               "(-8) ** 0.5", "2 ** 100000", "+3.5", "-1e-8", "A * 2"]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_file_and_project_levels_agree(expr):
    source = f"A = 3\nX = {expr}\n".encode()
    ctx = build_context(Path("m.py"), "m.py", source, None)
    value = ctx.module_constants()["X"]
    here = ctx.number(value)
    there = summarise(source, "m.py", "m").constants.get("X")
    assert here == there or (here != here and there != there)


def test_values():
    assert fold_text("-2 ** 30") == -(2.0 ** 30)
    assert fold_text("(-8) ** 0.5") is None  # complex: not a number amplint reasons about
    assert fold_text("1 / 0") is None
    assert fold_text("NEG * 2", {"NEG": -1.0}.get) == -2.0
