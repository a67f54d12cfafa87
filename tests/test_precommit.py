"""pre-commit: the hook definition, and (slow) real ``pre-commit try-repo`` on a temporary git
repository holding a hazardous file, which must fail with the finding."""
import os
import shutil
import subprocess
import sys

import pytest

from cliutil import ROOT, write_project

yaml = pytest.importorskip("yaml")  # pre-commit depends on PyYAML


def hooks():
    return {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}


def test_hook_definition():
    hook = hooks()["amplint"]
    assert hook["entry"].split()[:2] == ["amplint", "check"]
    assert hook["language"] == "python"
    assert "python" in hook.get("types_or", hook.get("types", []))
    # One process for all the files: the project regime is inferred once per run.
    assert hook.get("require_serial") is True


def test_hook_entry_is_the_installed_console_script():
    pyproject = (ROOT / "pyproject.toml").read_text()
    for hook in hooks().values():
        assert hook["entry"].split()[0] in pyproject, hook


def _git(cwd, *args):
    subprocess.run(["git", "-c", "user.name=amplint-test", "-c", "user.email=test@example.invalid",
                    "-c", "commit.gpgsign=false", "-c", "init.defaultBranch=main", *args],
                   cwd=cwd, check=True, capture_output=True, text=True, timeout=60)


UNREACHABLE = ("No matching distribution found", "Could not find a version that satisfies",
               "Failed to establish a new connection", "Temporary failure in name resolution")


@pytest.mark.slow
def test_pre_commit_try_repo_fails_on_a_hazard(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    if not (ROOT / ".git").exists():
        pytest.skip("pre-commit try-repo needs amplint's own git repository")
    repo = write_project(tmp_path / "user-repo", {
        "train.py": "import torch\nscaler = torch.cuda.amp.GradScaler()\n",
        "util.py": "import torch\n\ndef f(x):\n    return torch.relu(x)\n",
    }, marker=None)
    _git(repo, "init", "-q")
    _git(repo, "add", "train.py", "util.py")
    _git(repo, "commit", "-q", "-m", "init")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"))
    env.pop("PYTHONPATH", None)  # the hook must run the amplint pre-commit installs, not this checkout
    p = subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(ROOT), "amplint", "--all-files",
                        "--color", "never"], cwd=repo, env=env, capture_output=True, text=True, timeout=900)
    out = p.stdout + p.stderr
    if "- hook id: amplint" not in out:
        log = tmp_path / "pre-commit-home" / "pre-commit.log"
        text = out + (log.read_text(errors="replace") if log.exists() else "")
        if any(s in text for s in UNREACHABLE):
            pytest.skip("pre-commit could not install amplint's dependencies from the package index")
        pytest.fail(f"the hook did not run:\n{text[-4000:]}")
    assert p.returncode == 1, out
    assert "amplint..." in out and "Failed" in out
    assert "train.py:2:10: AMP501 " in out
    assert "util.py" not in out
