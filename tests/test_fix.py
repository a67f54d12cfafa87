"""`amplint fix`: the machinery and its guarantees.

The edits are exercised with test-only rules (registered for one test) so that each mechanism
(replacement, insertion next to a statement, imports, overlapping fixes, fixes that never settle,
fixes that produce broken code) is tested on its own; the real rules' fixes are in
test_fix_rules.py. The guarantees (output parses, idempotence, atomic writes that keep mode,
encoding, BOM and line endings, files changed meanwhile, unwritable files, nothing outside the
given paths) are tested through the command line.
"""
import os
import stat
import textwrap

import libcst as cst
import pytest

import amplint.fixes as fixes_module
from amplint import rules as rules_package
from amplint.config import Settings
from amplint.edits import statement_anchor
from amplint.findings import Applicability, Fix, Violation
from amplint.fixes import fix_paths
from amplint.rules.base import Rule

from cliutil import run, write_project

# One hazard of each fixable rule, and one that has no fix (the receiver of masked_fill is a call).
TRAIN = '''\
import torch
from torch.cuda.amp import GradScaler

model = torch.nn.Linear(8, 8).cuda().half()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
scaler = GradScaler()


def step(x, mask):
    with torch.autocast("cuda"):
        scores = x @ x.T
        scores = scores.masked_fill(mask, -1e9)  # keep this comment
        other = model(x).masked_fill(mask, -1e9)
    loss = (scores.sum() + other.sum())
    loss.backward()
    optimizer.step()
'''
TRAIN_FIXED = '''\
import torch
from torch.amp import GradScaler

model = torch.nn.Linear(8, 8).cuda().half()
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=1e-4)
scaler = GradScaler("cuda")


def step(x, mask):
    with torch.autocast("cuda"):
        scores = x @ x.T
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)  # keep this comment
        other = model(x).masked_fill(mask, -1e9)
    loss = (scores.sum() + other.sum())
    loss.backward()
    optimizer.step()
'''
CLEAN = "import torch\n\n\ndef f(x):\n    return torch.relu(x)\n"


def codes_of(text):
    import re
    return re.findall(r"^\S+?:\d+:\d+: ([A-Z]+\d+) ", text, re.MULTILINE)


@pytest.fixture
def project(tmp_path):
    return write_project(tmp_path / "proj", {"train.py": TRAIN, "util.py": CLEAN})


# ---- the command line ------------------------------------------------------------------------------
def test_fix_writes_the_fixes_and_reports_what_remains(project):
    r = run(["fix", "train.py"], project)
    assert (project / "train.py").read_text() == TRAIN_FIXED
    assert codes_of(r.out) == ["AMP103"]  # the masked_fill on model(x): no fix offered
    assert "Found 4 errors (3 fixed, 1 remaining)." in r.out
    assert r.rc == 1


