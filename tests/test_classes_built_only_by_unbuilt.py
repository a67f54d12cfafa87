"""A loss built only by a class nothing builds (triage set 19, T19-5: Cutie's GUI vendors RITM, whose
``OracleMaskLoss.__init__`` builds ``SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)`` with its
``log(pred + 1e-12)``; nothing builds OracleMaskLoss, the click handler's input optimisation uses
``BRSMaskLoss``). AMP102 fired under the GUI's autocast because the loss's file is reached and its
class is built somewhere. Two premises: a class whose every reference lies inside never-built classes
is built nowhere too, and a package the project's packaging does not ship (Cutie's pyproject.toml:
hatch ``packages = ["cutie"]``, not ``gui``) is not its users' API. Near misses (AMP102 stays): the
packaging ships ``gui``; no packaging statement (a directory with ``__init__.py`` is taken as
published); the controller builds OracleMaskLoss; a file star-importing the losses builds the loss
by name."""
import pytest
from cliutil import hazard_findings, write_project

from amplint.context.packaging import declared_packages, ships

PYPROJECT = '''[project]
name = "core"
version = "1.0.0"
{tool}'''
HATCH_CORE = '[tool.hatch.build.targets.wheel]\npackages = ["core"]\n'
HATCH_BOTH = '[tool.hatch.build.targets.wheel]\npackages = ["core", "gui"]\n'

TRAIN = '''
import torch
from torch import nn


def main():
    model = nn.Conv2d(3, 1, 3, padding=1).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    scaler = torch.amp.GradScaler("cuda")
    for _ in range(10):
        x = torch.randn(2, 3, 32, 32).cuda()
        y = torch.rand(2, 1, 32, 32).cuda()
        with torch.autocast("cuda"):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
'''

CONTROLLER = '''
import numpy as np
from torch import autocast

from .brs import InputOptimizer
{imp}


class Controller:
    def __init__(self, net, cfg):
        self.amp = cfg["amp"]
        self.optimizer = InputOptimizer(net{loss})

    def click(self, image, pos_mask, neg_mask):
        with autocast("cuda", enabled=self.amp):
            return self.optimizer(image, np.zeros(3, dtype=np.float32), pos_mask, neg_mask)
'''

BRS = '''
import torch

from .brs_losses import BRSMaskLoss


class InputOptimizer:
    def __init__(self, net, brs_loss=BRSMaskLoss()):
        self.net = net
        self.brs_loss = brs_loss

    def __call__(self, image, x, pos_mask, neg_mask):
        opt = torch.from_numpy(x).float().cuda().requires_grad_(True)
        result = torch.sigmoid(self.net(image + opt.view(1, -1, 1, 1)))
        loss = self.brs_loss(result, pos_mask, neg_mask)
        loss.backward()
        return loss.item(), opt.grad.cpu().numpy()
'''

BRS_LOSSES = '''
import torch

from .losses import SigmoidBinaryCrossEntropyLoss


class BRSMaskLoss(torch.nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self._eps = eps

    def forward(self, result, pos_mask, neg_mask):
        pos = torch.sum(((1 - result) * pos_mask) ** 2) / (torch.sum(pos_mask) + self._eps)
        neg = torch.sum((result * neg_mask) ** 2) / (torch.sum(neg_mask) + self._eps)
        return pos + neg


class OracleMaskLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gt_mask = None
        self.loss = SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)

    def forward(self, result, pos_mask, neg_mask):
        return self.loss(result, self.gt_mask.to(result.device))
'''

LOSSES = '''
import torch
from torch import nn


class SigmoidBinaryCrossEntropyLoss(nn.Module):
    def __init__(self, from_sigmoid=False):
        super().__init__()
        self._from_sigmoid = from_sigmoid

    def forward(self, pred, label):
        if not self._from_sigmoid:
            return nn.functional.binary_cross_entropy_with_logits(pred, label)
        eps = 1e-12
        loss = -(torch.log(pred + eps) * label + torch.log(1.0 - pred + eps) * (1.0 - label))
        return loss.mean()
'''

STAR_USER = '''
from .exp_imports import *  # noqa: F401,F403


def build_loss():
    return SigmoidBinaryCrossEntropyLoss(from_sigmoid=True)  # noqa: F405
'''


