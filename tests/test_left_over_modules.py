"""Left-over copies (docs/precision.md, "Code no entry point reaches"): in a project whose code loads nothing by
name (no registry, importlib, ``__import__``, Hydra / LDM ``target`` string, ``globals()`` lookup), a module that
nothing imports, that is no program, package file or test, and whose classes all live on in modules of its
directory that the runs load runs in none of its trainings (set 10: LlamaGen's ``tokenizer_image/discriminator.py``,
replaced by ``discriminator_patchgan.py``, whose unused ``ActNorm`` divides by ``std + 1e-6``). It is not judged in
float16; a way to load modules by name anywhere in the project, or a class of its own, keeps it judged."""
import json
import textwrap

import pytest

from cliutil import run, write_project

TRAIN = """
import torch
from gan.loss import GANLoss

def main(loader):
    model = GANLoss().cuda()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        with torch.autocast("cuda", dtype=torch.float16):
            loss = model(x)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()

if __name__ == "__main__":
    main([])
"""

LOSS = """
import torch
from torch import nn

class ActNorm(nn.Module):  # the live copy of the class the old module also defines
    def __init__(self, n):
        super().__init__()
        self.conv = nn.Conv2d(n, n, 1)

    def forward(self, x):
        return self.conv(x)


class GANLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Conv2d(3, 3, 1)

    def forward(self, x):
        return self.net(x).mean()
"""

OLD = """
import torch
from torch import nn

class ActNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.conv = nn.Conv2d(n, n, 1)

    def forward(self, x):
        h = self.conv(x)
        std = h.std(dim=(0, 2, 3), keepdim=True)
        return h / (std + 1e-12)
"""


def _codes(tmp_path, extra=None):
    files = {"train.py": TRAIN, "gan/loss.py": LOSS, "gan/discriminator_old.py": OLD, **(extra or {})}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    return [(f["code"], f["filename"].replace("\\", "/").rsplit("/", 1)[-1]) for f in json.loads(r.out)]


def test_a_module_nothing_imports_or_loads_is_not_judged_in_float16(tmp_path):
    assert _codes(tmp_path) == []


@pytest.mark.parametrize("loader", [
    "import importlib\n\ndef load(name):\n    return importlib.import_module(name)\n",
    "def build(cfg):\n    return instantiate_from_config(cfg)\n",
])
def test_near_miss_a_project_that_loads_modules_by_name_keeps_it_judged(tmp_path, loader):
    assert ("AMP102", "discriminator_old.py") in _codes(tmp_path, {"gan/util.py": loader})


def test_near_miss_a_package_module_is_its_users_api(tmp_path):
    assert ("AMP102", "discriminator_old.py") in _codes(tmp_path, {"gan/__init__.py": ""})


def test_near_miss_a_script_doing_its_work_at_the_top_is_a_program(tmp_path):
    script = OLD + "\nfor x in []:\n    ActNorm(3)(x)\n"
    files = {"train.py": TRAIN, "gan/loss.py": LOSS, "gan/discriminator_old.py": script}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert "discriminator_old.py" in {f["filename"].replace("\\", "/").rsplit("/", 1)[-1] for f in json.loads(r.out)}


def test_near_miss_a_module_with_a_class_of_its_own_stays_judged(tmp_path):
    own = OLD.replace("class ActNorm(", "class ActNormV2(")
    files = {"train.py": TRAIN, "gan/loss.py": LOSS, "gan/discriminator_old.py": own}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--output-format", "json", "."], root)
    assert "discriminator_old.py" in {f["filename"].replace("\\", "/").rsplit("/", 1)[-1] for f in json.loads(r.out)}
