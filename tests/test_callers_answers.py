"""Project.callers' answers kept in the cache under the summaries' fingerprint: a one-file run
after an edit that changed no summary answers them without building the project index, and gives
the findings a run without the cache gives; an edit that changes what a caller passes is seen."""
import textwrap
from pathlib import Path

import pytest

import amplint.project as project_module

from cliutil import run, write_project
from test_precision_callers import HELPER, TRAIN


@pytest.fixture(autouse=True)
def with_cache(monkeypatch):
    monkeypatch.delenv("AMPLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("AMPLINT_CACHE_DIR", raising=False)


def caller(arg: str) -> str:
    return textwrap.dedent(f"""
        import torch
        from torch import nn
        from losses import nll_loss
        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(8, 8)
            def forward(self, x):
                return nll_loss({arg})
        """)


def test_callers_answered_from_the_cache_while_no_summary_changes(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"losses.py": "import torch\n" + textwrap.dedent(HELPER), "train.py": TRAIN,
                                          "model.py": caller("self.fc(x).sigmoid()")})
    built = []
    index = project_module.ProjectIndex
    monkeypatch.setattr(project_module, "ProjectIndex", lambda *a, **k: built.append(1) or index(*a, **k))
    first = run(["check", "--output-format", "concise", "losses.py"], root).out
    assert "AMP102" in first and built  # the caller in model.py passes a float16 probability
    built.clear()
    with (root / "losses.py").open("a") as fh:
        fh.write("# an edit no summary sees\n")
    assert run(["check", "--output-format", "concise", "losses.py"], root).out == first
    assert not built  # answered from the cache
    (root / "model.py").write_text(caller("self.fc(x).float().sigmoid()"))  # the caller now passes float32
    out = run(["check", "--output-format", "concise", "losses.py"], root).out
    assert "AMP102" not in out and built
    assert out == run(["check", "--no-cache", "--output-format", "concise", "losses.py"], root).out


def test_fix_of_one_file_reads_the_cached_regime_the_run_before_stored(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"losses.py": "import torch\n" + textwrap.dedent(HELPER), "train.py": TRAIN,
                                          "model.py": caller("self.fc(x)")})
    derived = []
    entry_points = project_module.Project.entry_points
    monkeypatch.setattr(project_module.Project, "entry_points",
                        lambda self: derived.append(1) or entry_points(self))
    first = run(["fix", "--diff", "model.py"], root)
    assert derived  # the precision of the summary line: derived from the summaries, then cached
    derived.clear()
    again = run(["fix", "--diff", "model.py"], root)
    assert (again.rc, again.out, again.err) == (first.rc, first.out, first.err) and not derived


def test_callers_answered_in_worker_processes_are_kept_for_the_next_run(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"losses.py": "import torch\n" + textwrap.dedent(HELPER), "train.py": TRAIN,
                                          "model.py": caller("self.fc(x).sigmoid()")})
    first = run(["check", "--output-format", "concise", "-j", "2", "."], root).out
    assert "AMP102" in first
    built = []
    index = project_module.ProjectIndex
    monkeypatch.setattr(project_module, "ProjectIndex", lambda *a, **k: built.append(1) or index(*a, **k))
    with (root / "losses.py").open("a") as fh:
        fh.write("# an edit no summary sees\n")
    assert "AMP102" in run(["check", "--output-format", "concise", "losses.py"], root).out
    assert not built  # the workers' answers were saved by the parent


# ``wrapped`` takes the log of its ``q`` and passes it to a helper of another file: what its caller
# in model.py passes reaches both, so two files' analyses ask the same question of model.py.
LOSSES = """
import torch
from extra import log_eps

def wrapped(q):
    return -torch.log(q + 1e-8).mean() + log_eps(q).mean()
"""
EXTRA = """
import torch

def log_eps(z):
    return torch.log(z + 1e-8)
"""


def wrapper_caller(arg: str) -> str:
    return caller(arg).replace("import nll_loss", "import wrapped").replace("nll_loss(", "wrapped(")


def wrapper_project(root: Path, arg: str) -> Path:
    return write_project(root, {"losses.py": LOSSES, "extra.py": EXTRA, "train.py": TRAIN,
                                "model.py": wrapper_caller(arg)})


def test_a_helpers_callers_in_other_files_are_worked_out_once_per_run(tmp_path, monkeypatch):
    import amplint.context.callers as callers_module
    asked = []
    project_passed = callers_module.project_passed
    monkeypatch.setattr(callers_module, "project_passed",
                        lambda pm, fn, param: asked.append((fn.name.value, param)) or project_passed(pm, fn, param))
    root = wrapper_project(tmp_path / "p", "self.fc(x).sigmoid()")
    out = run(["check", "--no-cache", "-j", "1", "--output-format", "concise", "."], root).out
    assert "losses.py:6" in out and "extra.py:5" in out  # both helpers get model.py's float16 value
    assert asked.count(("wrapped", "q")) == 1 and len(asked) == len(set(asked))


def test_an_answer_kept_for_the_run_is_a_dependency_of_every_file_using_it(tmp_path):
    root = wrapper_project(tmp_path / "p", "self.fc(x).float().sigmoid()")
    assert "AMP102" not in run(["check", "-j", "1", "--output-format", "concise", "."], root).out
    (root / "model.py").write_text(wrapper_caller("self.fc(x).sigmoid()"))  # model.py now passes float16
    out = run(["check", "-j", "1", "--output-format", "concise", "."], root).out
    assert "losses.py:6" in out and "extra.py:5" in out
    assert out == run(["check", "--no-cache", "-j", "1", "--output-format", "concise", "."], root).out
