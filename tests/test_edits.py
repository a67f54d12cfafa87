"""amplint.edits: the building blocks of fixes keep the layout of the code they edit."""
import libcst as cst
import pytest

from amplint.edits import add_keyword, append_arg, insert_arg, keyword, number_text

CODE = cst.Module([]).code_for_node


@pytest.mark.parametrize("source, expected", [
    ("f()", "f(eps=1e-4)"),
    ("f(a)", "f(a, eps=1e-4)"),
    ("f(a, b)", "f(a, b, eps=1e-4)"),
    ("f(a,)", "f(a, eps=1e-4,)"),
    ("f(  a  )", "f(  a, eps=1e-4  )"),
    ("f(\n    a,\n)", "f(\n    a,\n    eps=1e-4,\n)"),
    ("f(\n    a\n)", "f(\n    a,\n    eps=1e-4\n)"),
    ("f(\n        a,\n        b,\n    )", "f(\n        a,\n        b,\n        eps=1e-4,\n    )"),
    # a comment stays with the argument it was written after
    ("f(\n    a,  # c\n)", "f(\n    a,  # c\n    eps=1e-4,\n)"),
    ("f(\n    a  # c\n)", "f(\n    a,  # c\n    eps=1e-4\n)"),
    ("f(\n    a,\n    b,  # c\n)", "f(\n    a,\n    b,  # c\n    eps=1e-4,\n)"),
    ("f(a,\n  b)", "f(a,\n  b,\n  eps=1e-4)"),
])
def test_append_arg(source, expected):
    assert CODE(append_arg(cst.parse_expression(source), keyword("eps", cst.Float("1e-4")))) == expected


@pytest.mark.parametrize("source, expected", [
    ("f()", 'f("cuda")'),
    ("f(a, b)", 'f("cuda", a, b)'),
    ("f(a,\n  b)", 'f("cuda", a,\n  b)'),
    ("f(\n    a,\n)", 'f(\n    "cuda",\n    a,\n)'),
    ("f(\n    a,  # c\n    b,\n)", 'f(\n    "cuda",\n    a,  # c\n    b,\n)'),
])
def test_insert_first(source, expected):
    assert CODE(insert_arg(cst.parse_expression(source), 0, cst.Arg(cst.SimpleString('"cuda"')))) == expected


@pytest.mark.parametrize("source, expected", [
    ("f(fn)", 'f(fn, device_type="cuda")'),
    ("f(cast_inputs=t)", 'f(device_type="cuda", cast_inputs=t)'),
    ("f(a,\n  b,\n  c=1)", 'f(a,\n  b,\n  device_type="cuda",\n  c=1)'),
])
def test_add_keyword_goes_after_the_positionals(source, expected):
    assert CODE(add_keyword(cst.parse_expression(source), keyword("device_type", cst.SimpleString('"cuda"')))) == expected


@pytest.mark.parametrize("value, text", [
    (1e-4, "1e-4"), (5e-5, "5e-5"), (1e-8, "1e-8"), (0.001, "0.001"), (0.01, "0.01"), (100.0, "100.0"),
    (0.3, "0.3"), (6.103515625e-05, "6.103515625e-5"),
])
def test_number_text_reads_back_exactly(value, text):
    assert number_text(value) == text and float(text) == value


def test_find_arg():
    from amplint.edits import find_arg
    call = cst.parse_expression("f(a, b, c=1)")
    assert CODE(find_arg(call, "c").value) == "1"
    assert CODE(find_arg(call, "x", 1).value) == "b"
    assert find_arg(call, "x", 2) is None
    assert find_arg(cst.parse_expression("f(a, *rest)"), "x", 1) is None  # position unknown after *rest
