"""Autocast keywords from a helper that returns them (``autocast(**get_autocast_args(args))``), and
a GradScaler left beside a bfloat16 autocast (rf-detr's engine.py: the run is bf16, the scaler is
vestigial, not a float16 autocast out of sight)."""
import textwrap

import pytest

from amplint.project import Project

from cliutil import write_project

ENGINE = textwrap.dedent("""
    import torch
    import torch.nn.functional as F
    from torch.amp import GradScaler, autocast


    def get_autocast_args(args):
        return {"device_type": "cuda", "enabled": args.amp, "dtype": DTYPE}


    def train_one_epoch(model, loader, optimizer, args):
        scaler = GradScaler("cuda", enabled=args.amp)
        for samples, targets in loader:
            with autocast(**get_autocast_args(args)):
                loss = F.mse_loss(model(samples), targets)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
""")


def _regime(tmp_path, source):
    root = write_project(tmp_path / "p", {"engine.py": source})
    project = Project(root)
    return project, project.regime_for(root / "engine.py")


@pytest.mark.parametrize("dtype, mode", [("torch.bfloat16", "bf16"), ("torch.float16", "fp16-mixed")])
def test_the_helpers_dict_gives_the_autocast_dtype(tmp_path, dtype, mode):
    _, regime = _regime(tmp_path, ENGINE.replace("DTYPE", dtype))
    assert regime.mode == mode


def test_the_region_takes_the_helpers_dtype(tmp_path):
    from amplint.engine import build_context

    project, _ = _regime(tmp_path, ENGINE.replace("DTYPE", "torch.bfloat16"))
    path = project.root / "engine.py"
    ctx = build_context(path, str(path), path.read_bytes(), project)
    [region] = ctx.regions().values()
    assert (region.dtype, region.enabled) == ("bfloat16", True)


@pytest.mark.parametrize("other_dtype, mode", [
    # rf-detr's real helper: one dict per torch version, both bfloat16
    ("torch.bfloat16", "bf16"),
    # near miss: returns that disagree on the dtype say nothing of it (the GradScaler stands in)
    ("torch.float16", "fp16-mixed"),
])
def test_a_helper_with_a_return_per_branch(tmp_path, other_dtype, mode):
    source = ENGINE.replace(
        '    return {"device_type": "cuda", "enabled": args.amp, "dtype": DTYPE}\n',
        '    if DEPRECATED_AMP:\n        return {"enabled": args.amp, "dtype": OTHER}\n'
        '    return {"device_type": "cuda", "enabled": args.amp, "dtype": torch.bfloat16}\n').replace("OTHER", other_dtype)
    _, regime = _regime(tmp_path, source)
    assert regime.mode == mode


def test_near_miss_a_dtype_switch_keeps_the_scaler(tmp_path):
    # timm's shape: the autocast dtype is bf16 or fp16 by a flag; the scaler serves the fp16 run
    source = ENGINE.replace("DTYPE", "amp_dtype").replace(
        "def get_autocast_args(args):\n",
        "def get_autocast_args(args):\n    amp_dtype = torch.bfloat16 if args.bf16 else torch.float16\n")
    _, regime = _regime(tmp_path, source)
    assert regime.mode == "fp16-mixed" and regime.grad_scaler is not None


MAIN = textwrap.dedent("""
    import argparse
    import torch
    from engine import train_one_epoch
    parser = argparse.ArgumentParser()
    parser.add_argument("--amp", action="store_true", default=True)
    args = parser.parse_args()
    model = torch.nn.Linear(4, 4).cuda()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_one_epoch(model, [], optimizer, args)
""")


@pytest.mark.parametrize("flag, mode", [("--amp", "bf16"), ("--fp16", "fp16-mixed")])
def test_the_launchers_amp_flag_switches_the_bf16_autocast_on(tmp_path, flag, mode):
    # rf-detr's main.py (now the entry point of its engine's loop): `--amp` turns on the helper's bf16 autocast;
    # it is no float16 of its own. Near miss: `--fp16` names the dtype
    root = write_project(tmp_path / "p", {"engine.py": ENGINE.replace("DTYPE", "torch.bfloat16"),
                                          "main.py": MAIN.replace("--amp", flag)})
    project = Project(root)
    (ep,) = project.entry_points()
    assert ep.display.endswith("main.py")
    assert project.regime_for(root / "engine.py").mode == mode
