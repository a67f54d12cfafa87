"""Output options through the command line: --force-exclude, -o, --color, -v, --show-fixes, the
gitlab format, SARIF details (encoded URIs, help links, related locations, warning levels) and the
structured evidence of JSON findings."""
import json
import os
import re

import pytest

from cliutil import run, run_module, write_project

HALF = "import torch\nmodel = torch.nn.Linear(8, 8).cuda().half()\nloss.backward()\n"
OPTIM = "import torch\nopt = torch.optim.Adam(params)\n"


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "p", {
        "pyproject.toml": '[project]\nname = "p"\n[tool.amplint]\nextend-exclude = ["third_party"]\n',
        "train.py": HALF, "opt.py": OPTIM, "third_party/vendored.py": OPTIM,
    })


def test_force_exclude_applies_excludes_to_named_files(project):
    named = run(["check", "--output-format", "concise", "third_party/vendored.py", "opt.py"], project)
    assert "third_party/vendored.py:2:" in named.out  # named: linted, as before
    forced = run(["check", "--output-format", "concise", "--force-exclude", "third_party/vendored.py", "opt.py"], project)
    assert "third_party" not in forced.out and "opt.py:2:" in forced.out
    only = run(["check", "--force-exclude", "third_party/vendored.py"], project)
    assert only.rc == 0 and only.out.startswith("All checks passed!")


def test_output_file_gets_the_report_and_stdout_stays_empty(project):
    r = run(["check", "--output-format", "sarif", "-o", "out.sarif"], project)
    assert r.rc == 1 and r.out == ""
    doc = json.loads((project / "out.sarif").read_text())
    assert {res["ruleId"] for res in doc["runs"][0]["results"]} == {"AMP101"}
    r = run(["check", "--output-file", "missing-dir/out.txt"], project)
    assert r.rc == 2 and "cannot write missing-dir/out.txt" in r.err


def test_color_always_never_and_the_environment(project, monkeypatch):
    assert "\x1b[" in run(["check", "--color", "always"], project).out
    assert "\x1b[" not in run(["check", "--color", "never"], project).out
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in run(["check"], project).out
    monkeypatch.setenv("NO_COLOR", "1")
    assert "\x1b[" not in run(["check"], project).out
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.delenv("FORCE_COLOR")
    assert "\x1b[" not in run(["check"], project).out  # not a terminal
    assert "\x1b[" not in run(["check", "--color", "always", "--output-format", "concise"], project).out


def test_verbose_names_the_files_the_precision_and_the_time(project):
    r = run(["check", "-v"], project)
    assert "amplint: checked opt.py" in r.err and "amplint: checked train.py" in r.err
    assert "third_party/vendored.py" not in r.err
    assert re.search(r"amplint: precision fp16: parameters are float16: `torch.nn.Linear\(8, 8\)\.cuda\(\)\.half\(\)` "
                     r"at train\.py:2", r.err), r.err
    assert re.search(r"amplint: 2 files in \d+\.\d\d s", r.err)


def test_show_fixes_lists_what_was_fixed(project):
    r = run(["fix", "--show-fixes"], project)
    assert "Fixed 1 error:\n- opt.py:\n    1 × AMP101 (optimizer-eps-underflow)\n" in r.out
    assert r.out.splitlines()[-1].startswith("Assumed precision: fp16: parameters are float16")
    assert "eps=1e-4" in (project / "opt.py").read_text()
    again = run(["fix", "--show-fixes", "-v"], project)
    assert "No errors fixed." in again.out
    assert "amplint: checked opt.py\n" in again.err and "amplint: precision fp16: " in again.err


def test_gitlab_code_quality(project):
    r = run(["check", "--output-format", "gitlab"], project)
    assert r.rc == 1
    [issue] = json.loads(r.out)
    assert issue["check_name"] == "AMP101" and issue["severity"] == "major"
    assert issue["location"] == {"path": "opt.py", "positions": {"begin": {"line": 2, "column": 7},
                                                                 "end": {"line": 2, "column": 23}}}
    assert issue["description"].startswith("AMP101 Adam default eps=1e-8") and re.fullmatch(r"[0-9a-f]{32}", issue["fingerprint"])
    assert "Assumed precision: fp16" in r.err
    # The fingerprint does not change when the code moves down a line.
    (project / "opt.py").write_text("\n" + OPTIM)
    [moved] = json.loads(run(["check", "--output-format", "gitlab"], project).out)
    assert moved["fingerprint"] == issue["fingerprint"] and moved["location"]["positions"]["begin"]["line"] == 3


def test_json_evidence_and_help(project):
    [f] = json.loads(run(["check", "--output-format", "json"], project).out)
    assert f["help"].startswith("use eps >= 6.1e-5")
    assert f["evidence"] == [{"filename": str(project / "train.py"), "row": 2,
                              "what": "parameters are float16: `torch.nn.Linear(8, 8).cuda().half()`"}]
    assert f["severity"] == "error" and f["confidence"] == "certain"
    assert "\n" not in f["message"] and len(f["message"]) < 200


def test_sarif_uris_help_links_related_locations_and_levels(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from pathlib import Path
    schema = json.loads((Path(__file__).parent / "fixtures" / "sarif-2.1.0-essentials.schema.json").read_text())
    temperature = ("import torch\nfrom torch import nn\n\nclass M(nn.Module):\n"
                   "    def __init__(self):\n        super().__init__()\n"
                   "        self.temperature = nn.Parameter(torch.tensor(0.07))\n\n"
                   "    def forward(self, a, b):\n        return a @ b.T / self.temperature\n")
    root = write_project(tmp_path / "s", {"my dir/100% opt.py": OPTIM, "train.py": HALF, "model.py": temperature})
    r = run(["check", "--output-format", "sarif"], root)
    doc = json.loads(r.out)
    jsonschema.validate(doc, schema)
    run_ = doc["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    assert all(rule["helpUri"].endswith(f"/rules/{rule['id']}.md") for rule in driver["rules"] if rule["id"].startswith("AMP"))
    by_rule = {res["ruleId"]: res for res in run_["results"]}
    amp101 = by_rule["AMP101"]
    assert amp101["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "my%20dir/100%25%20opt.py"
    assert amp101["level"] == "error"
    [related] = amp101["relatedLocations"]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    assert related["physicalLocation"]["region"] == {"startLine": 2} and "half()" in related["message"]["text"]
    assert by_rule["AMP401"]["level"] == "warning"  # a likely finding
    assert run_["properties"]["assumedPrecision"][0]["precision"] == "fp16"


def test_github_warns_for_likely_findings(tmp_path):
    root = write_project(tmp_path / "g", {"train.py": HALF + "import f\n", "f.py": "import torch\ndef f(x):\n    return 1 / (x + 1e-6)\n"})
    rows = run(["check", "--output-format", "github"], root).out.splitlines()
    assert any(row.startswith("::warning file=f.py,line=3,") and "AMP102" in row for row in rows), rows


def test_the_options_work_in_a_fresh_interpreter(project):
    r = run_module(["check", "--force-exclude", "--output-format", "concise", "-o", "report.txt", "third_party/vendored.py", "opt.py"], project)
    assert r.rc == 1 and r.out == ""
    text = (project / "report.txt").read_text()
    assert text.startswith("opt.py:2:7: AMP101 ") and "third_party" not in text
