"""AMP301 when float16 autocast opens in the function that computes and returns the loss and the
backward runs in its caller (neuraloperator's ``Trainer``, unseen set 17, M17-2:
``loss = self.train_one_batch(idx, sample)`` in ``train_one_epoch``, then ``loss.backward()``;
``train_one_batch`` runs the model and the loss under ``torch.autocast``; no GradScaler anywhere).
Near misses: bfloat16 or disabled autocast in the callee, a GradScaler in the project, a callee
that runs its own backward, an autocast only after the callee's return, a loss that is not the
callee's result."""
import json

from cliutil import hazard_findings, run, write_project

TRAINER = '''
import torch


class Trainer:
    def __init__(self, model, mixed_precision=False):
        self.model = model
        self.mixed_precision = mixed_precision

    def train_one_epoch(self, loader, optimizer, loss_fn):
        for idx, sample in enumerate(loader):
            optimizer.zero_grad(set_to_none=True)
            loss = {loss_from}
            loss.backward()
            optimizer.step()

    def train_one_batch(self, idx, sample, loss_fn):
{callee}

    def fit(self, loader, optimizer, loss_fn, epochs):
        for _ in range(epochs):
            self.train_one_epoch(loader, optimizer, loss_fn)
'''

CALLEE = '''        if self.mixed_precision:
            with torch.autocast(device_type="cuda"{dtype}):
                out = self.model(sample["x"])
                loss = loss_fn(out, sample["y"])
        else:
            loss = loss_fn(self.model(sample["x"]), sample["y"])
        return loss'''

TRAIN = '''
import argparse

import torch

from trainer import Trainer

parser = argparse.ArgumentParser()
parser.add_argument("--mixed_precision", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(8, 8).cuda()
trainer = Trainer(model, mixed_precision=args.mixed_precision)
trainer.fit([], torch.optim.AdamW(model.parameters(), lr=1e-3), torch.nn.functional.mse_loss, 2){scaler}
'''


def findings(tmp_path, callee=CALLEE, dtype="", loss_from="self.train_one_batch(idx, sample, loss_fn)", scaler=""):
    trainer = TRAINER.replace("{loss_from}", loss_from).replace("{callee}", callee.replace("{dtype}", dtype))
    root = write_project(tmp_path / "p", {"src/trainer.py": trainer, "src/train.py": TRAIN.replace("{scaler}", scaler)})
    return hazard_findings(root)


def test_loss_returned_from_an_fp16_autocast_method(tmp_path):
    assert findings(tmp_path) == [("src/trainer.py", "AMP301")]


def test_loss_returned_from_an_explicit_float16_autocast(tmp_path):
    assert findings(tmp_path, dtype=", dtype=torch.float16") == [("src/trainer.py", "AMP301")]


def test_near_miss_bfloat16_autocast_in_the_callee(tmp_path):
    assert findings(tmp_path, dtype=", dtype=torch.bfloat16") == []


def test_near_miss_disabled_autocast_in_the_callee(tmp_path):
    assert findings(tmp_path, dtype=", enabled=False") == []


def test_near_miss_a_grad_scaler_in_the_project(tmp_path):
    assert findings(tmp_path, scaler='\nscaler = torch.amp.GradScaler("cuda")') == []


def test_near_miss_a_callee_that_runs_its_own_backward(tmp_path):
    # (judged where it is: the callee's backward at line 24 is reported, the caller's at line 14 is not)
    callee = CALLEE.replace("        return loss", "        loss.backward()\n        return loss.detach()")
    findings(tmp_path, callee=callee)
    assert _rows(tmp_path) == [24]


def test_near_miss_autocast_only_after_the_return(tmp_path):
    callee = ('        loss = loss_fn(self.model(sample["x"]), sample["y"])\n        return loss\n'
              '        with torch.autocast(device_type="cuda"):\n            pass')
    assert findings(tmp_path, callee=callee) == []


def test_near_miss_a_loss_not_computed_by_the_callee(tmp_path):
    assert findings(tmp_path, loss_from='loss_fn(self.model(sample["x"]), sample["y"])') == []


def _rows(tmp_path):
    r = run(["check", "--no-cache", "--output-format", "json", "."], tmp_path / "p")
    return [f["location"]["row"] for f in json.loads(r.out) if f["code"] == "AMP301"]
