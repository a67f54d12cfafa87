"""The on-disk cache: never a source of truth. Findings are the same with and without it, cold and
warm, serial and parallel; unchanged files are not read again; a damaged or foreign cache is
ignored; concurrent runs leave a valid cache."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import amplint.project as project_module
from amplint.cache import CACHE_DIR_NAME

from cliutil import ROOT, run, subprocess_env, write_project
from test_parallel import many_files

PAST = 1_600_000_000  # a time long ago: files whose stat the cache may trust


@pytest.fixture(autouse=True)
def with_cache(monkeypatch):
    monkeypatch.delenv("AMPLINT_NO_CACHE", raising=False)
    monkeypatch.delenv("AMPLINT_CACHE_DIR", raising=False)


def age(root: Path) -> None:
    for p in root.rglob("*.py"):
        os.utime(p, (PAST, PAST))


def check(root: Path, *extra) -> str:
    r = run(["check", "--output-format", "json", *extra, "."], root)
    assert r.rc in (0, 1), r.err
    return r.out


def cache_files(root: Path):
    return sorted((root / CACHE_DIR_NAME).rglob("*.json"))


@pytest.fixture
def examples(tmp_path):
    root = tmp_path / "examples"
    shutil.copytree(ROOT / "examples", root)
    age(root)
    return root


@pytest.fixture
def small(tmp_path):
    # (mask.py is the half training's code: train.py imports it)
    root = write_project(tmp_path / "small", {"train.py": TRAIN + "import mask\n", "opt.py": OPT, "consts.py": "NEG = -2 ** 30\n",
                                               "mask.py": "from consts import NEG\nimport torch\n"
                                                          "def f(s, m):\n    return s.masked_fill(m, NEG)\n"})
    age(root)
    return root


def test_examples_same_with_and_without_cache_cold_warm_serial_parallel(examples):
    reference = check(examples, "--no-cache", "-j", "1")
    assert json.loads(reference)  # examples/ has findings
    assert not (examples / CACHE_DIR_NAME).exists()  # --no-cache writes nothing
    assert check(examples, "-j", "1") == reference  # cold
    assert (examples / CACHE_DIR_NAME / ".gitignore").read_text().strip().endswith("*")
    assert check(examples, "-j", "1") == reference  # warm
    assert check(examples, "-j", "2") == reference  # warm, parallel


def test_many_files_same_with_and_without_cache(tmp_path):
    root = many_files(tmp_path / "p")
    age(root)
    reference = check(root, "--no-cache", "-j", "1")
    assert check(root, "-j", "3") == reference
    assert check(root, "-j", "1") == reference
    assert check(root, "-j", "3") == reference


def count_summaries(monkeypatch):
    calls = []
    original = project_module.summarise

    def counting(source, path="", module=None, *rest):
        calls.append(module)
        return original(source, path, module, *rest)

    monkeypatch.setattr(project_module, "summarise", counting)
    return calls


TRAIN = "import torch\nmodel = Net().cuda().half()\nloss.backward()\n"
OPT = "import torch\nopt = torch.optim.AdamW(model.parameters(), eps=1e-8)\n"


def test_a_one_file_run_summarises_only_changed_files(tmp_path, monkeypatch):
    files = {f"pkg/m{i}.py": f"X{i} = {i}\n" for i in range(30)}
    root = write_project(tmp_path / "p", {**files, "pkg/train.py": TRAIN, "pkg/opt.py": OPT})
    age(root)
    calls = count_summaries(monkeypatch)
    first = run(["check", "pkg/opt.py"], root)
    assert "AMP101" in first.out and len(calls) == 32
    calls.clear()
    assert run(["check", "pkg/opt.py"], root).out == first.out
    assert calls == []  # nothing changed: no file of the project is summarised (nor read) again
    (root / "pkg/m3.py").write_text("X3 = 4\n")
    run(["check", "pkg/opt.py"], root)
    assert calls == ["pkg.m3"]


def test_an_edit_that_changes_no_summary_recomputes_no_project_fact(tmp_path, monkeypatch):
    """The entry points and regimes are cached by the files' summaries: after an edit inside the
    linted file that its summary does not see (a comment at its end), the file is linted again
    under the cached regime, and no other file's summary is read."""
    files = {f"pkg/m{i}.py": f"X{i} = {i}\n" for i in range(10)}
    root = write_project(tmp_path / "p", {**files, "pkg/train.py": TRAIN, "pkg/opt.py": OPT})
    age(root)
    first = run(["check", "pkg/opt.py"], root)
    assert "AMP101" in first.out
    from amplint.cache import ProjectCache
    read = []
    original_read = ProjectCache.summary
    monkeypatch.setattr(ProjectCache, "summary", lambda self, key: read.append(key) or original_read(self, key))
    assert run(["check", "pkg/opt.py"], root).out == first.out
    assert read == []  # nothing changed: the result and the precision line come from the index
    computed = []
    original = project_module.Project.entry_points
    monkeypatch.setattr(project_module.Project, "entry_points", lambda self: computed.append(1) or original(self))
    calls = count_summaries(monkeypatch)
    with (root / "pkg/opt.py").open("a") as fh:
        fh.write("# a comment\n")
    again = run(["check", "pkg/opt.py"], root)
    assert calls == ["pkg.opt"] and computed == []
    assert len(set(read)) <= 1  # at most the edited file's new key is looked up: no other summary is read
    assert again.out == first.out == run(["check", "--no-cache", "pkg/opt.py"], root).out


