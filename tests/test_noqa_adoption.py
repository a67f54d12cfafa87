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
