"""AMP301: another program's trainer flag (`Trainer(fp16=True)`, whose trainer scales the steps it runs) is no loss
scaling for a loop of its own (set 12, M12-1: FlagAI's DreamBooth script runs `with autocast(): loss.backward();
optimizer.step()` with no GradScaler, beside GLM / T5 scripts handing their models to the project's fp16 trainer)."""
import json
import textwrap

from cliutil import run, write_project

DREAMBOOTH = """
import torch
import torch.nn as nn
from torch.cuda.amp import autocast

unet = nn.Sequential(nn.Linear(16, 64), nn.SiLU(), nn.Linear(64, 16)).cuda()
optimizer = torch.optim.AdamW(unet.parameters(), lr=5e-6)
for step in range(100):
    x = torch.randn(4, 16).cuda()
    with autocast():
        loss = nn.functional.mse_loss(unet(x), x)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""

TRAIN_GLM = """
import torch
from transformers import Trainer, TrainingArguments

def main(model, data):
    Trainer(model=model, args=TrainingArguments("out", fp16=True), train_dataset=data).train()

if __name__ == "__main__":
    main(torch.nn.Linear(4, 4), [])
"""

SCALER_ELSEWHERE = """
import torch

scaler = torch.amp.GradScaler("cuda")
"""


def _amp301(tmp_path, extra):
    files = {"examples/dreambooth.py": DREAMBOOTH, **extra}
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    r = run(["check", "--no-cache", "--select", "AMP301", "--output-format", "json", "."], root)
    return [f["filename"].replace("\\", "/").rsplit("/", 1)[-1] for f in json.loads(r.out)]


def test_another_programs_trainer_flag_does_not_scale_this_loop(tmp_path):
    assert _amp301(tmp_path, {"examples/train_glm.py": TRAIN_GLM}) == ["dreambooth.py"]


def test_a_grad_scaler_elsewhere_does_not_scale_a_loop_that_steps_its_optimizer_plainly(tmp_path):
    # ``loss.backward()`` then ``optimizer.step()`` in the loop itself: no scaler takes part in this step
    # (physicsnemo AeroJEPA beside other examples' GradScalers, real-bug set 16, B16-2)
    assert _amp301(tmp_path, {"utils/amp.py": SCALER_ELSEWHERE}) == ["dreambooth.py"]


def test_near_miss_a_grad_scaler_elsewhere_may_be_handed_to_the_step(tmp_path):
    # the loop's step is a helper's (``apply_step(optimizer)``), which may be handed the scaler built elsewhere
    loop = DREAMBOOTH.replace("    optimizer.step()\n    optimizer.zero_grad()\n", "    apply_step(optimizer)\n")
    loop = loop.replace("from torch.cuda.amp import autocast\n", "from torch.cuda.amp import autocast\nfrom utils.amp import apply_step\n")
    helper = SCALER_ELSEWHERE + "\n\ndef apply_step(optimizer):\n    scaler.step(optimizer)\n    scaler.update()\n"
    assert _amp301(tmp_path, {"examples/dreambooth.py": loop, "utils/amp.py": helper, "utils/__init__.py": ""}) == []
