"""Parallel linting: many files go to worker processes, with the same results, in the same order, as
a serial run; projects travel to the workers with their regime already computed."""
import os
import pickle
from pathlib import Path

import pytest

import amplint.runner as runner_module
from amplint.config import RuleSelection, Settings
from amplint.project import Project
from amplint.rules import rule_codes
from amplint.runner import PARALLEL_MIN_FILES, Runner

from cliutil import chdir, run, write_project

TRAIN = '''\
import torch

model = torch.nn.Linear(8, 8).cuda().half()
optimizer = torch.optim.AdamW(model.parameters())
scaler = torch.cuda.amp.GradScaler()

def attend(q, k, mask):
    with torch.autocast("cuda"):
        scores = q @ k.transpose(-2, -1)
        return scores.masked_fill(mask, -1e9)

loss.backward()
'''


def many_files(root: Path, n: int = 48) -> Path:
    files = {}
    for i in range(n):
        kind = i % 4
        if kind == 0:
            files[f"pkg{i % 3}/train_{i}.py"] = TRAIN
        elif kind == 1:
            files[f"pkg{i % 3}/opt_{i}.py"] = "import torch\n\ndef make(m):\n    return torch.optim.Adam(m.parameters())\n"
        elif kind == 2:
            files[f"pkg{i % 3}/broken_{i}.py"] = "def f(:\n"
        else:
            files[f"pkg{i % 3}/clean_{i}.py"] = "x = 1  # noqa\n"
    # A second project inside the first, with its own (bf16) regime.
    files["sub/pyproject.toml"] = "[project]\nname = 'sub'\n"
    for i in range(6):
        files[f"sub/s{i}.py"] = 'import torch\nwith torch.autocast("cpu"):\n    pass\nopt = torch.optim.Adam(p)\n'
    return write_project(root, files)


def check(root: Path, jobs):
    settings = Settings()
    with chdir(root):
        return Runner(settings, RuleSelection(settings, rule_codes()), jobs=jobs).check([Path(".")])


def test_parallel_results_equal_serial(tmp_path):
    root = many_files(tmp_path / "p")
    serial = check(root, 1)
    parallel = check(root, 3)
    assert serial == parallel
    findings, errors = serial
    assert errors == []
    codes = {f.code for f in findings}
    assert {"AMP101", "AMP103", "AMP501", "E999"} <= codes
    # Evidence for the optimizer files comes from another file of the project, in workers too.
    opt = [f for f in parallel[0] if "opt_" in f.path and f.code == "AMP101"]
    assert len(opt) == 12 and all("train_" in f.evidence[0].path for f in opt)
    assert not [f for f in parallel[0] if f.path.startswith("sub/") and f.code == "AMP101"]


def _recording_task(task):
    # Runs in the worker: note which process linted the file.
    directory = os.environ["AMPLINT_TEST_PIDS"]
    with open(os.path.join(directory, str(os.getpid())), "a") as fh:
        fh.write(task[1] + "\n")
    return _original_task(task)


_original_task = runner_module._lint_task


def test_workers_are_really_used(tmp_path, monkeypatch):
    if runner_module.cpu_count() < 2:
        pytest.skip("one CPU")
    root = many_files(tmp_path / "p")
    pids = tmp_path / "pids"
    pids.mkdir()
    monkeypatch.setenv("AMPLINT_TEST_PIDS", str(pids))
    monkeypatch.setattr(runner_module, "_lint_task", _recording_task)
    monkeypatch.setattr(runner_module, "cpu_count", lambda: 4)
    findings, errors = check(root, None)  # automatic: many files and several CPUs
    workers = os.listdir(pids)
    assert str(os.getpid()) not in workers
    assert len(workers) >= 2
    linted = sorted(line for w in workers for line in (pids / w).read_text().split())
    assert len(linted) == len(set(linted)) == 54


def test_worker_count_policy(monkeypatch):
    settings = Settings()
    r = Runner(settings, RuleSelection(settings, rule_codes()))
    monkeypatch.setattr(runner_module, "cpu_count", lambda: 8)
    assert r.workers_for(1) == 1
    assert r.workers_for(PARALLEL_MIN_FILES) == 1
    assert 1 < r.workers_for(200) <= 8
    monkeypatch.setattr(runner_module, "cpu_count", lambda: 1)
    assert r.workers_for(200) == 1
    assert Runner(settings, RuleSelection(settings, rule_codes()), jobs=4).workers_for(2) == 2


def test_a_pool_that_cannot_start_falls_back_to_serial(tmp_path, monkeypatch):
    root = many_files(tmp_path / "p")

    class NoPool:
        def __init__(self, *a, **kw):
            raise OSError("no semaphores here")

    monkeypatch.setattr(runner_module, "ProcessPoolExecutor", NoPool)
    assert check(root, 4) == check(root, 1)


def test_project_pickles_with_its_regime(tmp_path):
    root = write_project(tmp_path / "r", {"train.py": TRAIN})
    project = Project(root).prepare()
    clone = pickle.loads(pickle.dumps(project))
    assert clone._regime is not None
    assert clone.regime.mode == project.regime.mode == "fp16"
    assert clone.regime.half_params == project.regime.half_params
    assert clone.files() == project.files()


def test_cli_output_is_deterministic_across_runs(tmp_path):
    root = many_files(tmp_path / "p")
    first = run(["check", "--output-format", "json"], root)
    second = run(["check", "--output-format", "json"], root)
    assert first.out == second.out and first.rc == second.rc == 1
