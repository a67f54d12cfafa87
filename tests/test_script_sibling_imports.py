"""A top-level import in a directory that holds a program names the module beside it first: Python runs
``python evaluation/ft/run_ft.py`` with ``evaluation/ft/`` first on ``sys.path``, so ``import utils`` there (in
the script or in the ``engine.py`` beside it) is ``evaluation/ft/utils.py``, not the root's ``utils.py``.
(ibot, set 13 T13-1: the evaluation fine-tuning's DeepSpeed fp16 judged the root ``utils.py``'s gradient
clipping, which only the fp16-mixed pre-training calls, after unscaling: AMP102 on ``clip / (norm + 1e-6)``.)"""
import textwrap

from cliutil import entry_point_reach, hazard_findings, write_project

ROOT_UTILS = """
def clip_gradients(model, clip):
    norms = []
    for name, p in model.named_parameters():
        if p.grad is not None:
            param_norm = p.grad.data.norm(2)
            norms.append(param_norm.item())
            clip_coef = clip / (param_norm + 1e-6)
            if clip_coef < 1:
                p.grad.data.mul_(clip_coef)
    return norms
"""

MAIN_TRAIN = """
import torch
import torch.nn as nn
import utils
def main():
    model = nn.Linear(16, 4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler = torch.cuda.amp.GradScaler()
    for step in range(100):
        x = torch.randn(8, 16).cuda()
        with torch.cuda.amp.autocast():
            loss = model(x).square().mean()
        optimizer.zero_grad()
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        utils.clip_gradients(model, 3.0)
        scaler.step(optimizer)
        scaler.update()
if __name__ == "__main__":
    main()
"""

FT_UTILS = """
def create_ds_config(args):
    return {"train_batch_size": 8, "fp16": {"enabled": True, "loss_scale": 0}}
def log(step, loss):
    print(step, float(loss))
"""

ENGINE = """
import utils
def log_step(step, loss):
    utils.log(step, loss)
"""


def _run_ft(ds_config_from):
    return f"""
import torch
import torch.nn as nn
import deepspeed
import utils
from engine import log_step
def main(args):
    config = {ds_config_from}(args)
    model = nn.Linear(16, 4)
    model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, config=config)
    for step in range(100):
        x = torch.randn(8, 16).cuda().half()
        loss = model(x).float().square().mean()
        model.backward(loss)
        model.step()
        log_step(step, loss)
if __name__ == "__main__":
    main(None)
"""


FILES = {
    "utils.py": ROOT_UTILS,
    "main_train.py": MAIN_TRAIN,
    "evaluation/__init__.py": "",
    "evaluation/ft/__init__.py": "",
    "evaluation/ft/utils.py": FT_UTILS,
    "evaluation/ft/engine.py": ENGINE,
    "evaluation/ft/run_ft.py": _run_ft("utils.create_ds_config"),
}


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_script_directory_imports_its_sibling_module(tmp_path):
    root = _project(tmp_path, FILES)
    reach = entry_point_reach(root)
    assert reach["evaluation/ft/run_ft.py"] == {"evaluation/ft/run_ft.py", "evaluation/ft/utils.py",
                                                "evaluation/ft/engine.py"}
    assert reach["main_train.py"] == {"main_train.py", "utils.py"}
    # the root utils.py runs in the fp16-mixed pre-training only, after unscale_: float32 gradients
    assert ("utils.py", "AMP102") not in hazard_findings(root)


def test_near_miss_no_sibling_module_means_the_root_one(tmp_path):
    # the sub-directory's program has no utils.py beside it: ``import utils`` is the root's (the repository
    # root on PYTHONPATH), which it then runs under its DeepSpeed fp16
    files = {k: v for k, v in FILES.items() if k != "evaluation/ft/utils.py"}
    files["evaluation/ft/engine.py"] = ENGINE.replace("utils.log(step, loss)", "utils.clip_gradients(None, 1.0)")
    files["evaluation/ft/run_ft.py"] = _run_ft("make_config").replace(
        "def main(args):", "def make_config(args):\n    return {\"fp16\": {\"enabled\": True}}\ndef main(args):")
    root = _project(tmp_path, files)
    reach = entry_point_reach(root)
    assert "utils.py" in reach["evaluation/ft/run_ft.py"]
    assert ("utils.py", "AMP102") in hazard_findings(root)


def test_near_miss_a_package_directory_without_a_program_imports_from_the_root(tmp_path):
    # ``models/`` holds no program: the root script runs with the root first on sys.path, so the
    # ``import utils`` of ``models/net.py`` is the root's utils.py, not ``models/utils.py``
    files = {
        "utils.py": ROOT_UTILS,
        "models/__init__.py": "",
        "models/utils.py": FT_UTILS,
        "models/net.py": "import torch\nimport utils\nclass Net(torch.nn.Linear):\n    pass\n",
        "train.py": MAIN_TRAIN.replace("import utils", "import utils\nfrom models.net import Net"),
    }
    root = _project(tmp_path, files)
    reach = entry_point_reach(root)
    assert reach["train.py"] == {"train.py", "utils.py", "models/net.py"}