def project(tmp_path, tool=HATCH_CORE, controller=("", ""), extra=None):
    imp, loss = controller
    files = {
        "pyproject.toml": PYPROJECT.replace("{tool}", tool),
        "config/gui_config.yaml": "amp: True\nweights: weights/net.pth\n",
        "core/__init__.py": "",
        "core/train.py": TRAIN,
        "train.py": "from core.train import main\n\nif __name__ == '__main__':\n    main()\n",
        "gui/__init__.py": "",
        "gui/controller.py": CONTROLLER.replace("{imp}", imp).replace("{loss}", loss),
        "gui/brs.py": BRS,
        "gui/brs_losses.py": BRS_LOSSES,
        "gui/losses.py": LOSSES,
        "gui/exp_imports.py": "from .losses import *  # noqa: F401,F403\n",
        **(extra or {}),
    }
    return hazard_findings(write_project(tmp_path / "p", files))


def test_a_loss_built_only_by_a_class_nothing_builds_runs_in_no_training(tmp_path):
    assert project(tmp_path) == []


KEPT = {
    "the packaging ships gui": dict(tool=HATCH_BOTH),
    "no packaging statement": dict(tool=""),
    "the controller builds OracleMaskLoss": dict(controller=("from .brs_losses import OracleMaskLoss",
                                                             ", brs_loss=OracleMaskLoss()")),
    "a star importer builds the loss by name": dict(extra={"gui/train_ritm.py": STAR_USER}),
}


@pytest.mark.parametrize("name", sorted(KEPT))
def test_near_miss_the_loss_may_run(tmp_path, name):
    assert ("gui/losses.py", "AMP102") in project(tmp_path, **KEPT[name]), name


@pytest.mark.parametrize("files, package, shipped", [
    ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/cutie"]\n'}, "gui.ritm", False),
    ({"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = ["src/cutie"]\n'}, "cutie.model", True),
    ({"pyproject.toml": '[tool.setuptools.packages.find]\ninclude = ["mylib*"]\n'}, "demo", False),
    ({"pyproject.toml": '[tool.setuptools.packages.find]\nexclude = ["tests*"]\n'}, "demo", True),
    ({"setup.py": "from setuptools import setup, find_packages\nsetup(packages=find_packages(exclude=['gui', 'gui.*']))\n"},
     "gui.ritm", False),
    ({"setup.py": "from setuptools import setup, find_packages\nsetup(packages=find_packages(exclude=['gui', 'gui.*']))\n"},
     "lib", True),
    ({"setup.py": "from setuptools import setup\nsetup(name='x', packages=['lib', 'lib.nn'])\n"}, "gui", False),
    # nothing read: every package is published
    ({"setup.py": "from setuptools import setup, find_packages\nsetup(packages=find_packages())\n"}, "gui", True),
    ({"setup.py": "from setuptools import setup\nsetup(packages=PACKAGES)\n"}, "gui", True),
    ({"pyproject.toml": '[project]\nname = "x"\n'}, "gui", True),
])
def test_what_the_packaging_ships(tmp_path, files, package, shipped):
    root = write_project(tmp_path / "r", files, marker=None)
    assert ships(declared_packages(root), package) is shipped


@pytest.mark.parametrize("files", [
    {"pyproject.toml": b"\x00\xff[project\n= = ="},
    {"pyproject.toml": '[tool.hatch.build.targets.wheel]\npackages = "cutie"\n'},
    {"pyproject.toml": '[tool.setuptools.packages]\nfind = [1]\n[tool.poetry]\npackages = [{include = 1}]\n'},
    {"setup.py": "setup(packages=find_packages(include=" + "[" * 3000 + "]" * 3000 + "))\n"},
    {"setup.py": b"\xff\xfe\x00setup(packages=['cutie'])"},
    {"setup.py": "from setuptools import setup\nsetup(packages=['cutie'])\n" + "# pad\n" * 60000},
])
def test_unreadable_packaging_publishes_every_package(tmp_path, files):
    # malformed, mistyped, deeply nested, undecodable or oversized packaging: nothing known, no error
    root = write_project(tmp_path / "r", files, marker=None)
    assert ships(declared_packages(root), "gui.ritm") is True
