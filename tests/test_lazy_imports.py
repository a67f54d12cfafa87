"""Imports that do not run, and lazy packages (modelscope's ``LazyImportModule``, transformers'
``_LazyModule``): an import in the body of ``if TYPE_CHECKING:`` is for type checkers only, and a lazy
package ``__init__`` loads a submodule when a name of it is used (its ``_import_structure`` maps names
to submodules). What an entry point reaches follows the names it imports, not every submodule a lazy
``__init__`` lists for type checkers (modelscope: the MossFormer separation trainer's `autocast()` reached
every model of the monorepo through them, 25 findings of set 9)."""
import textwrap

from amplint.precision_facts import file_facts
from amplint.project import Project

from cliutil import hazard_findings, write_project

LAZY_INIT = """
from typing import TYPE_CHECKING

from zoo.utils import LazyImportModule

if TYPE_CHECKING:
    from .clip import Clip
    from .detect.yolo import Yolo
else:
    _import_structure = {
        'clip': ['Clip'],
        'detect.yolo': ['Yolo'],
    }
    import sys
    sys.modules[__name__] = LazyImportModule(__name__, globals()['__file__'], _import_structure)
"""

# a CLIP copy: an unclamped learnable logit scale (AMP401 under a float16 training, not a hazard the
# library policy reports)
CLIP = """
import math
import torch
from torch import nn
class Clip(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
    def forward(self, image, text):
        a = self.proj(image)
        b = self.proj(text)
        return self.logit_scale.exp() * a @ b.t()
"""

# the separation trainer: builds its model by name (a registry) and trains it under autocast
SEPARATION_TRAINER = """
import torch
from torch.cuda.amp import autocast
from zoo.models import Model
class SeparationTrainer:
    def __init__(self, name):
        self.model = Model.from_pretrained(name)
        self.optimizer = torch.optim.Adam(self.model.parameters())
        self.scaler = torch.cuda.amp.GradScaler()
    def fit_batch(self, batch):
        with autocast():
            loss = self.model(batch).mean()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
"""

# the framework's trainer, float32
TRAINER = """
import torch
from zoo.models import Model
class EpochBasedTrainer:
    def __init__(self, name):
        self.model = Model.from_pretrained(name)
        self.optimizer = torch.optim.AdamW(self.model.parameters())
    def train_step(self, batch):
        self.model(batch).mean().backward()
        self.optimizer.step()
"""

FILES = {
    "setup.py": "from setuptools import setup\nsetup(name='zoo')\n",
    "zoo/__init__.py": "",
    "zoo/utils.py": "import types\nclass LazyImportModule(types.ModuleType):\n    pass\n",
    "zoo/models/__init__.py": "from . import audio, vision\nfrom .base import Model\n",
    "zoo/models/base.py": "import torch\nclass Model(torch.nn.Module):\n    @classmethod\n"
                          "    def from_pretrained(cls, name):\n        return cls()\n",
    "zoo/models/audio/__init__.py": LAZY_INIT.replace(".clip import Clip", ".separation import SepNet")
                                             .replace("'clip': ['Clip']", "'separation': ['SepNet']"),
    "zoo/models/audio/separation.py": "import torch\nclass SepNet(torch.nn.Module):\n    pass\n",
    "zoo/models/audio/detect/__init__.py": "",
    "zoo/models/audio/detect/yolo.py": "import torch\nclass Yolo(torch.nn.Module):\n    pass\n",
    "zoo/models/vision/__init__.py": LAZY_INIT,
    "zoo/models/vision/clip.py": CLIP,
    "zoo/models/vision/detect/__init__.py": "",
    "zoo/models/vision/detect/yolo.py": "import torch\nclass Yolo(torch.nn.Module):\n    pass\n",
    "zoo/trainers/__init__.py": "",
    "zoo/trainers/separation_trainer.py": SEPARATION_TRAINER,
    "zoo/trainers/trainer.py": TRAINER,
}


def _project(tmp_path, **extra):
    files = {**FILES, **extra}
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def _reached(root):
    p = Project(root)
    return {p.display(ep.path).split("/p/", 1)[-1]: {p.relative(f) for f in ep.reach} for ep in p.entry_points()}


