"""README.md stays true: its commands, its sample finding, its configuration example, its options,
output formats and snippets match what amplint does."""
import re
import sys

import pytest

from amplint.cli import build_parser
from amplint.config import load
from amplint.report import FORMATS

from cliutil import ROOT, run

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(lang=""):
    return re.findall(r"^```" + lang + r"\n(.*?)^```", README, re.S | re.M)


def test_the_two_setup_commands():
    commands = [b.strip() for b in blocks()]
    assert "pip install . && amplint check examples/" in commands
    assert 'pip install -e ".[test]" && pytest' in commands


def test_the_sample_finding_is_real():
    m = re.search(r"^(examples/\S+:\d+:\d+: [A-Z]+\d+ .*?)\n```", README, re.M | re.S)
    assert m, "README shows a sample finding"
    r = run(["check", "examples/"], ROOT)
    assert m.group(1) + "\n" in r.out  # verbatim: message, snippet, evidence, help, fix


def test_the_configuration_example_is_valid_and_complete(tmp_path):
    [example] = [b for b in blocks("toml") if "per-file-ignores" in b]
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text(example)
    load(cfg)  # every key and code in it is accepted
    table = tomllib.loads(example)["tool"]["amplint"]
    documented = set(table)
    for key in ("select", "ignore", "extend-select", "per-file-ignores", "exclude", "extend-exclude", "precision"):
        assert key in documented
    # ...and the loader knows no key the README does not show
    source = (ROOT / "amplint" / "config.py").read_text()
    accepted = set(re.findall(r'key == "([a-z-]+)"', source)) | set(re.findall(r'"([a-z-]+)"', source.split("_LIST_KEYS = ")[1].split("\n")[0]))
    assert accepted <= documented, accepted - documented


def test_every_check_option_is_documented():
    check = build_parser()._subparsers._group_actions[0].choices["check"]
    options = {s for a in check._actions for s in a.option_strings if s.startswith("--") and s != "--help"}
    missing = [o for o in sorted(options) if not re.search(r"(?<![\w-])" + re.escape(o) + r"(?![\w-])", README)]
    assert not missing, missing


def test_every_output_format_is_documented():
    section = README.split("## Output formats", 1)[1].split("\n## ", 1)[0]
    for name in FORMATS:
        assert f"- `{name}`" in section


def test_snippets_are_valid_yaml_using_the_real_hook_and_action():
    yaml = pytest.importorskip("yaml")
    hook_ids = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    snippets = [yaml.safe_load(b) for b in blocks("yaml")]
    precommit = [s for s in snippets if "repos" in s]
    assert precommit
    for s in precommit:
        for repo in s["repos"]:
            for hook in repo["hooks"]:
                assert hook["id"] in hook_ids
    [workflow] = [s for s in snippets if "jobs" in s]
    steps = workflow["jobs"]["amplint"]["steps"]
    assert any(step.get("uses", "").startswith("github/codeql-action/upload-sarif") for step in steps)
    runs = [step["run"] for step in steps if "run" in step]
    assert any("--output-format sarif" in r and "amplint.sarif" in r for r in runs)
    sarif_step = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert sarif_step["with"]["sarif_file"] == "amplint.sarif"


def test_fp16_numbers_quoted_are_the_computed_ones():
    from amplint.fp16 import FLOAT16, fmt

    why = README.split("## Why", 1)[1].split("\n## ", 1)[0]
    assert f"**{fmt(FLOAT16.max)}**" in why
    assert f"**{fmt(FLOAT16.smallest_normal)}**" in why
    assert f"**{fmt(FLOAT16.smallest_subnormal)}**" in why


def test_precommit_snippet_pins_a_real_commit_whose_hooks_force_exclude():
    import subprocess

    yaml = pytest.importorskip("yaml")
    from amplint import HOMEPAGE

    [remote] = [s for s in map(yaml.safe_load, blocks("yaml")) if "repos" in s and s["repos"][0]["repo"] != "local"]
    repo = remote["repos"][0]
    assert repo["repo"] == HOMEPAGE
    assert re.fullmatch(r"[0-9a-f]{40}", repo["rev"]), "a commit until a release tag exists"
    git = subprocess.run(["git", "-C", str(ROOT), "show", f"{repo['rev']}:.pre-commit-hooks.yaml"],
                         capture_output=True, text=True)
    if git.returncode != 0 and "not a git repository" in git.stderr:
        pytest.skip("not a git checkout")
    assert git.returncode == 0, f"rev {repo['rev']} is not a commit of this repository: {git.stderr}"
    hooks = {h["id"]: h for h in yaml.safe_load(git.stdout)}
    assert all("--force-exclude" in h["entry"].split() for h in hooks.values())


def test_local_hook_entry_runs_as_written_and_honours_excludes(tmp_path):
    yaml = pytest.importorskip("yaml")
    from cliutil import run_module, write_project

    [local] = [s for s in map(yaml.safe_load, blocks("yaml")) if "repos" in s and s["repos"][0]["repo"] == "local"]
    entry = local["repos"][0]["hooks"][0]["entry"].split()
    assert entry[0] == "amplint"
    root = write_project(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "p"\n[tool.amplint]\nextend-exclude = ["third_party"]\n',
        "third_party/x.py": "import torch\ns = torch.cuda.amp.GradScaler()\n", "ok.py": "x = 1\n"})
    r = run_module([*entry[1:], "third_party/x.py", "ok.py"], root)  # as pre-commit passes the changed files
    assert r.rc == 0 and r.out.startswith("All checks passed!"), r.out + r.err


def test_actions_recipe_runs_amplint_once_and_uploads_even_on_failure():
    yaml = pytest.importorskip("yaml")
    [workflow] = [s for s in map(yaml.safe_load, blocks("yaml")) if "jobs" in s]
    steps = workflow["jobs"]["amplint"]["steps"]
    runs = [step["run"] for step in steps if "amplint check" in step.get("run", "")]
    assert len(runs) == 1 and "-o amplint.sarif" in runs[0]
    upload = next(step for step in steps if step.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    assert "failure()" in upload["if"]
