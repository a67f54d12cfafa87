"""The command line: entry points, --version, exit codes and the check options (ruff's conventions)."""
import re
import shutil
import subprocess
import sys

import pytest

import amplint
from amplint.rules import all_rules

from cliutil import ROOT, run, run_module, write_project

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# One hazard per rule, in one training script: model.half() + an optimizer with the default eps
# (AMP101), a -1e9 mask fill under autocast (AMP103), the deprecated torch.cuda.amp API (AMP501).
TRAIN = '''\
import torch

model = torch.nn.Linear(8, 8).cuda().half()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = torch.cuda.amp.GradScaler()

def step(x, mask):
    with torch.autocast("cuda"):
        scores = model(x).masked_fill(mask, -1e9)
    loss = scores.sum()
    loss.backward()
    optimizer.step()
'''
CLEAN = '''\
import torch

def f(x):
    return torch.relu(x)
'''


def codes_of(output: str):
    return re.findall(r"^\S+?:\d+:\d+: ([A-Z]+\d+) ", output, re.MULTILINE)


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "proj", {"train.py": TRAIN, "util.py": CLEAN})


@pytest.fixture
def clean_project(tmp_path):
    return write_project(tmp_path / "clean", {"util.py": CLEAN})


# ---- entry points ---------------------------------------------------------------------------------

def test_python_dash_m_runs_check(project):
    r = run_module(["check", "--output-format", "concise", "."], project)
    assert r.rc == 1, r.err
    assert sorted(set(codes_of(r.out))) == ["AMP101", "AMP103", "AMP501"]
    assert "train.py:4:" in r.out


def test_version_matches_package_and_pyproject(tmp_path):
    r = run_module(["--version"], tmp_path)
    assert r.rc == 0
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert r.out.strip() == f"amplint {amplint.__version__}"
    assert amplint.__version__ == pyproject["project"]["version"]


def test_console_script_is_declared_and_points_at_main():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    target = pyproject["project"]["scripts"]["amplint"]
    module, _, attr = target.partition(":")
    import importlib
    assert getattr(importlib.import_module(module), attr) is amplint.cli.main


