"""Code no run loads (docs/precision.md, "Code no entry point reaches"): in a directory of models that register
their classes for the runs to build by name (FunASR's ``@tables.register("model_classes", "Paraformer")``), a
module that registers nothing and that nothing imports (a legacy model: FunASR's ``models/eend/e2e_diar_eend_ola.py``)
is built by no run, nor is what only it imports. Such code is library code, judged by the library policy, not by
the project's fp16 option (set 10, T10-7: 9 findings)."""
import textwrap

from amplint.project import Project

from cliutil import hazard_findings, write_project

TRAIN = """
import argparse
import torch
from pkg.register import tables
import pkg.models.para.model  # noqa: F401  (registers the model)

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="Paraformer")
    parser.add_argument("--use_fp16", action="store_true")
    args = parser.parse_args()
    model = tables.model_classes[args.model]().cuda()
    optim = torch.optim.Adam(model.parameters())
    scaler = torch.cuda.amp.GradScaler(enabled=args.use_fp16)
    for step in range(10):
        speech = torch.randn(4, 100, 80, device="cuda")
        with torch.autocast("cuda", dtype=torch.float16, enabled=args.use_fp16):
            loss = model(speech, speech)
        scaler.scale(loss).backward()
        scaler.step(optim)
        scaler.update()

if __name__ == "__main__":
    main()
"""

REGISTER = """
class Tables:
    model_classes = {}
    def register(self, kind, name):
        def wrap(cls):
            getattr(self, kind)[name] = cls
            return cls
        return wrap

tables = Tables()
"""

# an unclamped learnable logit scale: AMP401 under a float16 training, not a hazard the library policy reports
SCORER = """
import math
import torch
from torch import nn
class Scorer(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(80, 80)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))
    def forward(self, a, b):
        return (self.logit_scale.exp() * self.proj(a) @ self.proj(b).transpose(1, 2)).mean()
"""

PARAFORMER = """
import torch
from pkg.register import tables
from pkg.models.para.scorer import Scorer

@tables.register("model_classes", "Paraformer")
class Paraformer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scorer = Scorer()
    def forward(self, a, b):
        return self.scorer(a, b)
"""

EEND = """
import torch
from pkg.models.eend.scorer import Scorer

class DiarEEND(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scorer = Scorer()
    def forward(self, a, b):
        return self.scorer(a, b)
"""

FILES = {
    "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
    "train.py": TRAIN,
    "pkg/__init__.py": "",
    "pkg/register.py": REGISTER,
    "pkg/models/__init__.py": "",
    "pkg/models/para/__init__.py": "",
    "pkg/models/para/model.py": PARAFORMER,
    "pkg/models/para/scorer.py": SCORER,
    "pkg/models/eend/__init__.py": "",
    "pkg/models/eend/e2e_eend.py": EEND,
    "pkg/models/eend/scorer.py": SCORER,
}


def _project(tmp_path, files=None, **extra):
    files = {**(FILES if files is None else files), **extra}
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_an_unregistered_module_nothing_imports_beside_registered_models_is_run_by_nothing(tmp_path):
    root = _project(tmp_path)
    p = Project(root)
    for name in ("pkg/models/eend/e2e_eend.py", "pkg/models/eend/scorer.py"):
        regime = p.regime_for(root / name)
        assert regime.not_run and "no run loads it" in regime.scope, name
    found = hazard_findings(root)
    assert ("pkg/models/eend/scorer.py", "AMP401") not in found
    # near miss: the registered model and what it imports are built by the run (its fp16 option)
    assert p.regime_for(root / "pkg/models/para/scorer.py").mode == "fp16-mixed"
    assert ("pkg/models/para/scorer.py", "AMP401") in found


def test_a_module_nothing_imports_in_a_project_without_a_registry_keeps_the_projects_precision(tmp_path):
    # near miss (fairseq's --user-dir, importlib of a configured name): with no registry in sight, a module
    # nothing imports may be loaded at run time
    files = {k: v.replace('@tables.register("model_classes", "Paraformer")\n', "") for k, v in FILES.items()}
    files["train.py"] = files["train.py"].replace("tables.model_classes[args.model]()",
                                                  "__import__('pkg.models.para.model').Paraformer()")
    root = _project(tmp_path, files)
    p = Project(root)
    assert p.regime_for(root / "pkg/models/eend/scorer.py").mode == "fp16-mixed"


def test_a_module_a_configuration_names_is_loaded_by_its_run(tmp_path):
    # near miss: a Hydra-style `_target_` naming the unregistered model
    root = _project(tmp_path, **{"conf/eend.yaml": "model:\n  _target_: pkg.models.eend.e2e_eend.DiarEEND\n"})
    p = Project(root)
    assert not p.regime_for(root / "pkg/models/eend/scorer.py").library


def test_a_module_nothing_imports_beside_modules_a_run_loads_keeps_the_projects_precision(tmp_path):
    # near miss (fairseq's modules/kmeans_attention.py, which nothing of fairseq imports, beside the building
    # blocks its registered models import): a user's model may import it
    root = _project(tmp_path, **{"pkg/models/para/extra_scorer.py": SCORER})
    p = Project(root)
    assert p.regime_for(root / "pkg/models/para/extra_scorer.py").mode == "fp16-mixed"
    assert p.regime_for(root / "pkg/models/eend/scorer.py").not_run
