"""Which files are linted: recursion, .py only, the skipped directories, .gitignore, exclude /
extend-exclude, explicit files, and the project root of a file."""
import os
from pathlib import Path

import pytest

from amplint.discovery import Discovery, project_root

from cliutil import chdir, run, write_project

HAZARD = "import torch\nscaler = torch.cuda.amp.GradScaler()\n"  # AMP501 wherever it is


def rel(paths, base):
    return [Path(os.path.abspath(p)).relative_to(base).as_posix() for p in paths]


def discovered(root, *given, **kw):
    with chdir(root):
        return [p.as_posix() for p in Discovery(**kw).files([Path(g) for g in (given or ["."])])]


@pytest.fixture
def tree(tmp_path):
    files = {
        "a.py": HAZARD,
        "pkg/__init__.py": "",
        "pkg/deep/deeper/b.py": HAZARD,
        "pkg/notes.txt": HAZARD,
        "pkg/stub.pyi": HAZARD,
        "pkg/script": HAZARD,
        ".git/hooks/pre.py": HAZARD,
        "myenv/pyvenv.cfg": "home = /usr/bin\n",
        "myenv/lib/site.py": HAZARD,
        ".venv/lib/x.py": HAZARD,
        "build/lib/c.py": HAZARD,
        "dist/d.py": HAZARD,
        "pkg/__pycache__/e.py": HAZARD,
        "demo.egg-info/f.py": HAZARD,
        ".tox/py/g.py": HAZARD,
        "node_modules/h.py": HAZARD,
    }
    return write_project(tmp_path / "proj", files)


def test_recursion_py_only_and_default_skips(tree):
    assert discovered(tree) == ["a.py", "pkg/__init__.py", "pkg/deep/deeper/b.py"]


def test_paths_stay_in_the_users_terms(tree):
    assert discovered(tree, "pkg") == ["pkg/__init__.py", "pkg/deep/deeper/b.py"]
    assert discovered(tree, "pkg/deep/../deep") == ["pkg/deep/../deep/deeper/b.py"]
    absolute = discovered(tree, str(tree / "pkg"))
    assert absolute == [(tree / "pkg/__init__.py").as_posix(), (tree / "pkg/deep/deeper/b.py").as_posix()]


def test_order_is_sorted_and_duplicates_are_dropped(tree):
    write_project(tree, {"z.py": "", "m.py": "", "B.py": ""}, marker=None)
    assert discovered(tree) == ["B.py", "a.py", "m.py", "pkg/__init__.py", "pkg/deep/deeper/b.py", "z.py"]
    assert discovered(tree, "a.py", ".", "a.py", "./a.py") == discovered(tree, "a.py", ".")
    assert discovered(tree, "a.py", ".")[0] == "a.py"


def test_virtualenv_is_recognised_by_pyvenv_cfg_whatever_its_name(tree):
    assert not any("myenv" in p for p in discovered(tree))
    os.remove(tree / "myenv/pyvenv.cfg")
    assert "myenv/lib/site.py" in discovered(tree)


def test_explicit_files_are_always_linted(tree):
    for f in ["myenv/lib/site.py", "build/lib/c.py", ".git/hooks/pre.py", "pkg/script"]:
        assert discovered(tree, f) == [f]
        r = run(["check", "--output-format", "concise", f], tree)
        assert r.rc == 1 and r.out.startswith(f + ":2:"), (f, r.out, r.err)


def test_gitignore(tmp_path):
    root = write_project(tmp_path / "g", {
        ".git/HEAD": "ref: refs/heads/main\n",
        ".gitignore": "data/\n*_generated.py\n/top_only.py\n!keep_generated.py\n",
        "data/x.py": HAZARD,
        "src/data/y.py": HAZARD,
        "src/model_generated.py": HAZARD,
        "src/keep_generated.py": HAZARD,
        "top_only.py": HAZARD,
        "src/top_only.py": HAZARD,
        "src/.gitignore": "scratch.py\n",
        "src/scratch.py": HAZARD,
        "scratch.py": HAZARD,
        "ok.py": HAZARD,
    }, marker=None)
    assert discovered(root) == ["ok.py", "scratch.py", "src/keep_generated.py", "src/top_only.py"]
    # The .gitignore of the project applies when only a sub-directory is given.
    assert discovered(root, "src") == ["src/keep_generated.py", "src/top_only.py"]
    # A file named explicitly is linted even when it is ignored.
    assert discovered(root, "data/x.py") == ["data/x.py"]


