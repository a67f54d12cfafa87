"""Suppression comments: ``# noqa``, ``# noqa: CODE``, ``# amplint: ignore[CODE]``, on the reported
line or on the first line of its statement; only real comments count."""
import pytest

from amplint.noqa import is_suppressed, suppressions

from conftest import codes

HALF = "import torch\nmodel = Net().half()\nloss.backward()\n"  # makes the project pure half


def amp501(line_suffix: str) -> str:
    return f"import torch\nscaler = torch.cuda.amp.GradScaler(){line_suffix}\n"


@pytest.mark.parametrize("comment", [
    "  # noqa",
    "  # noqa: AMP501",
    "  # noqa:AMP501",
    "  #noqa: AMP101, AMP501",
    "  # NOQA: amp501",
    "  # noqa: AMP101,AMP501 -- migrating next sprint",
    "  # amplint: ignore[AMP501]",
    "  # amplint: ignore[AMP101, AMP501]",
    "  # amplint: ignore",
    "  # type: ignore  # noqa: AMP501",
])
def test_suppressed(comment):
    assert codes(amp501("")) == ["AMP501"]
    assert codes(amp501(comment)) == []


@pytest.mark.parametrize("comment", [
    "  # noqa: AMP101",
    "  # noqa: E501",
    "  # amplint: ignore[AMP103]",
    "  # no qa",
    "  # noqa AMP101",  # ruff's syntax needs the colon; without it... see below
])
def test_other_codes_do_not_suppress(comment):
    found = codes(amp501(comment))
    if comment == "  # noqa AMP101":
        assert found == []  # "# noqa" followed by text is a blanket noqa, as in flake8/ruff
    else:
        assert found == ["AMP501"]


def test_noqa_inside_a_string_does_not_suppress():
    assert codes('import torch\nscaler = torch.cuda.amp.GradScaler(); note = "# noqa"\n') == ["AMP501"]
    assert codes("import torch\nscaler = torch.cuda.amp.GradScaler(); note = '# amplint: ignore[AMP501]'\n") == ["AMP501"]
    src = 'import torch\nscaler = torch.cuda.amp.GradScaler(name="""\n# noqa\n""")\n'
    assert codes(src) == ["AMP501"]


def test_first_line_of_a_multiline_statement():
    # The finding is on line 4 (eps=...); the comment on the statement's first line suppresses it.
    bad = "import torch\noptimizer = torch.optim.Adam(\n    model.parameters(),\n    eps=1e-8,\n)\n"
    assert codes(bad, extra_files={"t.py": HALF}) == ["AMP101"]
    first = bad.replace("torch.optim.Adam(\n", "torch.optim.Adam(  # noqa: AMP101\n")
    assert codes(first, extra_files={"t.py": HALF}) == []
    on_line = bad.replace("eps=1e-8,\n", "eps=1e-8,  # amplint: ignore[AMP101]\n")
    assert codes(on_line, extra_files={"t.py": HALF}) == []
    # A comment on another line of the statement (not its first, not the reported one) does not.
    other = bad.replace("model.parameters(),\n", "model.parameters(),  # noqa: AMP101\n")
    assert codes(other, extra_files={"t.py": HALF}) == ["AMP101"]
    last = bad.replace("\n)\n", "\n)  # noqa\n")
    assert codes(last, extra_files={"t.py": HALF}) == ["AMP101"]


def test_a_comment_on_an_enclosing_block_does_not_suppress_its_body():
    src = ("import torch\n"
           "def attend(q, k, mask):  # noqa\n"
           '    with torch.autocast("cuda"):  # noqa\n'
           "        scores = q @ k.transpose(-2, -1)\n"
           "        return scores.masked_fill(mask, -1e9)\n")
    assert codes(src) == ["AMP103"]


def test_suppression_is_per_line():
    src = ("import torch\n"
           "a = torch.cuda.amp.GradScaler()  # noqa: AMP501\n"
           "b = torch.cuda.amp.GradScaler()\n")
    found = codes(src)
    assert found == ["AMP501"]


def test_table():
    table = suppressions(b"x = 1  # noqa: AMP101, AMP103\ny = 2  # amplint: ignore\nz = '# noqa'\n")
    assert table == {1: {"AMP101", "AMP103"}, 2: {"*"}}
    assert is_suppressed("AMP101", (1,), table) and not is_suppressed("AMP501", (1,), table)
    assert is_suppressed("AMP501", (5, 2), table)
    assert suppressions(b"x = 1\n") == {}
    assert suppressions(b"def f(:  # noqa\n") == {1: {"*"}} or suppressions(b"def f(:  # noqa\n") == {}


@pytest.mark.parametrize("encode", [
    lambda s: s.replace("\n", "\r\n").encode(),
    lambda s: b"\xef\xbb\xbf" + s.encode(),
    lambda s: ("# -*- coding: latin-1 -*-\n# \xe9\n" + s).encode("latin-1"),
])
def test_suppression_in_crlf_bom_and_latin1_files(tmp_path, encode):
    from cliutil import run, write_project

    src = "import torch\na = torch.cuda.amp.GradScaler()  # noqa: AMP501\nb = torch.cuda.amp.GradScaler()\n"
    root = write_project(tmp_path / "p", {"m.py": encode(src)})
    r = run(["check", "--output-format", "concise"], root)
    assert r.rc == 1
    found = [line for line in r.out.splitlines() if " AMP501 " in line]
    assert len(found) == 1 and found[0].split(":")[1] in ("3", "5"), r.out
