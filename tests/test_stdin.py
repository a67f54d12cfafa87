"""stdin: ``amplint check -`` / ``amplint fix -`` with ``--stdin-filename`` (config, excludes and
project regime of that path; the output names it), through the command line."""
import io
import json
import sys

import pytest

from cliutil import run, run_module, write_project

# The project trains in pure half: train.py calls .half(); an optimizer elsewhere with the default
# eps is AMP101.
TRAIN = """\
import torch
model = torch.nn.Linear(8, 8).cuda().half()
loss = model(x).sum()
loss.backward()
"""
OPTIM = """\
import torch
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
"""
OPTIM_FIXED = OPTIM.replace("lr=1e-3)", "lr=1e-3, eps=1e-4)")


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "proj", {
        "train.py": TRAIN,
        "opt.py": "# the file on disk is not what is linted\n",
        "sub/pyproject.toml": "[project]\nname = 'sub'\n[tool.amplint]\nignore = ['AMP101']\n",
        "sub/train.py": TRAIN,
    })


def run_stdin(argv, cwd, text, monkeypatch):
    """The CLI in-process with ``text`` on stdin (the fresh-interpreter tests below cover the real pipe)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8")), encoding="utf-8"))
    return run(argv, cwd)


def test_check_stdin_as_the_named_file(project):
    r = run_module(["check", "--stdin-filename", "opt.py", "-"], project, stdin=OPTIM)
    assert r.rc == 1, r.err
    # Named after --stdin-filename, judged against the project's regime (train.py's .half()), and
    # the quoted line is the text that came in, not the file on disk.
    assert r.out.startswith("opt.py:2:7: AMP101 ")
    assert "2 | opt = torch.optim.AdamW(model.parameters(), lr=1e-3)" in r.out
    assert "train.py:2" in r.out


def test_fix_stdin_prints_the_fixed_source(project):
    r = run_module(["fix", "--stdin-filename", "opt.py", "-"], project, stdin=OPTIM)
    assert r.rc == 0, r.err
    assert r.out == OPTIM_FIXED  # stdout is the fixed text only: an editor replaces its buffer with it
    assert "1 fixed, 0 remaining" in r.err
    assert (project / "opt.py").read_text() == "# the file on disk is not what is linted\n"


def test_config_of_the_named_path_applies(project, monkeypatch):
    # sub/ has its own [tool.amplint] ignoring AMP101 (and its own regime: sub/train.py)
    r = run_stdin(["check", "--stdin-filename", "sub/opt.py", "-"], project, OPTIM, monkeypatch)
    assert r.rc == 0 and r.out.startswith("All checks passed!\n"), r.err
    r = run_stdin(["check", "--stdin-filename", "opt.py", "-"], project, OPTIM, monkeypatch)
    assert r.rc == 1


def test_per_file_ignores_of_the_named_path(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {
        "pyproject.toml": "[tool.amplint]\nper-file-ignores = { 'scripts/*' = ['AMP101'] }\n",
        "train.py": TRAIN,
    })
    r = run_stdin(["check", "--stdin-filename", "scripts/opt.py", "-"], root, OPTIM, monkeypatch)
    assert r.rc == 0, r.out
    r = run_stdin(["check", "--stdin-filename", "opt.py", "-"], root, OPTIM, monkeypatch)
    assert r.rc == 1, r.out


def test_the_text_stands_in_for_the_file_in_the_regime(project, monkeypatch):
    # train.py on disk calls .half(); the buffer for train.py no longer does, so nothing in the
    # project makes parameters float16: the optimizer's default eps is fine.
    no_half = TRAIN.replace(".half()", "") + "opt = torch.optim.AdamW(model.parameters())\n"
    r = run_stdin(["check", "--output-format", "concise", "--stdin-filename", "train.py", "-"], project, no_half,
                  monkeypatch)
    assert r.rc == 0 and r.out.startswith("All checks passed!\nAssumed precision: fp32")
    # A new file (not on disk) is judged with its own evidence too.
    empty = write_project(project.parent / "empty", {})
    r = run_stdin(["check", "--output-format", "concise", "--stdin-filename", "new.py", "-"], empty,
                  TRAIN + OPTIM, monkeypatch)
    assert r.rc == 1 and "new.py:6:7: AMP101" in r.out


def test_without_a_filename_the_output_names_stdin(project, monkeypatch):
    r = run_stdin(["check", "--output-format", "json", "-"], project, OPTIM, monkeypatch)
    assert r.rc == 1
    [finding] = json.loads(r.out)
    assert finding["code"] == "AMP101" and finding["filename"].endswith("-")


def test_diff_of_stdin(project, monkeypatch):
    r = run_stdin(["check", "--diff", "--stdin-filename", "opt.py", "-"], project, OPTIM, monkeypatch)
    assert r.rc == 1
    assert "--- opt.py\n+++ opt.py\n" in r.out
    assert "+opt = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)\n" in r.out
    assert "Would fix 1 error." in r.err


def test_fix_stdin_that_does_not_parse_is_given_back(project, monkeypatch):
    broken = "x = (\n"
    r = run_stdin(["fix", "--stdin-filename", "opt.py", "-"], project, broken, monkeypatch)
    assert r.rc == 1
    assert r.out == broken
    assert "opt.py:1:5: E999 SyntaxError: '(' was never closed" in r.err


def test_stdin_with_other_paths_is_a_usage_error(project, monkeypatch):
    r = run_stdin(["check", "-", "train.py"], project, OPTIM, monkeypatch)
    assert r.rc == 2 and "cannot be combined" in r.err


def test_force_exclude_applies_to_the_stdin_filename(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {
        "pyproject.toml": "[tool.amplint]\nextend-exclude = ['third_party']\n",
        "train.py": TRAIN,
    })
    argv = ["--stdin-filename", "third_party/vendored/opt.py", "-"]
    # Named on the command line, an excluded file is linted (as ruff does) ...
    assert run_stdin(["check", *argv], root, OPTIM, monkeypatch).rc == 1
    # ... unless --force-exclude (pre-commit, editors): nothing reported, fix gives the text back.
    r = run_stdin(["check", "--force-exclude", *argv], root, OPTIM, monkeypatch)
    assert r.rc == 0 and "AMP101" not in r.out
    assert "excluded" in r.err
    r = run_stdin(["fix", "--force-exclude", *argv], root, OPTIM, monkeypatch)
    assert (r.rc, r.out) == (0, OPTIM)


def test_the_assumed_precision_reflects_the_text(project, monkeypatch):
    no_half = TRAIN.replace(".half()", "")
    r = run_stdin(["check", "--stdin-filename", "train.py", "-"], project, no_half, monkeypatch)
    assert "Assumed precision: fp32" in r.out
    r = run_stdin(["check", "--stdin-filename", "opt.py", "-"], project, OPTIM, monkeypatch)
    assert "Assumed precision: fp16" in r.out


def test_stdin_uses_the_project_cache(project, monkeypatch):
    monkeypatch.setenv("AMPLINT_NO_CACHE", "0")
    first = run_stdin(["check", "--stdin-filename", "opt.py", "-"], project, OPTIM, monkeypatch)
    assert (project / ".amplint_cache").is_dir()  # the project's files were summarised into it
    again = run_stdin(["check", "--stdin-filename", "opt.py", "-"], project, OPTIM, monkeypatch)
    assert (again.rc, again.out) == (first.rc, first.out) and first.rc == 1
    # The cache holds the files on disk, never the text that stood in for one of them.
    assert run(["check", "opt.py"], project).rc == 0