def test_gitignore_of_the_enclosing_repository_applies_to_a_nested_project(tmp_path):
    repo = write_project(tmp_path / "repo", {".git/HEAD": "", ".gitignore": "*.gen.py\nout/\n"}, marker=None)
    sub = write_project(repo / "examples", {"model.py": HAZARD, "m.gen.py": HAZARD, "out/o.py": HAZARD})
    assert project_root(sub / "model.py") == sub
    assert discovered(sub) == ["model.py"]
    assert discovered(repo, "examples") == ["examples/model.py"]


def test_exclude_and_extend_exclude(tree):
    assert discovered(tree, extend_exclude=["pkg/deep"]) == ["a.py", "pkg/__init__.py"]
    assert discovered(tree, extend_exclude=["*.py"]) == []
    assert discovered(tree, extend_exclude=["__init__.py"]) == ["a.py", "pkg/deep/deeper/b.py"]
    # ``exclude`` replaces the default list (ruff's semantics); virtualenvs are still recognised.
    with_build = discovered(tree, exclude=["pkg"])
    assert "build/lib/c.py" in with_build and "a.py" in with_build
    assert not any(p.startswith("pkg/") or "myenv" in p for p in with_build)
    assert discovered(tree, "pkg/deep/deeper/b.py", extend_exclude=["pkg"]) == ["pkg/deep/deeper/b.py"]


def test_symlinked_directories_are_not_followed(tmp_path):
    root = write_project(tmp_path / "s", {"a.py": HAZARD})
    try:
        os.symlink(root, root / "loop", target_is_directory=True)
    except OSError:  # pragma: no cover - no symlinks on this filesystem
        pytest.skip("symlinks unavailable")
    assert discovered(root) == ["a.py"]


# ---- project root ---------------------------------------------------------------------------------

@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.py", "setup.cfg", ".git"])
def test_project_root_markers(tmp_path, marker):
    root = tmp_path / "r"
    (root / "pkg/sub").mkdir(parents=True)
    if marker == ".git":
        (root / ".git").mkdir()
    else:
        (root / marker).write_text("")
    f = root / "pkg/sub/m.py"
    f.write_text("")
    assert project_root(f) == root
    assert project_root(root / "pkg") == root
    assert project_root(root) == root


def test_nearest_root_wins_and_no_marker_means_the_files_directory(tmp_path):
    write_project(tmp_path / "outer", {"inner/setup.cfg": "", "inner/m.py": ""})
    assert project_root(tmp_path / "outer/inner/m.py") == tmp_path / "outer/inner"
    lone = tmp_path / "lone" / "x.py"
    lone.parent.mkdir()
    lone.write_text("")
    # tmp_path has no marker above it on a normal system; the file's own directory is the root.
    if not any((d / m).exists() for d in lone.parents for m in ("pyproject.toml", "setup.py", "setup.cfg", ".git")):
        assert project_root(lone) == lone.parent


UNMARKED = {
    "pkg/__init__.py": "", "pkg/models/__init__.py": "",
    "pkg/models/pool.py": "import torch\n\ndef pool(x):\n    return torch.sqrt(torch.var(x, dim=-1) + 1e-10)\n",
    "pkg/bin/train.py": "import torch\nfrom pkg.models.pool import pool\n\ndef main(model, opt, loader):\n"
                        "    scaler = torch.amp.GradScaler('cuda')\n    for x in loader:\n"
                        "        with torch.autocast('cuda', dtype=torch.float16):\n"
                        "            loss = pool(model(x)).sum()\n"
                        "        scaler.scale(loss).backward()\n        scaler.step(opt)\n        scaler.update()\n",
}


def test_a_tree_no_marker_roots_is_one_project_at_the_directory_named(tmp_path):
    # a git archive / unpacked zip of a repository (bug set 10, B10-4): no .git, no pyproject.toml; the
    # trainer in pkg/bin and the model in pkg/models are one project, not a project per directory
    root = write_project(tmp_path / "tree", UNMARKED, marker=None)
    out = run(["check", "--select", "AMP102", "--output-format", "concise", str(root)], tmp_path).out
    assert "pool.py:4:" in out, out
    assert project_root(root / "pkg/models/pool.py") == root.resolve()
    # near miss: naming only the models' directory makes it the project: the trainer is out of sight
    out = run(["check", "--select", "AMP102", "--output-format", "concise", str(root / "pkg/models")], tmp_path).out
    assert "pool.py" not in out, out
    # and a marker inside the tree still roots its own project
    (root / "pkg" / "models" / "setup.py").write_text("")
    assert project_root(root / "pkg/models/pool.py") == (root / "pkg" / "models").resolve()
