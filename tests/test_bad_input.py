"""Bad input: files that do not parse or decode are findings (E999) and the others are still linted;
a missing path is a usage error; a crashing rule is reported with its file and rule and the run goes
on (exit 2 at the end); BOM / CRLF / coding cookies are linted correctly."""
import json
import re

import pytest

from amplint.rules import all_rules

from cliutil import run, write_project

HAZARD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"  # AMP501 at 2:10


def check(root, *argv):
    return run(["check", "--output-format", "concise", *argv], root)


def lines(r):
    return [line for line in r.out.splitlines() if re.match(r"\S+:\d+:\d+: ", line)]


@pytest.mark.parametrize("name, data, expected", [
    ("unclosed.py", b"x = (\n", "unclosed.py:1:5: E999 SyntaxError: '(' was never closed"),
    ("invalid.py", b"def f(:\n    pass\n", "invalid.py:1:7: E999 SyntaxError: invalid syntax"),
    ("indent.py", b"x = 1\n    y = 2\n", "indent.py:2:"),  # the column differs between Python versions
    ("py2.py", b"print 'hello'\n", "py2.py:1:1: E999 SyntaxError: Missing parentheses in call to 'print'"),
    ("latin1.py", b"# a comment\nname = 'caf\xe9'\n",
     "latin1.py:2:"),  # CPython's message names the codec and the byte
    ("cookie.py", b"# -*- coding: klingon -*-\nx = 1\n", "cookie.py:1:1: E999 SyntaxError: unknown encoding: klingon"),
    ("nul.py", b"x = 1\ny = 2\0\n", "nul.py:2:1: E999 SyntaxError: source code string cannot contain null bytes"),
])
def test_unparsable_files_are_findings_and_the_rest_is_linted(tmp_path, name, data, expected):
    root = write_project(tmp_path / "p", {name: data, "good.py": HAZARD})
    r = check(root)
    assert r.rc == 1, r.err
    found = lines(r)
    assert len(found) == 2, r.out
    broken = [line for line in found if line.startswith(name)]
    assert broken and broken[0].startswith(expected), broken
    assert " E999 " in broken[0]
    if name == "indent.py":
        assert broken[0].endswith(" E999 IndentationError: unexpected indent")
    assert "good.py:2:10: AMP501 " in r.out
    assert r.err == ""


def test_undecodable_bytes_name_the_codec_error(tmp_path):
    root = write_project(tmp_path / "p", {"latin1.py": b"# a comment\nname = 'caf\xe9'\n"})
    r = check(root)
    assert r.rc == 1
    assert re.match(r"latin1\.py:2:\d+: E999 SyntaxError: .*'utf-8' codec can't decode byte 0xe9", r.out), r.out


def test_a_syntax_error_alone_exits_1_and_is_not_deselectable(tmp_path):
    root = write_project(tmp_path / "p", {"bad.py": "def f(:\n"})
    r = check(root, "--select", "AMP501")
    assert r.rc == 1
    assert lines(r) == ["bad.py:1:7: E999 SyntaxError: invalid syntax"]
    r = run(["check", "--output-format", "json"], root)
    [item] = json.loads(r.out)
    assert (item["code"], item["name"], item["location"]) == ("E999", "syntax-error", {"row": 1, "column": 7})


def test_full_output_of_a_syntax_error_shows_the_line(tmp_path):
    root = write_project(tmp_path / "p", {"bad.py": "x = (\n"})
    r = run(["check"], root)
    assert "bad.py:1:5: E999 SyntaxError: '(' was never closed" in r.out
    assert "1 | x = (" in r.out


def test_missing_path_exits_2(tmp_path):
    root = write_project(tmp_path / "p", {"good.py": HAZARD})
    r = check(root, "good.py", "does/not/exist.py")
    assert r.rc == 2
    assert "does/not/exist.py" in r.err and "No such file" in r.err


def test_a_dangling_symlink_is_a_missing_path(tmp_path):
    root = write_project(tmp_path / "p", {"good.py": HAZARD})
    try:
        (root / "link.py").symlink_to(root / "gone.py")
    except OSError:  # pragma: no cover
        pytest.skip("symlinks unavailable")
    assert check(root, "link.py").rc == 2
    assert check(root).rc == 1  # found by discovery: not a file, skipped


def _boom(self, ctx):
    if ctx.path.endswith("crash.py"):
        raise ZeroDivisionError("simulated bug in a rule")
    return iter(())


def test_a_crashing_rule_is_reported_and_the_run_goes_on(tmp_path, monkeypatch):
    rules = all_rules()
    crashing = type(rules["AMP101"])
    monkeypatch.setattr(crashing, "check", _boom)
    root = write_project(tmp_path / "p", {"crash.py": HAZARD, "other.py": HAZARD})
    r = check(root)
    assert r.rc == 2
    # The other rules still ran on the crashing file, and every rule on the other file.
    assert lines(r) == ["crash.py:2:10: AMP501 " + lines(r)[0].split(" AMP501 ", 1)[1],
                        "other.py:2:10: AMP501 " + lines(r)[1].split(" AMP501 ", 1)[1]]
    assert re.search(r"crash\.py: internal error in rule AMP101: ZeroDivisionError: simulated bug in a rule", r.err)
    assert "other.py" not in r.err
    # --exit-zero does not hide an internal error
    assert check(root, "--exit-zero").rc == 2