def test_an_edit_elsewhere_changes_the_result(tmp_path):
    root = write_project(tmp_path / "p", {"train.py": TRAIN, "opt.py": OPT})
    age(root)
    assert "AMP101" in run(["check", "opt.py"], root).out
    (root / "train.py").write_text("import torch\n")  # no fp16 evidence left: AdamW's eps is fine
    os.utime(root / "train.py", (PAST + 10, PAST + 10))
    assert run(["check", "opt.py"], root).out == run(["check", "--no-cache", "opt.py"], root).out
    assert "AMP101" not in run(["check", "opt.py"], root).out


@pytest.mark.parametrize("damage", [
    lambda p: p.write_bytes(b"\x00\xff garbage"),
    lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),  # truncated
    lambda p: p.write_text(json.dumps({"format": "something-else"})),  # foreign
    lambda p: p.write_text(json.dumps({**json.loads(p.read_text()),  # malformed entries
                                       "summaries": {k: {"signals": [[1, 2]]} for k in json.loads(p.read_text()).get("summaries", {})},
                                       "files": {k: [1, 2] for k in json.loads(p.read_text()).get("files", {})}})),
    lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "summaries": {}})),  # keys without entries
    lambda p: p.write_text(json.dumps({**json.loads(p.read_text()), "version": "0.0.0"})),  # another amplint
])
def test_a_damaged_cache_is_ignored(small, damage):
    examples = small
    reference = check(examples, "--no-cache")
    # -2 ** 30 imported from another module folds (one constant evaluator for every level)
    assert [f["filename"].endswith("mask.py") for f in json.loads(reference) if f["code"] == "AMP103"] == [True]
    check(examples)
    files = cache_files(examples)
    shards = [f for f in files if ".summaries-" in f.name]
    assert shards and len(shards) < len(files)  # the index, the summaries' shards (and the index's answers)
    for damaged in ([f for f in files if f not in shards], shards[:1], files):
        for cache_file in damaged:
            damage(cache_file)
        assert check(examples) == reference
        # the index is rewritten, valid (a damaged shard is rewritten when one of its summaries is
        # needed again; until then it is ignored)
        [index] = [f for f in cache_files(examples) if ".summaries-" not in f.name and ".answers" not in f.name]
        assert json.loads(index.read_text())["format"] == "amplint-cache"
        assert check(examples) == reference


def test_clean_and_cache_dir(tmp_path):
    root = write_project(tmp_path / "p", {"opt.py": OPT, "train.py": TRAIN})
    elsewhere = tmp_path / "cache"
    r = run(["check", "--cache-dir", str(elsewhere), "."], root)
    assert r.rc == 1
    assert not (root / CACHE_DIR_NAME).exists() and list(elsewhere.rglob("*.json"))
    run(["check", "."], root)
    assert (root / CACHE_DIR_NAME).is_dir()
    assert run(["clean", "."], root).rc == 0
    assert not (root / CACHE_DIR_NAME).exists()
    assert run(["clean", "--cache-dir", str(elsewhere)], root).rc == 0
    assert not elsewhere.exists()
    # clean removes only a folder that is an amplint cache
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "data.txt").write_text("mine")
    run(["clean", "--cache-dir", str(keep)], root)
    assert (keep / "data.txt").read_text() == "mine"


