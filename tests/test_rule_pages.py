"""Every rule has a page; the page's bad example is flagged by exactly that rule and its good
example by none; `amplint rule CODE` prints the page."""
import io
import re
from types import SimpleNamespace

import pytest

from amplint.cli import run_rule
from amplint.docs import examples, read_page, sections
from amplint.rules import all_rules

from conftest import ROOT, codes

RULES = sorted(all_rules())
REQUIRED = ["What it does", "Why is this bad?", "Example", "Use instead", "When not to flag", "Fix safety", "References"]


@pytest.mark.parametrize("code", RULES)
def test_page_has_every_section(code):
    page = read_page(code)
    assert page is not None, f"rules/{code}.md is missing"
    rule = all_rules()[code]
    assert page.splitlines()[0] == f"# {code} {rule.name}"
    assert f"Fix: {rule.fix_safety}" in page.splitlines()[1]
    missing = [s for s in REQUIRED if s not in sections(page)]
    assert not missing, f"{code} page lacks sections {missing}"


@pytest.mark.parametrize("code", RULES)
def test_bad_example_is_flagged_by_exactly_this_rule(code):
    bad = examples(read_page(code), "Example")
    assert bad, f"{code} page has no example"
    for snippet in bad:
        found = codes(snippet, select=("ALL", code))  # a default-off rule runs when named
        assert found and set(found) == {code}, f"{code} example gave {found}"


@pytest.mark.parametrize("code", RULES)
def test_good_example_is_clean(code):
    good = examples(read_page(code), "Use instead")
    assert good, f"{code} page has no 'Use instead' example"
    for snippet in good:
        assert codes(snippet, select=("ALL", code)) == [], snippet


@pytest.mark.parametrize("code", RULES)
def test_rule_command_prints_the_page(code):
    out = io.StringIO()
    assert run_rule(SimpleNamespace(all=False, code=code.lower()), out, io.StringIO()) == 0
    assert out.getvalue() == read_page(code)


def test_rule_all_lists_every_rule():
    out = io.StringIO()
    assert run_rule(SimpleNamespace(all=True, code=None), out, io.StringIO()) == 0
    listed = re.findall(r"^(AMP\d+)", out.getvalue(), re.MULTILINE)
    assert listed == RULES


def test_readme_rule_table_matches_registry():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| \[?(AMP\d+)\]?[^|]*\| `?([a-z0-9-]+)`? \| (.+?) \| (\w+) \|$", readme, re.MULTILINE)
    assert [r[0] for r in rows] == RULES
    for code, name, summary, fix in rows:
        rule = all_rules()[code]
        assert (name, summary.strip(), fix) == (rule.name, rule.summary, rule.fix_safety)
