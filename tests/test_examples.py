"""examples/ is a small training project that shows every rule: `amplint check examples/` (README's
first command) must report each registered rule at least once, and nothing amplint cannot parse."""
import ast
import re

import pytest

from amplint.discovery import project_root
from amplint.rules import all_rules

from cliutil import ROOT, run

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def report():
    r = run(["check", "--output-format", "concise", "examples/"], ROOT)
    found = re.findall(r"^(examples/\S+?):(\d+):(\d+): ([A-Z]+\d+) ", r.out, re.MULTILINE)
    return r, found


def test_examples_is_its_own_project():
    assert project_root(EXAMPLES / "train.py") == EXAMPLES
    for f in EXAMPLES.rglob("*.py"):
        ast.parse(f.read_bytes(), filename=str(f))  # real, valid Python


def test_check_examples_reports_findings_and_no_errors(report):
    r, found = report
    assert r.rc == 1, r.err
    assert r.err == ""
    assert found
    assert not [f for f in found if f[3] == "E999"]


@pytest.mark.parametrize("code", sorted(all_rules()))
def test_every_rule_is_shown_by_the_examples(report, code):
    _, found = report
    assert code in {f[3] for f in found}, (
        f"examples/ has no hazard that {code} ({all_rules()[code].name}) reports: add one to the example "
        f"training project (realistic code, not a list of snippets)")
