"""[tool.amplint]: every key, and the errors (unknown key / code, bad types, invalid TOML) that exit 2
with a message naming the culprit."""
import re

import pytest

from amplint.config import ConfigError, RuleSelection, Settings, find_config, load
from amplint.rules import rule_codes

from cliutil import run, write_project

DEPRECATED = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"  # AMP501, anywhere
MASK = ('import torch\ndef attend(q, k, mask):\n    with torch.autocast("cuda"):\n'
        '        scores = q @ k.transpose(-2, -1)\n        return scores.masked_fill(mask, -1e9)\n')  # AMP103
HALF = ("import torch\nmodel = Net().half()\noptimizer = torch.optim.Adam(model.parameters())\n"
        "loss.backward()\n")  # AMP101


def found(r):
    return sorted(re.findall(r"^(\S+?):\d+:\d+: ([A-Z]+\d+) ", r.out, re.MULTILINE))


def project(tmp_path, config: str, files=None):
    files = files or {"train.py": HALF + MASK.replace("import torch\n", "") + DEPRECATED.replace("import torch\n", "")}
    return write_project(tmp_path / "p", {"pyproject.toml": "[project]\nname = 'p'\n" + config, **files})


def check(root, *argv):
    return run(["check", "--output-format", "concise", *argv], root)


# ---- each key -------------------------------------------------------------------------------------

def test_select(tmp_path):
    root = project(tmp_path, '[tool.amplint]\nselect = ["AMP5"]\n')
    assert {c for _, c in found(check(root))} == {"AMP501"}


def test_ignore(tmp_path):
    root = project(tmp_path, '[tool.amplint]\nignore = ["AMP501", "AMP101"]\n')
    assert {c for _, c in found(check(root))} == {"AMP103"}


def test_extend_select_adds_to_select(tmp_path):
    root = project(tmp_path, '[tool.amplint]\nselect = ["AMP101"]\nextend-select = ["AMP103"]\n')
    assert {c for _, c in found(check(root))} == {"AMP101", "AMP103"}


def test_per_file_ignores(tmp_path):
    root = project(tmp_path, '[tool.amplint.per-file-ignores]\n"legacy/*.py" = ["AMP501"]\n"one.py" = ["AMP5"]\n',
                   {"legacy/old.py": DEPRECATED, "one.py": DEPRECATED, "new.py": DEPRECATED,
                    "sub/legacy.py": DEPRECATED})
    assert found(check(root)) == [("new.py", "AMP501"), ("sub/legacy.py", "AMP501")]
    # Patterns are relative to the configuration file, wherever amplint runs from.
    assert found(check(root.parent, "p")) == [("p/new.py", "AMP501"), ("p/sub/legacy.py", "AMP501")]


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tmp_path):
    files = {"gen/out.py": DEPRECATED, "build/x.py": DEPRECATED, "legacy/a.py": DEPRECATED, "ok.py": DEPRECATED}
    root = project(tmp_path, "", files)
    assert [p for p, _ in found(check(root))] == ["gen/out.py", "legacy/a.py", "ok.py"]  # build/ is a default
    (root / "pyproject.toml").write_text('[tool.amplint]\nextend-exclude = ["legacy", "gen/*.py"]\n')
    assert [p for p, _ in found(check(root))] == ["ok.py"]
    (root / "pyproject.toml").write_text('[tool.amplint]\nexclude = ["gen", "legacy/*.py"]\n')
    assert [p for p, _ in found(check(root))] == ["build/x.py", "ok.py"]


def test_excluded_file_named_explicitly_is_linted(tmp_path):
    root = project(tmp_path, '[tool.amplint]\nextend-exclude = ["legacy"]\n', {"legacy/a.py": DEPRECATED})
    assert found(check(root)) == []
    assert found(check(root, "legacy/a.py")) == [("legacy/a.py", "AMP501")]


@pytest.mark.parametrize("precision, fires", [("fp16", True), ("fp32", False), ("auto", False), ("bf16", False)])
def test_precision(tmp_path, precision, fires):
    root = project(tmp_path, f'[tool.amplint]\nprecision = "{precision}"\n',
                   {"opt.py": "import torch\noptimizer = torch.optim.Adam(params)\n"})
    r = check(root)
    assert (found(r) == [("opt.py", "AMP101")]) is fires
    if fires:
        assert f'precision = "{precision}" in configuration' in run(["check"], root).out


def test_cli_precision_beats_config(tmp_path):
    root = project(tmp_path, '[tool.amplint]\nprecision = "fp32"\n',
                   {"opt.py": "import torch\noptimizer = torch.optim.Adam(params)\n"})
    assert found(check(root, "--precision", "fp16")) == [("opt.py", "AMP101")]


def test_nearest_pyproject_with_a_tool_amplint_table_is_used(tmp_path):
    outer = write_project(tmp_path / "outer", {"pyproject.toml": '[tool.amplint]\nselect = ["AMP501"]\n'})
    inner = write_project(outer / "inner", {"pyproject.toml": "[project]\nname = 'inner'\n",
                                           "a.py": HALF + DEPRECATED})
    assert find_config(inner / "a.py") == outer / "pyproject.toml"
    assert {c for _, c in found(check(inner))} == {"AMP501"}
    (inner / "pyproject.toml").write_text('[tool.amplint]\nselect = ["AMP101"]\n')
    assert find_config(inner / "a.py") == inner / "pyproject.toml"
    assert {c for _, c in found(check(inner))} == {"AMP101"}


