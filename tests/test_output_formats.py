"""Output formats: full, concise, json, sarif (checked against the SARIF 2.1.0 essentials GitHub code
scanning requires, vendored as tests/fixtures/sarif-2.1.0-essentials.schema.json), github."""
import json
import os
import re
from pathlib import Path

import pytest

from amplint.docs import read_page
from amplint.rules import all_rules

from cliutil import run, write_project

FIXTURES = Path(__file__).parent / "fixtures"

SOURCE = (
    "import torch\n"
    "\n"
    "model = torch.nn.Linear(8, 8).cuda().half()\n"
    "optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-8)\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "\n"
    "def attend(q, k, mask):\n"
    '    with torch.autocast("cuda"):\n'
    "        scores = q @ k.transpose(-2, -1)\n"
    "        return scores.masked_fill(mask, -1e9)\n"
    "\n"
    "loss.backward()\n"
)
# (code, line, column, end_line, end_column) of the three findings above
EXPECTED = [
    ("AMP101", 4, 64, 4, 68),
    ("AMP501", 5, 10, 5, 35),
    ("AMP103", 10, 41, 10, 45),
]


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "proj", {"pkg/train.py": SOURCE, "pkg/broken.py": "def f(:\n"})


def fmt(project, name, *extra):
    return run(["check", "--output-format", name, *extra], project)


def test_concise(project):
    r = fmt(project, "concise")
    assert r.rc == 1
    found = re.findall(r"^(\S+):(\d+):(\d+): ([A-Z]+\d+) (.+)$", r.out, re.MULTILINE)
    assert [(p, int(l), int(c), code) for p, l, c, code, _ in found] == \
        [("pkg/broken.py", 1, 7, "E999")] + [("pkg/train.py", l, c, code) for code, l, c, _, _ in EXPECTED]
    assert "Found 4 errors." in r.out.splitlines()


def test_full_shows_the_source_line_and_carets(project):
    r = fmt(project, "full")
    assert r.rc == 1
    blocks = r.out.split("\n\n")
    amp501 = next(b for b in blocks if " AMP501 " in b).splitlines()
    assert amp501[0].startswith("pkg/train.py:5:10: AMP501 ")
    assert amp501[1] == "  |"
    assert amp501[2] == "5 | scaler = torch.cuda.amp.GradScaler()"
    assert amp501[3] == "  | " + " " * 9 + "^" * 25
    amp103 = next(b for b in blocks if " AMP103 " in b).splitlines()
    assert amp103[2] == "10 |         return scores.masked_fill(mask, -1e9)"
    assert amp103[3] == "   | " + " " * 40 + "^^^^"
    assert "Found 4 errors." in r.out


def test_full_shows_the_fix_and_its_safety_when_a_fix_exists(project):
    r = fmt(project, "full")
    js = json.loads(fmt(project, "json").out)
    shown = re.findall(r"^  = fix: (.+) \((safe|unsafe: needs --unsafe-fixes)\)$", r.out, re.MULTILINE)
    fixes = [d["fix"] for d in js if d["fix"] is not None]
    assert [m for m, _ in shown] == [f["message"] for f in fixes]
    assert [a.split(":")[0] for _, a in shown] == [f["applicability"] for f in fixes]


def test_full_decodes_with_the_files_encoding_and_expands_tabs(tmp_path):
    src = "# -*- coding: latin-1 -*-\nimport torch\nnom = 'Jos\xe9'; s = torch.cuda.amp.GradScaler()\n"
    tabbed = "import torch\nif True:\n\ts = torch.cuda.amp.GradScaler()\n"
    feed = "import torch\n\x0c\ns = torch.cuda.amp.GradScaler()\n"  # a form feed is not a line end
    root = write_project(tmp_path / "e", {"l.py": src.encode("latin-1"), "t.py": tabbed, "f.py": feed})
    r = run(["check", "--select", "AMP501"], root)
    assert "3 | nom = 'José'; s = torch.cuda.amp.GradScaler()" in r.out
    assert "  | " + " " * 18 + "^" * 25 + "\n" in r.out
    assert "3 |     s = torch.cuda.amp.GradScaler()\n  |         " + "^" * 25 + "\n" in r.out
    assert "3 | s = torch.cuda.amp.GradScaler()" in r.out.split("f.py:3:5")[1]


def test_full_quotes_a_long_line_as_a_window_around_the_mark(tmp_path):
    # a generated line of thousands of characters: a window of it, the carets still under the guard
    pad = "[" + ", ".join(f"w{i}" for i in range(1000)) + "]"
    line = f"y = ({pad}, x / (x.sum() + 1e-8), {pad})"
    root = write_project(tmp_path / "p", {"m.py": "import torch\nx = torch.zeros(3).half()\n" + line + "\n"})
    r = run(["check", "--select", "AMP102", "m.py"], root)
    quoted = [ln for ln in r.out.splitlines() if ln.startswith("3 |")]
    assert len(quoted) == 1 and len(quoted[0]) < 140 and quoted[0].count("…") == 2, r.out
    carets = r.out.splitlines()[r.out.splitlines().index(quoted[0]) + 1]
    start = carets.index("^")
    assert quoted[0][start:start + 4] == "1e-8" and carets[start:].strip() == "^^^^"


def test_full_quotes_a_short_line_whole():
    from amplint.report import _window
    assert _window("y = x / (x + 1e-8)", 13, 4) == ("y = x / (x + 1e-8)", 13, 4)