def test_all_fixed_exits_0(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"})
    r = run(["fix", "."], root)
    assert r.rc == 0, r.out + r.err
    assert "Found 1 error (1 fixed, 0 remaining)." in r.out
    assert (root / "a.py").read_text() == 'import torch\nwith torch.amp.autocast("cuda"):\n    pass\n'


def test_check_fix_is_fix(tmp_path):
    a = write_project(tmp_path / "a", {"train.py": TRAIN})
    b = write_project(tmp_path / "b", {"train.py": TRAIN})
    ra = run(["check", "--fix", "train.py"], a)
    rb = run(["fix", "train.py"], b)
    assert (ra.rc, ra.out, ra.err) == (rb.rc, rb.out, rb.err)
    assert (a / "train.py").read_text() == (b / "train.py").read_text() == TRAIN_FIXED


def test_check_alone_changes_nothing_and_says_what_is_fixable(project):
    before = (project / "train.py").read_bytes()
    r = run(["check", "train.py"], project)
    assert (project / "train.py").read_bytes() == before
    assert "[*] 3 fixable with `amplint fix`." in r.out


def test_diff_prints_a_diff_and_writes_nothing(project):
    path = project / "train.py"
    before, mtime = path.read_bytes(), path.stat().st_mtime_ns
    r = run(["fix", "--diff", "train.py"], project)
    assert r.rc == 1
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert r.out.startswith("--- train.py\n+++ train.py\n@@ ")
    assert "\n-scaler = GradScaler()\n" in r.out and "\n+scaler = GradScaler(\"cuda\")\n" in r.out
    assert "Would fix 3 errors." in r.err
    # the diff is exactly the change fix makes
    applied = _apply_unified_diff(TRAIN, r.out)
    assert applied == TRAIN_FIXED
    assert sorted(os.listdir(project)) == ["pyproject.toml", "train.py", "util.py"]


def test_check_diff_is_fix_diff(project):
    assert run(["check", "--diff", "train.py"], project).out == run(["fix", "--diff", "train.py"], project).out


def test_diff_with_nothing_to_fix_exits_0(project):
    r = run(["fix", "--diff", "util.py"], project)
    assert (r.rc, r.out) == (0, "")


def _apply_unified_diff(text: str, diff: str) -> str:
    """A tiny patch(1) for one-file diffs, to check that the diff describes the change."""
    import re
    old = text.splitlines(keepends=True)
    out, i = [], 0
    lines = diff.splitlines(keepends=True)[2:]
    k = 0
    while k < len(lines):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", lines[k])
        assert m, lines[k]
        start = int(m.group(1)) - 1 if m.group(2) != "0" else int(m.group(1))
        out.extend(old[i:start])
        i = start
        k += 1
        while k < len(lines) and not lines[k].startswith("@@"):
            tag, body = lines[k][0], lines[k][1:]
            if tag == " ":
                assert old[i] == body
                out.append(body)
                i += 1
            elif tag == "-":
                assert old[i] == body
                i += 1
            elif tag == "+":
                out.append(body)
            k += 1
    out.extend(old[i:])
    return "".join(out)


def test_fixing_twice_changes_nothing_the_second_time(project):
    run(["fix", "."], project)
    once = {p.name: p.read_bytes() for p in project.iterdir()}
    r = run(["fix", "."], project)
    assert {p.name: p.read_bytes() for p in project.iterdir()} == once
    assert "fixed" not in r.out


def test_fixed_findings_are_gone_on_recheck(project):
    before = codes_of(run(["check", "train.py"], project).out)
    assert sorted(before) == ["AMP101", "AMP103", "AMP103", "AMP501"]
    run(["fix", "train.py"], project)
    assert codes_of(run(["check", "train.py"], project).out) == ["AMP103"]


def test_select_limits_what_is_fixed(project):
    run(["fix", "--select", "AMP501", "train.py"], project)
    text = (project / "train.py").read_text()
    assert 'GradScaler("cuda")' in text and "eps=" not in text and "-1e9)  # keep" in text


def test_noqa_suppressed_findings_are_not_fixed(tmp_path):
    src = "import torch\nwith torch.cuda.amp.autocast():  # noqa: AMP501\n    pass\nwith torch.cuda.amp.autocast():\n    pass\n"
    root = write_project(tmp_path / "p", {"a.py": src})
    run(["fix", "a.py"], root)
    assert (root / "a.py").read_text() == (
        "import torch\nwith torch.cuda.amp.autocast():  # noqa: AMP501\n    pass\n"
        "with torch.amp.autocast(\"cuda\"):\n    pass\n")


def test_safe_eps_comes_from_the_configuration(tmp_path):
    root = write_project(tmp_path / "p", {
        "pyproject.toml": "[project]\nname = 'p'\n[tool.amplint]\nsafe-eps = 1e-3\n",
        "train.py": TRAIN,
    }, marker=None)
    run(["fix", "train.py"], root)
    assert "eps=0.001)" in (root / "train.py").read_text()


def test_project_regime_is_read_from_files_that_are_not_fixed(tmp_path):
    # The optimizer file has no precision evidence of its own; model.half() is in another file,
    # which is read for the regime but, not being named, never written.
    other = "import torch\nmodel = Net().cuda().half()\nloss = model(x).sum()\nloss.backward()\n" \
            "with torch.cuda.amp.autocast():\n    pass\n"
    root = write_project(tmp_path / "p", {"opt.py": "import torch\nopt = torch.optim.Adam(params)\n",
                                          "model.py": other})
    mtime = (root / "model.py").stat().st_mtime_ns
    run(["fix", "opt.py"], root)
    assert (root / "opt.py").read_text() == "import torch\nopt = torch.optim.Adam(params, eps=1e-4)\n"
    assert (root / "model.py").read_text() == other and (root / "model.py").stat().st_mtime_ns == mtime


def test_nothing_outside_the_given_paths_is_touched(tmp_path):
    hazard = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    root = write_project(tmp_path / "p", {"src/a.py": hazard, "src/b.py": hazard, "scripts/c.py": hazard})
    snapshot = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}
    r = run(["fix", "src/a.py", "scripts"], root)
    assert r.rc == 0, r.out + r.err
    after = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}
    assert set(after) == set(snapshot)  # no file created (no temporary file left behind)
    changed = {p.relative_to(root).as_posix() for p in after if after[p] != snapshot[p]}
    assert changed == {"src/a.py", "scripts/c.py"}


