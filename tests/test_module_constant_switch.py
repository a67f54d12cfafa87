"""An autocast or GradScaler switched off by a module constant of its own file is no float16 run:
``GradScaler(...) if FP16 == 1 else None`` under ``FP16 = 0`` (insightface's reconstruction/jmlr settings copied into
the training script, triage16/repro_4, T16-5's last half). Near misses: the constant on (``FP16 = 1``), and a name
the file rebinds elsewhere (``global FP16`` set from the command line) is no constant."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import torch

FP16 = {value}


def main():
    {rebind}
    net = torch.nn.Linear(4, 4).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-3)
    grad_amp = torch.cuda.amp.GradScaler(growth_interval=100) if FP16 == 1 else None
    for img in []:
        loss = net(img).mean()
        if FP16 > 0:
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


@pytest.mark.parametrize("value, rebind, mode", [
    ("0", "pass", "fp32"),
    ("0.0", "pass", "fp32"),
    ("1", "pass", "fp16-mixed"),
    ("0", "global FP16\n    FP16 = int(__import__('os').environ.get('FP16', '1'))", "fp16-mixed"),
])
def test_a_scaler_under_a_module_constant(tmp_path, value, rebind, mode):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN).replace("{value}", value)
                                          .replace("{rebind}", rebind)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
