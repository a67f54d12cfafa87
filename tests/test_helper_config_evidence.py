"""A DeepSpeed config dict built in a helper function of a shared module is the precision of the entry
points that call that helper only (unilm beit2: ``utils.create_ds_config(args)`` with ``"fp16":
{"enabled": True}``, called by the fine-tuning script under ``--enable_deepspeed``; the pretraining
scripts import utils for its loss scaler and train under autocast: triage T7-9)."""
import textwrap

from amplint.project import Project
from cliutil import write_project

UTILS = """
import json
import torch

class NativeScaler:
    def __init__(self):
        self._scaler = torch.cuda.amp.GradScaler()
    def __call__(self, loss, optimizer):
        self._scaler.scale(loss).backward()
        self._scaler.step(optimizer)
        self._scaler.update()

def create_ds_config(args):
    config = {"train_batch_size": args.batch_size, "fp16": {"enabled": True, "loss_scale": 0}}
    with open(args.deepspeed_config, "w") as f:
        f.write(json.dumps(config))
"""

PRETRAIN = """
import torch
import utils

def main(args, model, loader):
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    loss_scaler = utils.NativeScaler()
    for x in loader:
        with torch.cuda.amp.autocast():
            loss = model(x).mean()
        loss_scaler(loss, optimizer)
"""

FINETUNE = """
import deepspeed
import utils

def main(args, model, loader):
    utils.create_ds_config(args)
    model, optimizer, _, _ = deepspeed.initialize(args=args, model=model, model_parameters=model.parameters())
    for x in loader:
        loss = model(x).mean()
        model.backward(loss)
        model.step()
"""


def _modes(tmp_path, files):
    root = write_project(tmp_path / "p", {name: textwrap.dedent(text) for name, text in files.items()})
    p = Project(root)
    return {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


def test_a_helpers_deepspeed_config_is_the_precision_of_its_callers_only(tmp_path):
    modes = _modes(tmp_path, {"utils.py": UTILS, "run_pretraining.py": PRETRAIN, "run_finetuning.py": FINETUNE})
    assert modes["run_pretraining.py"] == "fp16-mixed"
    assert modes["run_finetuning.py"] == "fp16-master"


def test_near_miss_a_config_dict_at_module_level_runs_on_import(tmp_path):
    utils = UTILS + "\nDS_CONFIG = {\"train_batch_size\": 8, \"fp16\": {\"enabled\": True}}\n"
    modes = _modes(tmp_path, {"utils.py": utils, "run_pretraining.py": PRETRAIN})
    assert modes["run_pretraining.py"] == "fp16-master"
