"""A project class imported only as the fallback of a library's own (mmpose: `try: from mmcv.runner import
Fp16OptimizerHook` / `except ImportError: from mmpose.core import Fp16OptimizerHook`) runs only with a library that
lacks it: mmcv's hook runs, fp16 autocast and a GradScaler on torch >= 1.6, not the fallback's `model.half()`; the
fallback's own loop is no run of the project (docs/precision.md, "Evidence and its roles"; held-out bug B38: the
TCFormer utils were judged pure half, where their float32 products hid the AMP203 that fp16 autocast shows)."""
import textwrap

from cliutil import run, write_project

TRAIN_API = """
from mmcv.runner import EpochBasedRunner, build_optimizer
{imports}
def train_model(model, dataset, cfg):
    optimizer = build_optimizer(model, cfg.optimizer)
    runner = EpochBasedRunner(model, optimizer=optimizer, work_dir="work")
    fp16_cfg = cfg.get("fp16", None)
    if fp16_cfg is not None:
        optimizer_config = Fp16OptimizerHook(**cfg.optimizer_config, **fp16_cfg)
    else:
        optimizer_config = cfg.optimizer_config
    runner.register_training_hooks(cfg.get("lr_config"), optimizer_config)
    runner.run([dataset], [("train", 1)])
"""
TRY = """try:
    from mmcv.runner import Fp16OptimizerHook
except ImportError:
    from pkg.core.fp16_hooks import Fp16OptimizerHook"""
HOOKS = """
import copy
import torch
from mmcv.runner import OptimizerHook
class Fp16OptimizerHook(OptimizerHook):
    def __init__(self, loss_scale=512.0, **kwargs):
        super().__init__(**kwargs)
        self.loss_scale = loss_scale
    def before_run(self, runner):
        runner.optimizer.param_groups = copy.deepcopy(runner.optimizer.param_groups)
        wrap_fp16_model(runner.model)
    def after_train_iter(self, runner):
        runner.optimizer.zero_grad()
        (runner.outputs["loss"] * self.loss_scale).backward()
        runner.optimizer.step()
def wrap_fp16_model(model):
    model.half()
"""
UTILS = """
import torch
def merge_tokens(x, coor, value, n):
    value = value.detach().to(torch.float32)
    A = torch.sparse.FloatTensor(coor, value, torch.Size([n, n]))
    all_weight = A @ x.new_ones(n, 1).type(torch.float32) + 1e-6
    return value / all_weight[coor[0], 0]
"""
TOOL = """
import sys
from mmcv import Config
from pkg.apis.train import train_model
from pkg.models.builder import build_model
def main():
    cfg = Config.fromfile(sys.argv[1])
    train_model(build_model(cfg.model).cuda(), [], cfg)
if __name__ == "__main__":
    main()
"""


def _project(tmp_path, imports=TRY):
    files = {"pkg/__init__.py": "", "pkg/apis/__init__.py": "", "pkg/core/__init__.py": "", "pkg/models/__init__.py": "",
             "pkg/apis/train.py": TRAIN_API.replace("{imports}", imports), "pkg/core/fp16_hooks.py": HOOKS,
             "pkg/models/utils.py": UTILS, "pkg/models/builder.py": "def build_model(cfg):\n    return cfg\n",
             "tools/train.py": TOOL}
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_the_librarys_hook_runs_not_the_projects_fallback(tmp_path):
    from amplint.project import Project
    root = _project(tmp_path)
    project = Project(root)
    assert project.regime_for(root / "pkg/models/utils.py").mode == "fp16-mixed"
    (hook,) = [ep for ep in project.entry_points() if ep.path.name == "fp16_hooks.py"]
    assert project.vendored_hook(hook)
    shown = run(["check", "--no-cache", "--show-settings", "."], root).out
    assert "the fallback of a library's own hook" in shown


def test_near_miss_the_project_imports_its_own_hook_alone(tmp_path):
    from amplint.project import Project
    root = _project(tmp_path, imports="from pkg.core.fp16_hooks import Fp16OptimizerHook")
    assert Project(root).regime_for(root / "pkg/models/utils.py").mode == "fp16"