def test_json(project):
    r = fmt(project, "json")
    assert r.rc == 1
    data = json.loads(r.out)
    assert isinstance(data, list) and len(data) == 4
    keys = {"code", "name", "message", "filename", "location", "end_location", "fix", "severity"}
    for item in data:
        assert keys <= set(item)
        assert os.path.isabs(item["filename"])
        assert item["severity"] in ("error", "warning")
        assert item["fix"] is None or (isinstance(item["fix"], dict) and item["fix"]["message"]
                                       and item["fix"]["applicability"] in ("safe", "unsafe"))
    broken, *rest = data
    assert broken["code"] == "E999" and broken["filename"] == str(project / "pkg/broken.py")
    got = [(d["code"], d["location"]["row"], d["location"]["column"], d["end_location"]["row"],
            d["end_location"]["column"]) for d in rest]
    assert got == EXPECTED
    for d in rest:
        assert d["filename"] == str(project / "pkg/train.py")
        assert d["name"] == all_rules()[d["code"]].name
        assert d["message"] and "\n" not in d["message"]
    # Nothing but JSON on stdout: no summary line.
    assert r.out.rstrip().endswith("]")


def test_json_when_clean_is_an_empty_list(tmp_path):
    root = write_project(tmp_path / "c", {"ok.py": "x = 1\n"})
    r = run(["check", "--output-format", "json"], root)
    assert (r.rc, json.loads(r.out)) == (0, [])


def test_json_from_another_directory_has_absolute_filenames(project):
    r = run(["check", "--output-format", "json", "proj"], project.parent)
    assert {d["filename"] for d in json.loads(r.out)} == {str(project / "pkg/train.py"), str(project / "pkg/broken.py")}


def _sarif(project, *extra):
    r = fmt(project, "sarif", *extra)
    return r, json.loads(r.out)


def test_sarif_essentials(project):
    r, doc = _sarif(project)
    assert r.rc == 1
    assert doc["version"] == "2.1.0" and "sarif-2.1.0" in doc["$schema"]
    [run_] = doc["runs"]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "amplint"
    ids = [rule["id"] for rule in driver["rules"]]
    assert set(all_rules()) <= set(ids) and "E999" in ids
    for rule in driver["rules"]:
        if rule["id"] in all_rules():
            meta = all_rules()[rule["id"]]
            assert rule["name"] == meta.name and rule["shortDescription"]["text"] == meta.summary
            page = read_page(rule["id"])
            if page is not None:
                assert rule["help"] == {"text": page, "markdown": page}
    results = run_["results"]
    assert len(results) == 4
    for res in results:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["message"]["text"]
        [loc] = res["locations"]
        phys = loc["physicalLocation"]
        assert phys["artifactLocation"]["uri"] in ("pkg/train.py", "pkg/broken.py")
        assert phys["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == project.resolve().as_uri() + "/"
    got = [(res["ruleId"], res["locations"][0]["physicalLocation"]["region"]) for res in results[1:]]
    assert got == [(code, {"startLine": l, "startColumn": c, "endLine": el, "endColumn": ec})
                   for code, l, c, el, ec in EXPECTED]


def test_sarif_validates_against_the_vendored_schema(project, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((FIXTURES / "sarif-2.1.0-essentials.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    _, doc = _sarif(project)
    jsonschema.validate(doc, schema)
    clean = write_project(tmp_path / "c", {"ok.py": "x = 1\n"})
    _, empty = _sarif(clean)
    jsonschema.validate(empty, schema)
    assert empty["runs"][0]["results"] == []
    # The schema is not a rubber stamp: a result without a location fails it.
    broken = json.loads(json.dumps(doc))
    del broken["runs"][0]["results"][0]["locations"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema)


def test_sarif_outside_the_working_directory_uses_file_uris(project, tmp_path):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    r = run(["check", "--output-format", "sarif", project / "pkg/train.py"], elsewhere)
    uris = {res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for res in json.loads(r.out)["runs"][0]["results"]}
    assert uris == {(project / "pkg/train.py").resolve().as_uri()}


def test_github(project):
    r = fmt(project, "github")
    assert r.rc == 1
    notice, *rows = r.out.splitlines()
    assert notice.startswith("::notice title=amplint precision::Assumed precision: fp16: ")
    assert len(rows) == 4
    pattern = re.compile(r"^::error file=([^,]+),line=(\d+),col=(\d+),endLine=(\d+),endColumn=(\d+),"
                         r"title=amplint \(([A-Z]+\d+)\)::\6 (.+)$")
    parsed = [pattern.match(row) for row in rows]
    assert all(parsed), rows
    got = [(m.group(6), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)))
           for m in parsed if m.group(1) == "pkg/train.py"]
    assert got == EXPECTED


def test_github_escapes_its_special_characters(tmp_path):
    from amplint.findings import Finding
    from amplint.report import github
    import io

    out = io.StringIO()
    github([Finding("AMP501", "n", "50% done\nnext: a, b", "dir,x/a:b.py", 1, 2, 1, 3)], out)
    assert out.getvalue() == ("::error file=dir%2Cx/a%3Ab.py,line=1,col=2,endLine=1,endColumn=3,"
                              "title=amplint (AMP501)::AMP501 50%25 done%0Anext: a, b\n")


@pytest.mark.parametrize("name", ["json", "sarif", "github", "concise"])
def test_machine_formats_with_exit_zero_and_quiet(project, name):
    r = fmt(project, name, "--exit-zero")
    assert r.rc == 0 and r.out
    if name in ("json", "sarif"):
        json.loads(r.out)
    q = fmt(project, name, "--quiet")
    if name == "concise":
        assert "Found" not in q.out
    else:
        assert q.out == r.out
