"""A recorded read of ``named_in_configs`` with its ``outside`` directory (a top package's own configs
naming its modules, T18-1) replays with that directory: the cached result of a file is reused only
while the answer is the same, and asked again the same way it is."""
from amplint.project import Project
from amplint.results import replay
from cliutil import write_project


def test_named_in_configs_outside_a_directory_replays_with_it(tmp_path):
    root = write_project(tmp_path / "p", {"pkg/__init__.py": "", "pkg/heads/head.py": "X = 1\n",
                                          "pkg/configs/infer.yaml": "model:\n  class: heads.head.Head\n"})
    project = Project(root)
    project.start_recording()
    inside = project.named_in_configs("heads.head")
    outside = project.named_in_configs("heads.head", root / "pkg")
    deps = project.stop_recording()
    assert (inside, outside) == (True, False)
    assert [d[1] for d in deps] == [["heads.head"], ["heads.head", str(root / "pkg")]]
    fresh = Project(root)
    assert [replay(fresh, d) for d in deps] == [d[2] for d in deps]