def test_concurrent_runs_leave_a_valid_cache(small):
    examples = small
    reference = check(examples, "--no-cache")
    env = {k: v for k, v in subprocess_env().items() if k != "AMPLINT_NO_CACHE"}
    cmd = [sys.executable, "-m", "amplint", "check", "--output-format", "json", "-j", "1", "."]
    procs = [subprocess.Popen(cmd, cwd=examples, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [o for o, _ in outs] == [reference, reference], [e for _, e in outs]
    for cache_file in cache_files(examples):
        assert json.loads(cache_file.read_text())["format"] == "amplint-cache"
    assert check(examples) == reference
    assert not [p for p in (examples / CACHE_DIR_NAME).rglob("*") if p.name.endswith(".tmp")]


def test_results_are_reused_only_while_what_they_read_is_the_same(tmp_path, monkeypatch):
    import amplint.runner as runner_module

    root = write_project(tmp_path / "p", {"train.py": TRAIN, "opt.py": OPT, "other.py": "X = 1\n"})
    age(root)
    linted = []
    original = runner_module.lint_file
    monkeypatch.setattr(runner_module, "lint_file", lambda path, *a, **k: linted.append(Path(path).name) or original(path, *a, **k))
    first = run(["check", "opt.py"], root).out
    assert "AMP101" in first and linted == ["opt.py"]
    linted.clear()
    assert run(["check", "opt.py"], root).out == first and linted == []  # nothing changed: reused
    (root / "other.py").write_text("X = 2\n")  # a change the result of opt.py did not read
    assert run(["check", "opt.py"], root).out == first and linted == []
    (root / "train.py").write_text("import torch\nloss.backward()\n")  # the regime opt.py read changed
    out = run(["check", "opt.py"], root).out
    assert linted == ["opt.py"] and "AMP101" not in out
    assert out == run(["check", "--no-cache", "opt.py"], root).out


PROBE_IMPORTS = """
import io, json, sys
from contextlib import redirect_stdout
from amplint.cli import main
with redirect_stdout(io.StringIO()) as out:
    rc = main(sys.argv[1:])
print(json.dumps({"rc": rc, "libcst": sorted(m for m in sys.modules if m == "libcst" or m.startswith("libcst.")),
                  "out": out.getvalue()}))
"""


def test_a_run_answered_from_the_cache_never_imports_libcst(tmp_path):
    """libcst (and the rules, which import it) are imported only when a file is linted: a second
    run with nothing changed reads every result from the cache in a fresh interpreter without it."""
    root = write_project(tmp_path / "p", {"train.py": "import torch\nx = torch.zeros(2).half()\ny = torch.log(x + 1e-8)\n"})
    age(root)
    env = subprocess_env()
    env.pop("AMPLINT_NO_CACHE", None)
    runs = []
    for _ in range(2):
        p = subprocess.run([sys.executable, "-c", PROBE_IMPORTS, "check", "--output-format", "concise", "."],
                           cwd=root, env=env, capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        runs.append(json.loads(p.stdout))
    assert runs[0]["libcst"] and runs[0]["rc"] == 1 and "AMP102" in runs[0]["out"]
    assert runs[1]["libcst"] == [] and runs[1]["out"] == runs[0]["out"]


def test_rule_codes_read_without_importing_the_rules_are_the_registry():
    from amplint.rules import all_rules, declared_rules

    assert declared_rules() == {code: rule.default_enabled for code, rule in all_rules().items()}


def test_the_cache_of_another_amplint_build_is_ignored(tmp_path, monkeypatch):
    """From a source checkout the cache is keyed by a digest of amplint's own files: after an edit
    to amplint, nothing cached by the old code is reused (no `amplint clean` needed)."""
    import amplint.cache as cache_module
    import amplint.runner as runner_module
    from amplint.cache import source_digest

    package = tmp_path / "pkg"
    (package / "rules").mkdir(parents=True)
    (package / "rules" / "r.py").write_text("X = 1\n")
    before = source_digest(package)
    assert source_digest(package) == before
    (package / "rules" / "r.py").write_text("X = 2\n")
    assert source_digest(package) != before

    root = write_project(tmp_path / "p", {"train.py": "import torch\nx = torch.zeros(2).half()\ny = torch.log(x + 1e-8)\n"})
    age(root)
    linted = []
    original = runner_module.lint_file
    monkeypatch.setattr(runner_module, "lint_file", lambda path, *a, **k: linted.append(Path(path).name) or original(path, *a, **k))
    first = check(root)
    check(root)
    assert linted == ["train.py"]  # the second run: from the cache
    monkeypatch.setattr(cache_module, "_BUILD", "0.0+edited")
    assert check(root) == first
    assert linted == ["train.py", "train.py"]


def test_a_result_that_looked_into_another_file_follows_its_edits(tmp_path):
    """A file's analysis may read another project file itself (FileContext.other_file: the clamping
    hook a helper registers, the autocast a helper opens); its cached result is reused only while
    that file is unchanged, although no recorded summary fact differs."""
    util = ("def enable_gradient_clipping(model, c):\n"
            "    for p in model.parameters():\n"
            "        p.register_hook(lambda grad: grad.clamp(-c, c))\n")
    trainer = ("import torch\nimport util\n\n\ndef train(model, loader, opt):\n"
               "    scaler = torch.amp.GradScaler('cuda')\n    util.enable_gradient_clipping(model, 1.0)\n"
               "    for x in loader:\n        with torch.autocast('cuda', dtype=torch.float16):\n"
               "            loss = model(x).mean()\n        scaler.scale(loss).backward()\n"
               "        scaler.step(opt)\n        scaler.update()\n")
    root = write_project(tmp_path / "p", {"util.py": util, "trainer.py": trainer})
    age(root)
    assert "AMP302" in run(["check", "trainer.py"], root).out
    (root / "util.py").write_text(util.replace("grad.clamp(-c, c)", "grad.mul(c)"))
    os.utime(root / "util.py", (PAST + 10, PAST + 10))
    assert run(["check", "trainer.py"], root).out == run(["check", "--no-cache", "trainer.py"], root).out
    assert "AMP302" not in run(["check", "trainer.py"], root).out