def test_a_file_that_does_not_parse_is_reported_and_left_alone(tmp_path):
    broken = "def f(:\n    torch.cuda.amp.autocast()\n"
    root = write_project(tmp_path / "p", {"bad.py": broken, "good.py": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"})
    r = run(["fix", "."], root)
    assert (root / "bad.py").read_text() == broken
    assert "torch.amp.autocast" in (root / "good.py").read_text()
    assert "E999" in codes_of(r.out) and r.rc == 1


# ---- writing ---------------------------------------------------------------------------------------
HAZARD = "import torch\n\nwith torch.cuda.amp.autocast():  # é\n    pass\n"


@pytest.mark.parametrize("mode", [0o644, 0o600, 0o755, 0o640])
def test_file_mode_is_kept(tmp_path, mode):
    root = write_project(tmp_path / "p", {"a.py": HAZARD})
    os.chmod(root / "a.py", mode)
    run(["fix", "a.py"], root)
    assert "torch.amp.autocast" in (root / "a.py").read_text(encoding="utf-8")
    assert stat.S_IMODE((root / "a.py").stat().st_mode) == mode


def test_latin1_file_keeps_its_encoding(tmp_path):
    src = "# -*- coding: latin-1 -*-\nimport torch\n\nwith torch.cuda.amp.autocast():  # café\n    pass\n".encode("latin-1")
    root = write_project(tmp_path / "p", {"a.py": src})
    r = run(["fix", "a.py"], root)
    assert r.rc == 0, r.out + r.err
    data = (root / "a.py").read_bytes()
    assert data == "# -*- coding: latin-1 -*-\nimport torch\n\nwith torch.amp.autocast(\"cuda\"):  # café\n    pass\n".encode("latin-1")


def test_bom_and_crlf_are_kept(tmp_path):
    src = ("\ufeff" + "import torch as th\r\nfrom torch.cuda.amp import GradScaler\r\n\r\n"
           "scaler = GradScaler()\r\nwith th.autocast('cuda'):\r\n    x = q @ k\r\n    s = x.masked_fill(m, -1e9)\r\n")
    root = write_project(tmp_path / "p", {"a.py": src.encode("utf-8")})
    run(["fix", "a.py"], root)
    data = (root / "a.py").read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data.count(b"\r\n") == data.count(b"\n") == 7
    text = data.decode("utf-8-sig")
    assert 'from torch.amp import GradScaler\r\n' in text and 'GradScaler("cuda")' in text
    assert "th.finfo(x.dtype).min" in text


def test_crlf_kept_for_inserted_lines(tmp_path, fake_rule):
    def check(ctx):
        for call in _calls(ctx, "clip"):
            if not _calls(ctx, "unscale"):
                stmt = statement_anchor(ctx, call)
                yield Violation(call, "clip", fix=Fix("unscale first", insert_before=[(stmt, [cst.parse_statement("unscale()")])],
                                                       imports=["import math"]))
    fake_rule("AMP901", check)
    root = write_project(tmp_path / "p", {"a.py": b"def f():\r\n    clip()\r\n"})
    run(["fix", "--select", "AMP901", "a.py"], root)
    assert (root / "a.py").read_bytes() == b"import math\r\n\r\ndef f():\r\n    unscale()\r\n    clip()\r\n"


def test_a_file_changed_on_disk_meanwhile_is_not_overwritten(project, monkeypatch):
    real = fixes_module.fix_in_memory

    def fix_then_someone_edits(*a, **kw):
        result = real(*a, **kw)
        (project / "train.py").write_text(TRAIN + "# edited meanwhile\n")
        return result

    monkeypatch.setattr(fixes_module, "fix_in_memory", fix_then_someone_edits)
    r = run(["fix", "train.py"], project)
    assert (project / "train.py").read_text() == TRAIN + "# edited meanwhile\n"
    assert "changed on disk while amplint was fixing it; not overwritten" in r.err
    assert r.rc == 2
    assert not [p for p in project.iterdir() if p.name.startswith(".train.py.")]


def test_same_content_but_touched_is_not_overwritten_either(project, monkeypatch):
    real = fixes_module.fix_in_memory

    def fix_then_touch(*a, **kw):
        result = real(*a, **kw)
        st = (project / "train.py").stat()
        os.utime(project / "train.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
        return result

    monkeypatch.setattr(fixes_module, "fix_in_memory", fix_then_touch)
    r = run(["fix", "train.py"], project)
    assert (project / "train.py").read_text() == TRAIN and r.rc == 2


def _two_dirs(tmp_path):
    hazard = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
    return write_project(tmp_path / "p", {"locked/a.py": hazard, "open/b.py": hazard})


def test_an_unwritable_file_is_reported_and_the_others_are_still_fixed(tmp_path, monkeypatch):
    root = _two_dirs(tmp_path)
    real = fixes_module.tempfile.mkstemp

    def mkstemp(*a, dir=None, **kw):
        if os.path.basename(str(dir)) == "locked":
            raise PermissionError(13, "Permission denied")
        return real(*a, dir=dir, **kw)

    monkeypatch.setattr(fixes_module.tempfile, "mkstemp", mkstemp)
    r = run(["fix", "."], root)
    assert r.rc == 2
    assert "locked/a.py: cannot write the fixed file: Permission denied" in r.err
    assert "torch.cuda.amp.autocast" in (root / "locked/a.py").read_text()
    assert 'torch.amp.autocast("cuda")' in (root / "open/b.py").read_text()
    assert codes_of(r.out) == ["AMP501"]  # what remains on disk is reported
    assert "Found 2 errors (1 fixed, 1 remaining)." in r.out


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only directories")
def test_a_read_only_directory_is_reported_and_the_others_are_still_fixed(tmp_path):
    root = _two_dirs(tmp_path)
    os.chmod(root / "locked", 0o555)
    try:
        r = run(["fix", "."], root)
    finally:
        os.chmod(root / "locked", 0o755)
    assert r.rc == 2 and "locked/a.py: cannot write the fixed file" in r.err
    assert 'torch.amp.autocast("cuda")' in (root / "open/b.py").read_text()


def test_a_failed_replace_leaves_no_temporary_file(tmp_path, monkeypatch):
    root = write_project(tmp_path / "p", {"a.py": HAZARD})

    def replace(src, dst):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(fixes_module.os, "replace", replace)
    r = run(["fix", "a.py"], root)
    assert r.rc == 2 and "Read-only file system" in r.err
    assert sorted(os.listdir(root)) == ["a.py", "pyproject.toml"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
def test_a_symlink_stays_a_symlink(tmp_path):
    root = write_project(tmp_path / "p", {"real/a.py": HAZARD})
    os.symlink(root / "real/a.py", root / "link.py")
    run(["fix", "link.py"], root)
    assert (root / "link.py").is_symlink()
    assert "torch.amp.autocast" in (root / "real/a.py").read_text(encoding="utf-8")


# ---- the machinery, with test-only rules ---------------------------------------------------------
@pytest.fixture
def fake_rule(monkeypatch):
    """Register a rule for one test: ``fake_rule(code, check, fix_safety="safe")``."""
    rules_package.all_rules()

    def install(code, check, fix_safety="safe"):
        cls = type(f"Fake{code}", (Rule,), {
            "code": code, "name": f"fake-{code.lower()}", "summary": "test rule", "fix_safety": fix_safety,
            "check": lambda self, ctx: check(ctx),
        })
        monkeypatch.setitem(rules_package._REGISTRY, code, cls())

    return install


def _fix_text(tmp_path, source, select="AMP9", unsafe=False, **files):
    root = write_project(tmp_path / "p", {"a.py": textwrap.dedent(source), **files})
    r = run(["fix", "--select", select, *(["--unsafe-fixes"] if unsafe else []), "a.py"], root)
    return (root / "a.py").read_text(), r


def _calls(ctx, name):
    return [c for c in ctx.nodes(cst.Call) if ctx.code(c.func) == name]


def _insert_around(ctx, which):
    for call in _calls(ctx, "clip"):
        if not any(ctx.code(c.func) == "unscale" for c in ctx.nodes(cst.Call)):
            stmt = statement_anchor(ctx, call)
            kw = {f"insert_{which}": [(stmt, [cst.parse_statement("unscale()")])]}
            yield Violation(call, "clip without unscale", fix=Fix("unscale", **kw))


@pytest.mark.parametrize("source, expected", [
    ("clip()\n", "unscale()\nclip()\n"),
    ("def f():\n    x = 1\n\n    # clip them\n    clip()\n",
     "def f():\n    x = 1\n\n    unscale()\n    # clip them\n    clip()\n"),
    ("class A:\n    def f(self):\n        with ctx:\n            clip()  # trailing\n",
     "class A:\n    def f(self):\n        with ctx:\n            unscale()\n            clip()  # trailing\n"),
    ("if ok: clip()\n", "if ok: unscale(); clip()\n"),
    ("a(); clip(); b()\n", "a(); unscale(); clip(); b()\n"),
    ("if a:\n    pass\nelif clip():\n    pass\n", "unscale()\nif a:\n    pass\nelif clip():\n    pass\n"),
    ("for x in y:\n    \tclip()\n", "for x in y:\n    \tunscale()\n    \tclip()\n"),
])
def test_insert_before(tmp_path, fake_rule, source, expected):
    fake_rule("AMP901", lambda ctx: _insert_around(ctx, "before"))
    text, r = _fix_text(tmp_path, source)
    assert text == expected, r.err
    assert r.rc == 0


@pytest.mark.parametrize("source, expected", [
    ("clip()\nnext()\n", "clip()\nunscale()\nnext()\n"),
    ("def f():\n    clip()\n\n\ndef g():\n    pass\n", "def f():\n    clip()\n    unscale()\n\n\ndef g():\n    pass\n"),
    ("while True: clip()\n", "while True: clip(); unscale()\n"),
])
def test_insert_after(tmp_path, fake_rule, source, expected):
    fake_rule("AMP901", lambda ctx: _insert_around(ctx, "after"))
    text, _ = _fix_text(tmp_path, source)
    assert text == expected


def test_a_small_statement_alone_on_its_line_gets_lines_of_its_own(tmp_path, fake_rule):
    def check(ctx):
        for call in _calls(ctx, "clip"):
            if not _calls(ctx, "unscale"):
                small = ctx.parent(call)  # the Expr statement, not its line
                yield Violation(call, "x", fix=Fix("u", insert_before=[(small, [cst.parse_statement("unscale()")])]))

    fake_rule("AMP901", check)
    text, _ = _fix_text(tmp_path, "def f():\n    clip()\n")
    assert text == "def f():\n    unscale()\n    clip()\n"


def test_the_same_statement_asked_twice_is_inserted_once(tmp_path, fake_rule):
    def check(ctx):
        for call in _calls(ctx, "clip"):
            stmt = statement_anchor(ctx, call)
            for _ in range(2):
                yield Violation(call.func, "x", fix=Fix("u", insert_before=[(stmt, [cst.parse_statement("unscale()")])]))

    fake_rule("AMP901", lambda ctx: [] if _calls(ctx, "unscale") else check(ctx))
    text, r = _fix_text(tmp_path, "clip()\n")
    assert text == "unscale()\nclip()\n"


def test_imports_are_added_once_and_after_the_docstring(tmp_path, fake_rule):
    def check(ctx):
        for n in ctx.nodes(cst.Name):
            if n.value == "BIG":
                yield Violation(n, "big", fix=Fix("math", replacements=[(n, cst.parse_expression("math.inf"))],
                                                  imports=["import math"]))

    fake_rule("AMP901", check)
    text, _ = _fix_text(tmp_path, '"""Doc."""\nfrom __future__ import annotations\n\nx = BIG\ny = BIG\n')
    assert text == '"""Doc."""\nfrom __future__ import annotations\nimport math\n\nx = math.inf\ny = math.inf\n'


def test_an_import_already_there_is_not_added(tmp_path, fake_rule):
    fake_rule("AMP901", lambda ctx: (Violation(n, "big", fix=Fix("m", replacements=[(n, cst.parse_expression("math.inf"))],
                                                                  imports=["import math"]))
                                     for n in ctx.nodes(cst.Name) if n.value == "BIG"))
    text, _ = _fix_text(tmp_path, "import math\nx = BIG\n")
    assert text == "import math\nx = math.inf\n"


def test_overlapping_fixes_are_applied_over_several_passes(tmp_path, fake_rule):
    # AMP901 rewrites f(...) -> F(...), AMP902 rewrites g(...) -> G(...): in f(g(1)) the edits
    # overlap, so one waits for the next pass, on the re-parsed file.
    def renamer(old, new):
        def check(ctx):
            for call in _calls(ctx, old):
                yield Violation(call, old, fix=Fix(new, replacements=[(call, call.with_changes(func=cst.Name(new)))]))
        return check

    fake_rule("AMP901", renamer("f", "F"))
    fake_rule("AMP902", renamer("g", "G"))
    text, r = _fix_text(tmp_path, "x = f(g(1))\ny = g(f(2))\nz = f(3) + g(4)\n")
    assert text == "x = F(G(1))\ny = G(F(2))\nz = F(3) + G(4)\n"
    assert "(6 fixed, 0 remaining)" in r.out and r.rc == 0


def test_a_replacement_function_composes_with_edits_inside(tmp_path, fake_rule):
    def check(ctx):
        calls = _calls(ctx, "f")
        if calls:
            fix = Fix("both", replacements=[(c, lambda upd: upd.with_changes(func=cst.Name("F"))) for c in calls])
            for c in calls:
                yield Violation(c, "f", fix=fix)

    fake_rule("AMP901", check)
    text, r = _fix_text(tmp_path, "x = f(f(1), f(2))\n")
    assert text == "x = F(F(1), F(2))\n"
    assert "(3 fixed, 0 remaining)" in r.out


def test_unsafe_fixes_need_the_option(tmp_path, fake_rule):
    def check(ctx):
        for n in ctx.nodes(cst.Integer):
            if n.value == "1":
                yield Violation(n, "one", fix=Fix("two", Applicability.UNSAFE, replacements=[(n, cst.Integer("2"))]))

    fake_rule("AMP901", check, fix_safety="unsafe")
    text, r = _fix_text(tmp_path, "x = 1\n")
    assert text == "x = 1\n"
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in r.out
    assert "(unsafe: needs --unsafe-fixes)" in r.out
    r = run(["check", "--select", "AMP9", "a.py"], tmp_path / "p")
    assert "[*]" not in r.out  # `amplint fix` alone would not fix it
    assert "1 hidden fix can be enabled with the `--unsafe-fixes` option." in r.out
    r = run(["check", "--select", "AMP9", "--unsafe-fixes", "a.py"], tmp_path / "p")
    assert "[*] 1 fixable" in r.out and "hidden" not in r.out
    text, r = _fix_text(tmp_path, "x = 1\n", unsafe=True)
    assert text == "x = 2\n" and r.rc == 0


def test_a_fix_that_never_settles_is_reported(tmp_path, fake_rule):
    def check(ctx):  # every x = N is "fixed" to x = N + 1, forever
        for n in ctx.nodes(cst.Integer):
            yield Violation(n, "n", fix=Fix("inc", replacements=[(n, cst.Integer(str(int(n.value) + 1)))]))

    fake_rule("AMP901", check)
    text, r = _fix_text(tmp_path, "x = 1\n")
    assert f"fixes did not converge after {fixes_module.MAX_ITERATIONS} passes" in r.err
    assert r.rc == 2
    assert text == f"x = {1 + fixes_module.MAX_ITERATIONS}\n"  # the last result, which parses


def test_a_fix_that_breaks_the_code_is_not_applied(tmp_path, fake_rule):
    def check(ctx):  # x = 1 -> 1 = 1: libcst prints it, Python rejects it
        for a in ctx.nodes(cst.AssignTarget):
            yield Violation(a, "t", fix=Fix("break", replacements=[(a.target, cst.Integer("1"))]))

    fake_rule("AMP901", check)
    text, r = _fix_text(tmp_path, "x = 1\n")
    assert text == "x = 1\n"
    assert "produced code that does not parse" in r.err and r.rc == 2


def test_a_fix_that_libcst_cannot_render_is_reported(tmp_path, fake_rule):
    def check(ctx):  # a statement where an expression belongs
        for n in ctx.nodes(cst.Integer):
            yield Violation(n, "n", fix=Fix("bad", replacements=[(n, cst.parse_statement("pass"))]))

    fake_rule("AMP901", check)
    text, r = _fix_text(tmp_path, "x = 1\n")
    assert text == "x = 1\n" and r.rc == 2
    assert "could not be applied" in r.err or "does not parse" in r.err


def test_a_rule_crash_while_fixing_is_reported_and_other_files_fixed(tmp_path, fake_rule):
    def check(ctx):
        if "boom" in ctx.code(ctx.module):
            raise RuntimeError("boom")
        return []

    fake_rule("AMP901", check)
    root = write_project(tmp_path / "p", {"a.py": "boom = 1\n", "b.py": "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"})
    r = run(["fix", "."], root)
    assert r.rc == 2 and "internal error in rule AMP901" in r.err
    assert "torch.amp.autocast" in (root / "b.py").read_text()


def test_fix_paths_api(tmp_path):
    root = write_project(tmp_path / "p", {"a.py": HAZARD})
    run_ = fix_paths([root / "a.py"], Settings(), write=False)
    assert run_.fixed == 1 and run_.errors == []
    assert "torch.cuda.amp" in (root / "a.py").read_text(encoding="utf-8")  # write=False
    assert b'torch.amp.autocast("cuda")' in run_.changed[0].source


def test_pre_commit_fix_hook():
    yaml = pytest.importorskip("yaml")
    from cliutil import ROOT
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    hook = hooks["amplint-fix"]
    assert hook["entry"].split() == ["amplint", "fix", "--force-exclude"]
    assert hook["language"] == "python" and "python" in hook["types_or"]
    assert hook.get("require_serial") is True  # one process: the project regime is inferred once
    # pre-commit passes the staged files as arguments, which `amplint fix` takes
    assert run(["fix", "--help"], ROOT).out.count("paths") >= 1
