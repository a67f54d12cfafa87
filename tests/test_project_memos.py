"""The project's memos: declared by name, one set per project object (an editor's buffer has its own),
the parsed trees among them left behind when the project is handed to worker processes."""
import pickle
from pathlib import Path

import pytest

from amplint.context.project_text import _lines
from amplint.engine import project_context
from amplint.overlay import OverlayProject
from amplint.project import Project


def _project(tmp_path: Path) -> Project:
    (tmp_path / "model.py").write_text("import torch\nMARKER_ONE = 1\n")
    (tmp_path / "train.py").write_text("from model import MARKER_ONE\n")
    return Project(tmp_path)


def test_an_undeclared_memo_is_refused(tmp_path):
    with pytest.raises(KeyError, match="undeclared project memo 'grep_cache'"):
        _project(tmp_path).memo("grep_cache")


def test_a_buffer_overlay_greps_its_own_text_not_the_bases_memo(tmp_path):
    project = _project(tmp_path)
    on_disk = _lines(project, r"MARKER_\w+")
    assert [(Path(p).name, n) for p, n, _ in on_disk] == [("model.py", 2), ("train.py", 1)]
    buffer = OverlayProject(project, tmp_path / "train.py", b"x = 0\nfrom model import MARKER_ONE as MARKER_TWO\n")
    in_buffer = _lines(buffer, r"MARKER_\w+")
    assert [(Path(p).name, n) for p, n, _ in in_buffer] == [("model.py", 2), ("train.py", 2)]
    # and the base's answer is still the disk's
    assert _lines(project, r"MARKER_\w+") == on_disk


def test_pickling_keeps_cheap_memos_and_drops_parsed_trees(tmp_path):
    project = _project(tmp_path)
    _lines(project, r"MARKER_\w+")
    assert project_context(project, tmp_path / "model.py") is not None
    assert project.memo("caller_contexts")
    copy = pickle.loads(pickle.dumps(project))
    assert copy.memo("caller_contexts") == {}
    assert copy.memo("grep_lines") == project.memo("grep_lines")


def test_the_library_loop_and_directory_memos_answer_as_the_questions_do(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "loop.py").write_text(
        "import torch\ndef fit(model, opt, data):\n    for x in data:\n        model(x).sum().backward()\n        opt.step()\n")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(
        "import torch\nif __name__ == '__main__':\n    m = torch.nn.Linear(2, 2)\n    opt = torch.optim.SGD(m.parameters(), 0.1)\n"
        "    m(torch.ones(2)).sum().backward()\n    opt.step()\n")
    project = Project(tmp_path)
    eps = project.entry_points()
    assert sorted(ep.path.name for ep in eps) == ["loop.py", "train.py"]
    loops = {ep.path.name: project._library_loop(ep) for ep in eps}
    assert loops == {"loop.py": True, "train.py": False}  # a package file no script runs; a script
    assert {ep.path.name: project._library_loop(ep) for ep in eps} == loops  # from the memo, the same
    assert set(project.memo("library_loops")) == {ep.path for ep in eps}
    for ep in eps:
        assert project._directories_above(ep.path) == set(ep.path.parents)
        assert project._directories_above(ep.path) is project._directories_above(ep.path)