def test_a_crash_while_building_the_context_is_reported(tmp_path, monkeypatch):
    import amplint.engine as engine

    real = engine.build_context

    def flaky(path, *a, **kw):
        if path.name == "crash.py":
            raise KeyError("simulated bug in the context")
        return real(path, *a, **kw)

    monkeypatch.setattr(engine, "build_context", flaky)
    root = write_project(tmp_path / "p", {"crash.py": HAZARD, "other.py": HAZARD})
    r = check(root)
    assert r.rc == 2
    assert [line.split(":")[0] for line in lines(r)] == ["other.py"]
    assert "crash.py: internal error" in r.err and "KeyError" in r.err


# ---- unusual but valid files ----------------------------------------------------------------------

ATTN = ("import torch\n"
        "def attend(q, k, mask):\n"
        '    with torch.autocast("cuda"):\n'
        "        scores = q @ k.transpose(-2, -1)\n"
        "        return scores.masked_fill(mask, -1e9)\n")


@pytest.mark.parametrize("name, data", [
    ("bom.py", b"\xef\xbb\xbf" + ATTN.encode()),
    ("crlf.py", ATTN.replace("\n", "\r\n").encode()),
    ("bom_crlf.py", b"\xef\xbb\xbf" + ATTN.replace("\n", "\r\n").encode()),
    ("cookie.py", ("# -*- coding: latin-1 -*-\n# Autor: Jos\xe9\n" + ATTN).encode("latin-1")),
    ("cr.py", ATTN.replace("\n", "\r").encode()),
])
def test_bom_crlf_and_coding_cookies(tmp_path, name, data):
    root = write_project(tmp_path / "p", {name: data})
    r = check(root)
    offset = 2 if name == "cookie.py" else 0
    assert len(lines(r)) == 1, r.out
    assert lines(r)[0].startswith(f"{name}:{5 + offset}:41: AMP103 "), r.out
    assert f"= evidence: {name}:{3 + offset}: " in run(["check"], root).out
    full = run(["check"], root)
    assert f"{5 + offset} |         return scores.masked_fill(mask, -1e9)" in full.out


def test_non_ascii_columns_count_characters(tmp_path):
    src = "import torch\nnoms = ['é', 'ü']; scaler = torch.cuda.amp.GradScaler()\n"
    root = write_project(tmp_path / "p", {"u.py": src, "l.py": ("# coding: latin-1\n" + src).encode("latin-1")})
    assert lines(check(root)) == [
        l for l in lines(check(root)) if re.match(r"(u\.py:2|l\.py:3):29: AMP501", l)
    ] and len(lines(check(root))) == 2


def test_empty_and_comment_only_files(tmp_path):
    root = write_project(tmp_path / "p", {"empty.py": "", "comments.py": "# nothing here\n", "ws.py": "\n\n   \n"})
    assert check(root).rc == 0


def test_deeply_nested_but_valid_file(tmp_path):
    deep = "x = " + "[" * 150 + "]" * 150 + "\n" + HAZARD
    root = write_project(tmp_path / "p", {"deep.py": deep})
    r = check(root)
    assert [l.split(": ")[1].split()[0] for l in lines(r)] == ["AMP501"], r.out


LFS_POINTER = ("version https://git-lfs.github.com/spec/v1\n"
               "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")


def test_git_lfs_pointers_are_skipped_with_a_warning(tmp_path):
    # a checkout that did not fetch LFS objects (anomalib's notebooks): not a syntax error, not an
    # unreadable notebook; the rest is linted and fix leaves the pointers alone
    root = write_project(tmp_path / "p", {"model.py": LFS_POINTER, "demo.ipynb": LFS_POINTER, "good.py": HAZARD})
    r = check(root)
    assert r.rc == 1 and all(line.startswith("good.py:") for line in lines(r))
    for name in ("model.py", "demo.ipynb"):
        assert f"{name}: a Git LFS pointer, not the file's content" in r.err
    run(["check", "--fix", "--unsafe-fixes"], root)
    assert (root / "model.py").read_text() == LFS_POINTER


def test_near_miss_a_file_quoting_the_lfs_header_later_is_linted(tmp_path):
    root = write_project(tmp_path / "p", {"doc.py": 'HEADER = "version https://git-lfs.github.com/spec/v1"\n' + HAZARD})
    r = check(root)
    assert "Git LFS pointer" not in r.err and [line.split(":")[0] for line in lines(r)] == ["doc.py"]
