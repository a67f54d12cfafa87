"""Adopting amplint on existing code: file-level suppression, the unused / unknown suppression check
(AMP100) and --add-noqa, through the command line."""
import pytest

from cliutil import run, write_project

from conftest import codes

OLD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"


@pytest.mark.parametrize("header, silenced", [
    ("# amplint: noqa\n", True),
    ("# amplint: noqa: AMP501\n", True),
    ("# Amplint: NOQA: AMP101, AMP501\n", True),
    ("# amplint: noqa: AMP101\n", False),  # another rule only
    ("x = 1  # amplint: noqa\n", False),  # not on a line of its own
    ('note = "# amplint: noqa"\n', False),  # not a comment
])
def test_file_level_suppression(header, silenced):
    assert codes(header + OLD) == ([] if silenced else ["AMP501"])


def test_file_level_suppression_anywhere_in_the_file(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": OLD + "\n# amplint: noqa: AMP501\n", "b.py": OLD})
    r = run(["check", "--output-format", "concise"], root)
    assert [line.split(":")[0] for line in r.out.splitlines() if ": AMP" in line] == ["b.py"]


def test_unused_and_unknown_suppressions_are_reported_when_enabled(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": (
        "import torch\n"
        'scaler = torch.amp.GradScaler("cuda")  # noqa: AMP501, E501\n'  # nothing to suppress
        "old = torch.cuda.amp.GradScaler()  # noqa: AMP501\n"  # used
        "x = 1  # noqa: AMP1O1\n"  # a typo: no such code
        "y = 2  # noqa\n"  # blanket: not judged
        "z = 3  # amplint: ignore[AMP103]\n")})
    assert run(["check"], root).rc == 0  # off by default, as ruff's RUF100
    r = run(["check", "--output-format", "concise", "--extend-select", "AMP100"], root)
    found = [line for line in r.out.splitlines() if ": AMP" in line]
    assert found == [
        "a.py:2:1: AMP100 unused suppression of AMP501: no AMP501 finding on this line",
        "a.py:4:1: AMP100 unknown code `AMP1O1` in a suppression comment: no amplint rule has it",
        "a.py:6:1: AMP100 unused suppression of AMP103: no AMP103 finding on this line",
    ]
    # A rule that is not enabled may well find something there: its code is not judged.
    r = run(["check", "--output-format", "concise", "--extend-select", "AMP100", "--ignore", "AMP103"], root)
    assert "AMP103 finding" not in r.out


def test_add_noqa_adds_merges_and_keeps_comments(tmp_path):
    source = (
        "# -*- coding: latin-1 -*-\r\n"
        "import torch\r\n"
        "model = torch.nn.Linear(8, 8).cuda().half()\r\n"
        "loss.backward()\r\n"
        "opt = torch.optim.Adam(model.parameters())  # the default lr, on purpose\r\n"
        "s = torch.cuda.amp.GradScaler()  # noqa: E501\r\n"
        "t = torch.cuda.amp.GradScaler()  # noqa\r\n"
        "doc = '''caf\xe9\r\n"
        "'''\r\n"
    )
    root = write_project(tmp_path / "p", {"train.py": source.encode("latin-1")})
    (root / "train.py").chmod(0o755)
    before = run(["check", "--output-format", "concise"], root)
    assert before.rc == 1
    r = run(["check", "--add-noqa"], root)
    assert (r.rc, r.out) == (0, "Added 2 noqa directives.\n")
    after = (root / "train.py").read_bytes().decode("latin-1")
    assert after == source.replace(
        "on purpose\r\n", "on purpose  # noqa: AMP101\r\n").replace("# noqa: E501\r\n", "# noqa: E501, AMP501\r\n")
    assert (root / "train.py").stat().st_mode & 0o777 == 0o755
    clean = run(["check"], root)
    assert clean.rc == 0, clean.out
    assert run(["check", "--add-noqa"], root).out == "Added 0 noqa directives.\n"  # nothing left to add
    # ...and none of the added directives is unused
    assert run(["check", "--extend-select", "AMP100"], root).rc == 0


def test_add_noqa_leaves_lines_that_cannot_take_a_comment(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": "import torch\ns = torch.cuda.amp.GradScaler(\n) if True else \\\n  None\n"})
    r = run(["check", "--add-noqa"], root)
    assert r.rc == 0 and "Added 1 noqa directive." in r.out
    assert "GradScaler(  # noqa: AMP501\n" in (root / "a.py").read_text()
    assert run(["check"], root).rc == 0


def test_add_noqa_warns_where_a_line_ends_in_a_backslash(tmp_path):
    source = "import torch\ns = torch.cuda.amp.GradScaler \\\n    ()\n"
    root = write_project(tmp_path / "p", {"a.py": source})
    r = run(["check", "--add-noqa"], root)
    assert r.out == "Added 0 noqa directives.\n" and "a.py:2: a comment cannot go at the end of this line" in r.err
    assert (root / "a.py").read_text() == source


def test_add_noqa_writes_as_fix_does_refusing_a_read_only_file_and_keeping_hard_links(tmp_path):
    import os
    root = write_project(tmp_path / "p", {"ro.py": OLD, "rw.py": OLD})
    os.chmod(root / "ro.py", 0o444)
    os.link(root / "rw.py", tmp_path / "other-name.py")
    r = run(["check", "--add-noqa"], root)
    assert r.rc == 2 and "ro.py: read-only; not written" in r.err
    assert (root / "ro.py").read_text() == OLD
    assert "# noqa: AMP501" in (root / "rw.py").read_text()
    assert (tmp_path / "other-name.py").read_text() == (root / "rw.py").read_text()  # link not split


def test_a_suppression_on_the_uses_of_a_constant_reported_at_its_definition_is_used(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": (
        "import torch\nEPS = 1e-8\ndef f(x):\n    with torch.autocast('cuda'):\n        s = x @ x.T\n"
        "        return x / (s + EPS)  # noqa: AMP102, AMP203\n")})
    r = run(["check", "--output-format", "concise", "--extend-select", "AMP100"], root)
    assert [line for line in r.out.splitlines() if ": AMP" in line] == []
