"""Issue 13, items 1 and 2: a file too deep, too long or too large for libcst is an error of that
file (E999 where CPython rejects it, E998 "too complex to lint" naming the limit), never the end of
the run, and the project scan never parses it for evidence. The deep cases run in a fresh
interpreter: before the screen, libcst's native parser crashed the whole process on them."""
import re

import pytest

from cliutil import run, run_module, write_project

HAZARD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"  # AMP501 at 2:10


def concise(r):
    return [line for line in r.out.splitlines() if re.match(r"\S+:\d+:\d+: ", line)]


def nested(depth):
    return "x = " + "1+(" * depth + "1" + ")" * depth + "\n"


def chain(terms, term="1"):
    """A generated expression over many lines (one line would hit max-line-length first)."""
    return "x = (" + " +\n    ".join([term] * terms) + ")\n"


def test_a_2000_deep_file_is_a_syntax_error_and_the_run_goes_on(tmp_path):
    root = write_project(tmp_path / "p", {"deep.py": nested(2000), "good.py": HAZARD})
    r = run_module(["check", "--output-format", "concise", "."], root, timeout=60)
    assert r.rc == 1, (r.rc, r.err[-2000:])
    assert "deep.py:1:" in r.out and "E999 SyntaxError: too many nested parentheses" in r.out
    assert "good.py:2:10: AMP501 " in r.out
    assert r.err == ""


def test_deep_files_in_a_parallel_run(tmp_path):
    files = {f"m{i:02d}.py": "x = 1\n" for i in range(24)}
    files.update({"deep.py": nested(2000), "chain.py": chain(10_000), "good.py": HAZARD})
    root = write_project(tmp_path / "p", files)
    r = run_module(["check", "--output-format", "concise", "."], root, timeout=60)
    assert r.rc == 1, (r.rc, r.err[-2000:])
    found = concise(r)
    assert [line.split(":")[0] for line in found] == ["chain.py", "deep.py", "good.py"], found
    assert " E998 " in found[0] and "`max-syntax-depth` = 300" in found[0]


def test_201_nested_parentheses_are_rejected_as_cpython_does(tmp_path):
    root = write_project(tmp_path / "p", {"deep201.py": "x = " + "(" * 201 + "1" + ")" * 201 + "\n"})
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1
    assert concise(r) == ["deep201.py:1:" + concise(r)[0].split(":", 2)[2]]
    assert "E999 SyntaxError: too many nested parentheses" in r.out
    ok = write_project(tmp_path / "q", {"deep199.py": "x = " + "(" * 199 + "1" + ")" * 199 + "\n"})
    r = run(["check"], ok)
    assert r.rc == 0 and "All checks passed!" in r.out


def test_code_cpython_rejects_beyond_its_parser_is_e999(tmp_path):
    root = write_project(tmp_path / "p", {"ret.py": "x = 1\nreturn x\n", "good.py": HAZARD})
    r = run(["check", "--output-format", "concise"], root)
    assert "ret.py:2:1: E999 SyntaxError: 'return' outside function" in r.out
    assert "good.py:2:10: AMP501 " in r.out


@pytest.mark.parametrize("terms, too_complex", [(250, False), (400, True), (10_000, True)])
def test_a_long_operator_chain_is_too_complex_beyond_max_syntax_depth(tmp_path, terms, too_complex):
    root = write_project(tmp_path / "p", {"gen.py": chain(terms, "f(a)"), "good.py": HAZARD})
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1
    gen = [line for line in concise(r) if line.startswith("gen.py")]
    if too_complex:
        assert gen == ["gen.py:1:1: E998 file too complex to lint: code nested or chained (`a + b + …`, `a.b.…`, "
                       "brackets) deeper than 300 levels (`max-syntax-depth` = 300; raise it in [tool.amplint] "
                       "or exclude the file)"]
    else:
        assert gen == []
    assert "good.py:2:10: AMP501 " in r.out


def test_max_syntax_depth_is_configurable(tmp_path):
    root = write_project(tmp_path / "p", {
        "pyproject.toml": "[tool.amplint]\nmax-syntax-depth = 60\n", "gen.py": chain(100)})
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1 and "gen.py:1:1: E998 " in r.out and "`max-syntax-depth` = 60;" in r.out


@pytest.mark.parametrize("value", ["0", "5", "100000", "2.5", "nan", "inf", '"300"', "true"])
def test_limits_out_of_range_exit_2_naming_the_key(tmp_path, value):
    root = write_project(tmp_path / "p", {"pyproject.toml": f"[tool.amplint]\nmax-syntax-depth = {value}\n",
                                          "good.py": HAZARD})
    r = run(["check"], root)
    assert r.rc == 2
    assert "`max-syntax-depth` must be a whole number from 20 to 1,000" in r.err


def test_a_file_over_max_file_bytes_is_e998_and_gives_no_evidence(tmp_path):
    # A generated file of 1.2 MB that, if it were parsed, would make the project pure float16.
    body = "import torch\nmodel = torch.nn.Linear(2, 2).half()\nloss.backward()\n" + "x = [1, 2, 3]\n" * 90_000
    root = write_project(tmp_path / "p", {
        "generated.py": body,
        "train.py": "import torch\nopt = torch.optim.Adam(params, eps=1e-8)\n"})
    r = run(["check", "--output-format", "concise", "train.py"], root)
    assert r.rc == 0, r.out  # no AMP101: the huge file was not parsed for evidence
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1
    assert concise(r) == [f"generated.py:1:1: E998 file too complex to lint: {len(body.encode()):,} bytes "
                          "(`max-file-bytes` = 1,048,576; raise it in [tool.amplint] or exclude the file)"]


def test_a_very_long_line_is_e998_naming_its_line(tmp_path):
    root = write_project(tmp_path / "p", {"data.py": "a = 1\nx = [" + "1, " * 10_000 + "]\n"})
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1
    [line] = concise(r)
    assert line.startswith("data.py:2:1: E998 file too complex to lint: a line of 30,006 characters "
                           "(`max-line-length` = 20,000;"), line
