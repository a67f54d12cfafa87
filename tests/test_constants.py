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


@pytest.mark.parametrize("body, value", [
    ("eps = 1e-8\n    return x + eps", 1e-8),
    ("alpha, gamma, eps = 0.25, 2.0, 1e-8\n    return x + eps", 1e-8),  # a literal tuple unpacked (doctr's LW-DETR)
    ("eps = 1e-8\n    eps = eps * 2\n    return x + eps", None),  # bound twice: not one constant
    ("for eps in (1e-8, 1e-4):\n        pass\n    return x + eps", None),  # a loop target
    ("eps = 1e-8 if x.dtype == 1 else 1e-4\n    return x + eps", None),  # not a constant expression
    ("a, eps = x.chunk(2)\n    return x + eps", None),  # a part of a computed value
])
def test_a_local_bound_once_to_a_constant_is_that_constant(body, value):
    source = f"def f(x):\n    {body}\n".encode()
    ctx = build_context(Path("m.py"), "m.py", source, None)
    ret = [n for n in ctx.nodes(cst.Return)][-1]
    assert ctx.number(ret.value.right) == value