@pytest.mark.skipif(shutil.which("amplint") is None, reason="amplint is not installed (pip install -e .)")
def test_installed_console_script(project):
    p = subprocess.run(["amplint", "check", "--output-format", "concise", "train.py"], cwd=project,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "AMP101" in p.stdout
    v = subprocess.run(["amplint", "--version"], capture_output=True, text=True, timeout=60)
    assert v.stdout.strip().startswith("amplint ")


# ---- exit codes -----------------------------------------------------------------------------------

def test_exit_0_when_clean(clean_project):
    r = run(["check"], clean_project)
    assert r.rc == 0
    passed, assumed = r.out.splitlines()
    # Not a silent pass: the precision amplint took the code to run in, and why, is said.
    assert passed == "All checks passed!"
    assert assumed.startswith("Assumed precision: fp32: no autocast, GradScaler, half parameters or precision flag")


def test_exit_1_with_findings_and_a_summary(project):
    r = run(["check", "train.py"], project)
    assert r.rc == 1
    n = len(codes_of(r.out))
    assert n >= 3
    summary = r.out.rstrip().splitlines()
    assert f"Found {n} errors." in summary[-3:]  # then, when some have fixes, "[*] k fixable ..."
    assert summary[-1].startswith("Assumed precision: fp16: parameters are float16: ")


def test_default_path_is_the_current_directory(project):
    assert codes_of(run(["check"], project).out) == codes_of(run(["check", "."], project).out)
    assert codes_of(run(["check"], project).out)


def test_exit_zero_still_prints_findings(project):
    r = run(["check", "--exit-zero", "--output-format", "concise"], project)
    assert r.rc == 0
    assert set(codes_of(r.out)) == {"AMP101", "AMP103", "AMP501"}


@pytest.mark.parametrize("argv", [
    ["check", "--no-such-option"],
    ["check", "--output-format", "xml"],
    ["check", "--precision", "fp8"],
    ["check", "--select", "AMP999"],
    ["check", "--ignore", "XYZ1"],
    ["check", "--extend-select", "AMP9"],
    ["check", "missing.py"],
    ["check", "--config", "nope.toml"],
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(project, argv):
    r = run(argv, project)
    assert r.rc == 2, (argv, r.out, r.err)
    assert r.err.strip(), "a usage error says what is wrong"


def test_unknown_select_code_is_named(project):
    r = run(["check", "--select", "AMP101,AMP999"], project)
    assert r.rc == 2
    assert "AMP999" in r.err and "--select" in r.err


def test_missing_path_is_named_and_nothing_is_linted(project):
    r = run(["check", "train.py", "gone/"], project)
    assert r.rc == 2
    assert "gone" in r.err
    assert r.out == ""


# ---- options --------------------------------------------------------------------------------------

def test_statistics_counts_per_rule(project):
    r = run(["check", "--statistics"], project)
    assert r.rc == 1
    rows = [line.split("\t") for line in r.out.splitlines()]
    counts = {row[1]: int(row[0]) for row in rows}
    detail = run(["check", "--output-format", "concise"], project)
    expected = {}
    for c in codes_of(detail.out):
        expected[c] = expected.get(c, 0) + 1
    assert counts == expected
    for row in rows:
        assert row[2].split()[-1] == all_rules()[row[1]].name
    assert not codes_of(r.out), "statistics print counts, not findings"


def test_quiet_prints_findings_without_summary(project, clean_project):
    r = run(["check", "-q", "--output-format", "concise"], project)
    assert r.rc == 1
    assert codes_of(r.out)
    assert "Found" not in r.out
    r = run(["check", "--quiet"], clean_project)
    assert (r.rc, r.out) == (0, "")


def test_select_replaces_and_accepts_prefixes(project):
    r = run(["check", "--select", "AMP501", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP501"}
    r = run(["check", "--select", "amp1", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101", "AMP103"}


def test_ignore_and_extend_select(project):
    r = run(["check", "--ignore", "AMP501,AMP103", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101"}
    (project / "pyproject.toml").write_text('[tool.amplint]\nselect = ["AMP101"]\n')
    r = run(["check", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101"}
    r = run(["check", "--extend-select", "AMP501", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101", "AMP501"}
    r = run(["check", "--select", "AMP103", "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP103"}, "--select replaces the configured select"


def test_ignoring_everything_selected_is_clean(project):
    r = run(["check", "--select", "AMP501", "--ignore", "AMP5"], project)
    assert (r.rc, r.out.splitlines()[0]) == (0, "All checks passed!")


def test_precision_option_overrides_the_inferred_regime(tmp_path):
    # No evidence of half parameters anywhere: AMP101 is silent until --precision fp16 says so.
    root = write_project(tmp_path / "p", {"opt.py": "import torch\nopt = torch.optim.Adam(params)\n"})
    assert run(["check"], root).rc == 0
    r = run(["check", "--precision", "fp16", "--output-format", "concise"], root)
    assert codes_of(r.out) == ["AMP101"]
    assert 'precision = "fp16"' in run(["check", "--precision", "fp16"], root).out
    # And fp32 silences evidence that the code would otherwise be taken from.
    half = write_project(tmp_path / "h", {"train.py": TRAIN})
    r = run(["check", "--precision", "fp32", "--select", "AMP101"], half)
    assert r.rc == 0
    r = run(["check", "--precision", "fp16-mixed", "--select", "AMP101"], half)
    assert r.rc == 0, "under fp16-mixed the optimizer runs on float32 parameters"


def test_config_option_reads_the_given_file(project, tmp_path):
    cfg = tmp_path / "elsewhere" / "pyproject.toml"
    cfg.parent.mkdir()
    cfg.write_text('[tool.amplint]\nignore = ["AMP501"]\n')
    r = run(["check", "--config", cfg, "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101", "AMP103"}
    bad = tmp_path / "bad.toml"
    bad.write_text('[tool.amplint]\nselect = "AMP101"\n')
    r = run(["check", "--config", bad], project)
    assert r.rc == 2 and "bad.toml" in r.err and "select" in r.err


def test_config_option_beats_the_nearest_pyproject(project, tmp_path):
    (project / "pyproject.toml").write_text('[tool.amplint]\nselect = ["AMP501"]\n')
    cfg = tmp_path / "other.toml"
    cfg.write_text('[tool.amplint]\nselect = ["AMP101"]\n')
    r = run(["check", "--config", cfg, "--output-format", "concise"], project)
    assert set(codes_of(r.out)) == {"AMP101"}


# ---- amplint rule ---------------------------------------------------------------------------------

def test_rule_command(tmp_path):
    r = run(["rule", "AMP101"], tmp_path)
    assert r.rc == 0 and r.out.startswith("# AMP101 optimizer-eps-underflow")
    assert run(["rule", "AMP999"], tmp_path).rc == 2
    assert run(["rule"], tmp_path).rc == 2
    r = run(["rule", "--all"], tmp_path)
    assert r.rc == 0
    assert re.findall(r"^(AMP\d+)", r.out, re.MULTILINE) == sorted(all_rules())
