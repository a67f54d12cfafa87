"""AMP304 through a trainer flag: Lightning ``Trainer(precision=16, terminate_on_nan=True)`` raises at
the first non-finite loss, the step its GradScaler would have skipped (xformers' microGPT example)."""
import pytest

from training_util import found, lines

MODEL = """
import torch
{imports}


class Model(LightningModule):
    def training_step(self, batch, batch_idx):
        x, y = batch
        return (self.net(x) - y).square().mean()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


def main():
    {setup}
    trainer = Trainer(gpus=1, {arguments})
    trainer.fit(Model())
"""

PL = "from pytorch_lightning import LightningModule, Trainer"
LIGHTNING = "from lightning.pytorch import LightningModule, Trainer"


def source(arguments, imports=PL, setup="pass"):
    return MODEL.replace("{imports}", imports).replace("{arguments}", arguments).replace("{setup}", setup)


CLI = """import argparse
    parser = argparse.ArgumentParser()
    parser.add_argument("--precision", default="{default}")
    args = parser.parse_args()"""


@pytest.mark.parametrize("name, imports, arguments, setup", [
    ("precision=16", PL, "precision=16, terminate_on_nan=True", "pass"),
    ('precision="16-mixed", lightning.pytorch', LIGHTNING, 'terminate_on_nan=True, precision="16-mixed"', "pass"),
    ("precision from the command line, default 16-mixed", PL, "precision=args.precision, terminate_on_nan=True",
     CLI.replace("{default}", "16-mixed")),
])
def test_terminate_on_nan_under_fp16_mixed(name, imports, arguments, setup):
    text = source(arguments, imports, setup)
    (line, message), = found("AMP304", text)
    assert "terminate_on_nan=True" in message and "GradScaler" in message, name
    assert "Trainer(gpus=1" in text.splitlines()[line - 1], name


def test_precision_from_a_module_constant():
    text = source("precision=PRECISION, terminate_on_nan=True").replace("\n\nclass Model", "\nPRECISION = 16\n\n\nclass Model")
    assert len(lines("AMP304", text)) == 1
    assert lines("AMP304", text.replace("PRECISION = 16", "PRECISION = 32")) == []


@pytest.mark.parametrize("name, arguments", [
    ("bf16 mixed", 'precision="bf16-mixed", terminate_on_nan=True'),
    ("bf16 as 'bf16'", 'precision="bf16", terminate_on_nan=True'),
    ("fp32", "precision=32, terminate_on_nan=True"),
    ("no precision given (fp32)", "terminate_on_nan=True"),
    ("16-true: half parameters, no GradScaler to skip the step", 'precision="16-true", terminate_on_nan=True'),
    ("terminate_on_nan=False", "precision=16, terminate_on_nan=False"),
    ("detect_anomaly instead (xformers' fix)", "precision=16, detect_anomaly=True"),
])
def test_near_misses_stay_silent(name, arguments):
    assert lines("AMP304", source(arguments)) == [], name


def test_command_line_precision_bf16_is_silent():
    text = source("precision=args.precision, terminate_on_nan=True", setup=CLI.replace("{default}", "bf16-mixed"))
    assert lines("AMP304", text) == []


def test_another_libraries_trainer_is_not_lightnings():
    text = source("precision=16, terminate_on_nan=True", imports="from mylib import LightningModule, Trainer")
    assert lines("AMP304", text, extra_files={"mylib.py": "class LightningModule: pass\nclass Trainer: pass\n"}) == []


# ---- a check that raises in a helper of another module ------------------------------------------

HELPERS = """
import torch


def check_loss(value, name="loss"):
    if torch.isnan(value).any():
        raise RuntimeError(f"{name} is NaN")
"""

LOOP = """
import torch
from helpers import check_loss


def train(model, loader):
    opt = torch.optim.AdamW(model.parameters())
    scaler = torch.amp.GradScaler("cuda")
    for x in loader:
        {autocast}
            loss = model(x).mean()
        check_loss({checked})
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
"""


def loop(autocast='with torch.autocast("cuda", dtype=torch.float16):', checked="loss"):
    return {"loop.py": LOOP.replace("{autocast}", autocast).replace("{checked}", checked)}


def test_helper_in_another_module_called_from_an_fp16_training_step():
    (line, message), = found("AMP304", HELPERS, filename="helpers.py", extra_files=loop())
    assert line == 7 and "loop.py:12" in message


@pytest.mark.parametrize("name, files", [
    ("called from a float32 step (no autocast, no scaler in the project's regime)", {"loop.py": LOOP.replace(
        "{autocast}", "if True:").replace("{checked}", "loss").replace('scaler = torch.amp.GradScaler("cuda")', "")
        .replace("scaler.scale(loss).backward()", "loss.backward()").replace("scaler.step(opt)", "opt.step()")
        .replace("scaler.update()", "")}),
    ("called from a bf16 step", loop('with torch.autocast("cuda", dtype=torch.bfloat16):')),
    ("checks the input batch", loop(checked="x")),
    ("never called", {}),
])
def test_helper_near_misses(name, files):
    assert lines("AMP304", HELPERS, filename="helpers.py", extra_files=files) == [], name
