"""A launcher script runs the program of the name it gives that is nearest to it (triage set 17, T17-6): in
Pretrained-Language-Model, ``CAME/scripts/run_glue.sh`` (``python run_glue.py --fp16``) runs CAME's own
``run_glue.py`` in the directory above it, not DynaBERT's ``run_glue.py`` (which has no float16 option and was
judged fp16-mixed from that script). A file of that name in the script's directory or any directory above it
is what it runs; with none there, the files of that name sharing most of the script's directories are.
Near miss: a script whose directories no candidate shares more than another's leaves every one of them run by it."""
import textwrap

from amplint.project import Project
from cliutil import write_project

PLAIN = """
import torch


def train(model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


if __name__ == "__main__":
    train(torch.nn.Linear(8, 2), [])
"""


def project(tmp_path, files):
    return Project(write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()}))


def test_a_sub_projects_script_runs_its_own_program_above_it(tmp_path):
    p = project(tmp_path, {"DynaBERT/run_glue.py": PLAIN, "CAME/run_glue.py": PLAIN,
                           "CAME/scripts/run_glue.sh": "cd ..\npython run_glue.py --fp16\n"})
    assert p.regime_for(p.root / "CAME/run_glue.py").mode == "fp16-mixed"
    assert p.regime_for(p.root / "DynaBERT/run_glue.py").mode == "fp32"


def test_with_no_program_above_the_nearest_one_by_directory(tmp_path):
    p = project(tmp_path, {"A/train.py": PLAIN, "B/src/train.py": PLAIN,
                           "B/scripts/run.sh": "cd ../src\npython train.py --fp16\n"})
    assert p.regime_for(p.root / "B/src/train.py").mode == "fp16-mixed"
    assert p.regime_for(p.root / "A/train.py").mode == "fp32"


def test_near_miss_a_script_no_program_is_nearer_to_runs_any_of_them(tmp_path):
    p = project(tmp_path, {"a/train.py": PLAIN, "b/train.py": PLAIN, "scripts/run.sh": "python train.py --fp16\n"})
    assert p.regime_for(p.root / "a/train.py").mode == "fp16-mixed"
    assert p.regime_for(p.root / "b/train.py").mode == "fp16-mixed"