def test_type_checking_imports_do_not_run_and_lazy_names_are_recorded():
    facts = file_facts(textwrap.dedent(LAZY_INIT).encode(), "zoo/models/vision/__init__.py",
                       "zoo.models.vision")
    assert "zoo.models.vision.clip" not in facts["imports"]
    assert "zoo.models.vision.detect.yolo" not in facts["imports"]
    assert "zoo.utils.LazyImportModule" in facts["imports"]  # the import that runs
    assert facts["lazy"] == {"Clip": "zoo.models.vision.clip.Clip", "Yolo": "zoo.models.vision.detect.yolo.Yolo"}
    # an `_import_structure` alone (no TYPE_CHECKING block) says the same
    only = "_import_structure = {'clip': ['Clip']}\n"
    assert file_facts(only.encode(), "zoo/models/vision/__init__.py", "zoo.models.vision")["lazy"] == \
        {"Clip": "zoo.models.vision.clip.Clip"}
    # a module with no TYPE_CHECKING import records nothing
    assert "lazy" not in file_facts(b"from .clip import Clip\n", "zoo/models/vision/__init__.py", "zoo.models.vision")


def test_a_trainer_does_not_reach_the_models_a_lazy_package_lists_for_type_checkers(tmp_path):
    # modelscope: separation_trainer.py imports `Model` from modelscope.models, whose `from . import audio, cv, ...`
    # reach lazy __init__s; their TYPE_CHECKING imports made its autocast the precision of every CLIP copy
    root = _project(tmp_path)
    reach = _reached(root)["zoo/trainers/separation_trainer.py"]
    assert "zoo/models/base.py" in reach  # the module defining the name it imports
    assert not reach & {"zoo/models/vision/clip.py", "zoo/models/audio/separation.py",
                        "zoo/models/vision/detect/yolo.py"}
    assert ("zoo/models/vision/clip.py", "AMP401") not in hazard_findings(root)


def test_a_name_imported_from_a_lazy_package_reaches_its_defining_module(tmp_path):
    # near miss: a training script that really imports the CLIP model (through the lazy package) and trains it
    # under autocast keeps its finding
    train = """
        import torch
        from zoo.models.vision import Clip
        def main(loader):
            model = Clip()
            opt = torch.optim.AdamW(model.parameters())
            scaler = torch.cuda.amp.GradScaler()
            for image, text in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(image, text).sum()
                scaler.scale(loss).backward()
                scaler.step(opt)
                scaler.update()
    """
    root = _project(tmp_path, **{"train.py": train})
    reach = _reached(root)["train.py"]
    assert "zoo/models/vision/clip.py" in reach
    assert "zoo/models/vision/detect/yolo.py" not in reach  # only the name it uses
    assert ("zoo/models/vision/clip.py", "AMP401") in hazard_findings(root)


def test_a_name_re_exported_through_two_lazy_packages_reaches_its_module(tmp_path):
    # modelscope/__init__.py lists `from .trainers import EpochBasedTrainer` for type checkers, and
    # modelscope/trainers/__init__.py is lazy too
    top = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .models.vision import Clip\n"
    train = "import torch\nfrom zoo import Clip\nmodel = Clip()\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n" \
            "model(1, 2).sum().backward()\nopt.step()\n"
    reach = _reached(_project(tmp_path, **{"zoo/__init__.py": top, "train.py": train}))["train.py"]
    assert "zoo/models/vision/clip.py" in reach
    assert "zoo/models/vision/detect/yolo.py" not in reach


def test_a_type_checking_import_in_a_module_is_no_import(tmp_path):
    # a trainer's hook that names the model class for its annotations only
    hook = """
        from typing import TYPE_CHECKING
        import torch
        if TYPE_CHECKING:
            from zoo.models.vision.clip import Clip
        def step(model: "Clip", batch, opt):
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(batch).sum()
            loss.backward()
            opt.step()
    """
    reach = _reached(_project(tmp_path, **{"zoo/trainers/hook.py": hook}))
    assert not any("zoo/models/vision/clip.py" in r for r in reach.values())
