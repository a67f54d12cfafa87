"""Python configuration modules as a program's settings (T16-5, insightface's reconstruction/jmlr): ``cfg =
get_config(args.config)`` loads one of configs/base.py, s1.py, s2.py, each ``config.fp16 = 0``; the GradScaler under
``if cfg.fp16 == 1:`` and the autocast ``enabled=cfg.fp16 > 0`` are off in every run: the training is fp32. Near
misses: one config turns fp16 on; a config that does not set it (the command line or code may)."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import argparse
import importlib

import torch


def get_config(name):
    return importlib.import_module("configs." + name).config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    cfg = get_config(parser.parse_args().config)
    net = torch.nn.Linear(8, 8).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    grad_amp = torch.cuda.amp.GradScaler(growth_interval=100) if cfg.fp16 == 1 else None
    for x in []:
        with torch.cuda.amp.autocast(enabled=cfg.fp16 > 0):
            loss = net(x).mean()
        if grad_amp is not None:
            grad_amp.scale(loss).backward()
            grad_amp.step(opt)
            grad_amp.update()
        else:
            loss.backward()
            opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
"""


def config(**settings):
    return "from easydict import EasyDict as edict\n\nconfig = edict()\nconfig.lr = 0.1\n" + "".join(
        f"config.{k} = {v!r}\n" for k, v in settings.items())


@pytest.mark.parametrize("configs, mode", [
    ({"base.py": config(fp16=0), "s1.py": config(fp16=0, batch=64)}, "fp32"),
    # near misses: a config turning fp16 on; a config leaving it unset
    ({"base.py": config(fp16=0), "s1.py": config(fp16=1)}, "fp16-mixed"),
    ({"base.py": config(fp16=0), "s1.py": config(batch=64)}, "fp16-mixed"),
])
def test_python_configs_switch_the_amp_off(tmp_path, configs, mode):
    files = {"train.py": textwrap.dedent(TRAIN), "configs/__init__.py": "",
             **{f"configs/{k}": v for k, v in configs.items()}}
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"train.py": mode}