def test_defaults_without_config(tmp_path):
    s = load(None)
    assert (s.select, s.ignore, s.extend_select, s.per_file_ignores, s.exclude, s.extend_exclude, s.precision) == \
        (["ALL"], [], [], {}, [], [], "auto")
    assert RuleSelection(s, rule_codes()).enabled == set(rule_codes()) - {"AMP100", "AMP205", "AMP206", "AMP207", "AMP305"}  # off by default


@pytest.mark.parametrize("select, extend, ignore, on", [
    (["ALL"], [], [], False),
    (["AMP2"], [], [], False),  # a prefix does not enable an off-by-default rule
    (["AMP20"], [], [], False),
    (["AMP205"], [], [], True),
    (["ALL"], ["AMP205"], [], True),
    (["ALL"], ["amp205"], [], True),
    (["ALL"], ["AMP205"], ["AMP2"], False),  # ignoring by prefix still removes it
])
def test_off_by_default_rules_run_only_when_named(select, extend, ignore, on):
    s = Settings(select=select, extend_select=extend, ignore=ignore)
    enabled = RuleSelection(s, rule_codes()).enabled
    assert ("AMP205" in enabled) is on
    if select == ["AMP2"]:
        assert {"AMP201", "AMP204"} <= enabled


# ---- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("config, named", [
    ('[tool.amplint]\nselct = ["AMP101"]\n', "selct"),
    ('[tool.amplint]\nselect = ["AMP999"]\n', "AMP999"),
    ('[tool.amplint]\nignore = ["XYZ"]\n', "XYZ"),
    ('[tool.amplint]\nextend-select = ["AMP9"]\n', "AMP9"),
    ('[tool.amplint.per-file-ignores]\n"tests/*" = ["AMP77"]\n', "AMP77"),
    ('[tool.amplint]\nselect = "AMP101"\n', "select"),
    ('[tool.amplint]\nexclude = [1]\n', "exclude"),
    ('[tool.amplint]\nper-file-ignores = ["x"]\n', "per-file-ignores"),
    ('[tool.amplint]\nprecision = "fp8"\n', "fp8"),
    ('[tool.amplint]\nselect = [""]\n', "select"),
    ("[tool]\namplint = 3\n", "tool.amplint"),
])
def test_bad_config_exits_2_naming_the_problem(tmp_path, config, named):
    root = project(tmp_path, config)
    r = check(root)
    assert r.rc == 2, r.out
    assert named in r.err
    assert "pyproject.toml" in r.err, "the message says which file is wrong"
    assert r.out == ""


def test_invalid_toml_exits_2_naming_the_file(tmp_path):
    root = project(tmp_path, "[tool.amplint]\nselect = [\n")
    r = check(root)
    assert r.rc == 2
    assert str(root / "pyproject.toml") in r.err and "TOML" in r.err


def test_invalid_toml_in_a_given_config_file(tmp_path):
    root = project(tmp_path, "")
    cfg = tmp_path / "amplint.toml"
    cfg.write_text("select = [\n")
    r = check(root, "--config", cfg)
    assert r.rc == 2 and str(cfg) in r.err


def test_a_broken_pyproject_that_is_not_about_amplint_is_skipped(tmp_path):
    # The nearest pyproject.toml is broken but has no [tool.amplint]: amplint looks further up.
    outer = write_project(tmp_path / "o", {"pyproject.toml": '[tool.amplint]\nselect = ["AMP501"]\n'})
    inner = write_project(outer / "i", {"pyproject.toml": "[project\n", "a.py": HALF + DEPRECATED})
    assert {c for _, c in found(check(inner))} == {"AMP501"}


def test_load_rejects_unknown_keys_directly(tmp_path):
    f = tmp_path / "pyproject.toml"
    f.write_text("[tool.amplint]\nsafe_eps = 1e-4\n")
    with pytest.raises(ConfigError, match="safe_eps"):
        load(f)


def test_settings_base_dir_is_the_config_directory(tmp_path):
    f = tmp_path / "pyproject.toml"
    f.write_text("[tool.amplint]\n")
    assert load(f).base_dir == tmp_path
    assert Settings().config_path is None


@pytest.mark.parametrize("value", ["1e-8", "1e-6", "0", "-1", "2", '"small"'])
def test_safe_eps_must_be_a_normal_float16_value(tmp_path, value):
    f = tmp_path / "pyproject.toml"
    f.write_text(f"[tool.amplint]\nsafe-eps = {value}\n")
    with pytest.raises(ConfigError, match="safe-eps"):
        load(f)


def test_safe_eps_accepts_a_normal_float16_value(tmp_path):
    f = tmp_path / "pyproject.toml"
    f.write_text("[tool.amplint]\nsafe-eps = 1e-3\n")
    assert load(f).safe_eps == 1e-3
