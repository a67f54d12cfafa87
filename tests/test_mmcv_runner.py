"""mmcv 1.x trainings: `runner = build_runner(cfg.runner, ...); runner.register_training_hooks(...);
runner.run(data_loaders, cfg.workflow)` (BEVFormer's `custom_train_detector`, mmdet's `train_detector`) is a training
entry point, and an mmcv Python config's `fp16 = dict(loss_scale=512.)` (mmcv's Fp16OptimizerHook: the models'
`@auto_fp16` forwards under autocast and a GradScaler) is the precision of the runs given it: fp16 mixed precision,
one of the configs. Without an fp16 key the runs are fp32. (docs/precision.md; triage T11-10 / M13-3.)"""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN_API = """
from mmcv.runner import Fp16OptimizerHook, OptimizerHook, build_optimizer, build_runner


def custom_train_detector(model, data_loaders, cfg):
    optimizer = build_optimizer(model, cfg.optimizer)
    runner = build_runner(cfg.runner, default_args=dict(model=model, optimizer=optimizer, work_dir=cfg.work_dir))
    fp16_cfg = cfg.get("fp16", None)
    if fp16_cfg is not None:
        optimizer_config = Fp16OptimizerHook(**cfg.optimizer_config, **fp16_cfg)
    else:
        optimizer_config = OptimizerHook(**cfg.optimizer_config)
    runner.register_training_hooks(cfg.lr_config, optimizer_config)
    runner.run(data_loaders, cfg.workflow)
"""
TOOLS_TRAIN = """
import argparse

from mmcv import Config
from mmdet3d.models import build_model

from plugin.apis.mmdet_train import custom_train_detector


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    args = parser.parse_args()
    cfg = Config.fromfile(args.config)
    custom_train_detector(build_model(cfg.model), [], cfg)


if __name__ == "__main__":
    main()
"""
CONFIG = """
model = dict(type="BEVFormer")
optimizer = dict(type="AdamW", lr=2.8e-4, weight_decay=0.01)
optimizer_config = dict(grad_clip=dict(max_norm=35, norm_type=2))
lr_config = dict(policy="CosineAnnealing", min_lr_ratio=1e-3)
runner = dict(type="EpochBasedRunner", max_epochs=24)
workflow = [("train", 1)]
"""
PLAIN_LOOP = """
import torch
from torch import nn


def main():
    model = nn.Linear(4, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x in []:
        model(x).sum().backward()
        opt.step()


if __name__ == "__main__":
    main()
"""


@pytest.mark.parametrize("fp16, mode, where", [
    ("fp16 = dict(loss_scale=512.)", "fp16-mixed", "configs"),
    # BEVFormer's projects/configs/bevformer_fp16/bevformer_tiny_fp16.py, given to tools/train.py on its command line
    ("fp16 = dict(loss_scale=512.)", "fp16-mixed", "projects/configs/bevformer_fp16"),
    ('optimizer_config = dict(type="Fp16OptimizerHook", loss_scale=512.)', "fp16-mixed", "configs"),
    # near misses: no fp16 key; `fp16 = None` (mmdet's default)
    ("", "fp32", "configs"),
    ("fp16 = None", "fp32", "configs"),
])
def test_an_mmcv_runner_trains_in_its_configs_precision(tmp_path, fp16, mode, where):
    root = write_project(tmp_path / "p", {
        "plugin/__init__.py": "", "plugin/apis/__init__.py": "",
        "plugin/apis/mmdet_train.py": textwrap.dedent(TRAIN_API), "tools/train.py": textwrap.dedent(TOOLS_TRAIN),
        "configs/bevformer_tiny.py": textwrap.dedent(CONFIG),
        f"{where}/bevformer_tiny_fp16.py": textwrap.dedent(CONFIG) + fp16 + "\n",
        # a program with a plain loop of its own does not read the mmcv configs
        "tools/plain.py": textwrap.dedent(PLAIN_LOOP)})
    p = Project(root)
    eps = {ep.display.rsplit("/", 1)[-1]: ep for ep in p.entry_points()}
    assert set(eps) == {"train.py", "plain.py"}, eps
    assert p.regime_for(eps["train.py"].path).mode == mode
    assert p.regime_for(eps["plain.py"].path).mode == "fp32"


def test_a_test_runner_runs_no_training(tmp_path):
    root = write_project(tmp_path / "p", {"run_tests.py": textwrap.dedent("""
        import unittest

        if __name__ == "__main__":
            runner = unittest.TextTestRunner(verbosity=2)
            runner.run(unittest.defaultTestLoader.discover("."))
        """)})
    assert Project(root).entry_points() == []
