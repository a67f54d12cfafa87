"""A program that runs a package's training loop through the loop file's own functions (Megatron's
``pretrain_gpt.py`` -> ``training.pretrain()`` -> ``train()`` -> ``train_step()``) is that loop's entry point
(docs/precision.md, "Launchers"; triage T6-13). A learning-rate scheduler's ``step()`` trains nothing: an
inference program that loads a checkpoint (whose loader steps the scheduler by 0) is no entry point."""
import textwrap

from cliutil import write_project

TRAINING = """
import torch
def train_step(forward_step, model, optimizer, batch):
    optimizer.zero_grad()
    loss = forward_step(model, batch)
    loss.backward()
    optimizer.step()
def train(forward_step, model, optimizer, data):
    for batch in data:
        train_step(forward_step, model, optimizer, batch)
def pretrain(model_provider, forward_step, data):
    model = model_provider()
    optimizer = torch.optim.AdamW(model.parameters())
    train(forward_step, model, optimizer, data)
"""
CHECKPOINT = """
import torch
def load_checkpoint(model, optimizer, opt_param_scheduler, path):
    model.load_state_dict(torch.load(path))
    if opt_param_scheduler is not None:
        opt_param_scheduler.step(increment=0)
"""
PROGRAM = """
import torch
from mlib.model import Net
from mlib.training import pretrain
def forward_step(model, batch):
    return model(batch).sum()
if __name__ == "__main__":
    pretrain(Net, forward_step, [])
"""
GENERATE = """
import torch
from mlib.model import Net
from mlib.checkpointing import load_checkpoint
if __name__ == "__main__":
    model = Net().half()
    load_checkpoint(model, None, None, "ckpt.pt")
"""
MODEL = "import torch\nclass Net(torch.nn.Module):\n    def forward(self, x):\n        return x\n"


def _project(tmp_path, **extra):
    files = {"mlib/__init__.py": "", "mlib/training.py": TRAINING, "mlib/checkpointing.py": CHECKPOINT,
             "mlib/model.py": MODEL, "pretrain_gpt.py": PROGRAM,
             "train_gpt.sh": "python pretrain_gpt.py --num-layers 2 --bf16\n"}
    files.update(extra)
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def test_a_program_calling_the_loop_files_outer_function_is_the_entry_point(tmp_path):
    from amplint.project import Project
    root = _project(tmp_path)
    p = Project(root)
    eps = {ep.display.rsplit("/", 1)[-1]: ep for ep in p.entry_points()}
    assert list(eps) == ["pretrain_gpt.py"]  # the loop's file is its helper
    assert "through `pretrain`" in eps["pretrain_gpt.py"].functions[0]["why"][0]
    assert p.regime_for(root / "mlib/model.py").mode == "bf16"
    assert p.regime_for(root / "mlib/training.py").mode == "bf16"


def test_a_schedulers_step_makes_no_entry_point(tmp_path):
    # near miss: an inference program's checkpoint loader steps the LR scheduler: no training run, so its
    # half model is not the training's precision
    from amplint.project import Project
    root = _project(tmp_path, **{"tools/generate.py": GENERATE})
    p = Project(root)
    assert [ep.display.rsplit("/", 1)[-1] for ep in p.entry_points()] == ["pretrain_gpt.py"]
    assert p.regime_for(root / "mlib/model.py").mode == "bf16"


def test_a_launcher_scripts_flags_belong_to_the_program_it_runs(tmp_path):
    # Megatron: examples/*/train.sh run pretrain_gpt.py with --fp16, or pretrain_hybrid.py with --bf16; the
    # flags of one are not the other's precision
    from amplint.project import Project, Regime
    hybrid = PROGRAM.replace("pretrain_gpt", "pretrain_hybrid")
    root = _project(tmp_path, **{"pretrain_hybrid.py": hybrid, "train_gpt.sh": "",
                                 "examples/gpt/train.sh": "torchrun $DIST ${ROOT}/pretrain_gpt.py --fp16\n",
                                 "examples/hybrid/train.sh": "python ./pretrain_hybrid.py --bf16\n",
                                 "examples/data/prepare.sh": "python tools/preprocess.py --bf16\n"})
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: Regime(ep.signals).mode for ep in p.entry_points()}
    assert modes == {"pretrain_gpt.py": "fp16-mixed", "pretrain_hybrid.py": "bf16"}
    # a program importing a helper from another program does not run that one's `__main__` training
    vlm = PROGRAM.replace("from mlib.training import pretrain", "from mlib.training import pretrain\nfrom pretrain_gpt import forward_step")
    root = _project(tmp_path / "r", **{"pretrain_vlm.py": vlm, "train_gpt.sh": ""})
    assert sorted(ep.display.rsplit("/", 1)[-1] for ep in Project(root).entry_points()) == ["pretrain_gpt.py",
                                                                                           "pretrain_vlm.py"]
    # near miss: a script that names no program keeps belonging to the entry points around it
    root = _project(tmp_path / "q", **{"train_gpt.sh": "", "examples/flags.sh": "FLAGS='--bf16'\n"})
    assert Project(root).regime_for(root / "mlib/model.py").mode == "bf16"


LITE = """
import torch
from lightning.fabric import Fabric
class Trainer(Fabric):
    def run(self, model, loader, lr):
        optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        model, optimizer = self.setup(model, optimizer)
        for x, y in loader:
            self.backward((model(x) - y).pow(2).mean())
            optimizer.step()
"""
LITE_MAIN = """
import os
from torch import nn
os.environ["FLOAT_MODE"] = "bf16"
from src.trainer import Trainer
model = nn.Linear(16, 4)
if os.environ["FLOAT_MODE"] == "fp16":
    trainer = Trainer(devices=1, precision=16)
elif os.environ["FLOAT_MODE"] == "bf16":
    trainer = Trainer(devices=1, precision="bf16")
else:
    trainer = Trainer(devices=1, precision=32)
trainer.run(model, [], 6e-4)
"""


def test_a_script_building_a_fabric_subclass_from_src_is_its_entry_point(tmp_path):
    # RWKV-LM v4 (T6-10): train.py builds src/trainer.py's LightningLite subclass with precision=16 | "bf16" | 32
    from amplint.project import Project
    root = write_project(tmp_path / "p", {"src/__init__.py": "", "src/trainer.py": textwrap.dedent(LITE),
                                          "train.py": textwrap.dedent(LITE_MAIN)})
    (ep,) = Project(root).entry_points()
    assert ep.display.endswith("train.py") and not ep.display.endswith("trainer.py")
    assert {sig.dtype for sig, _ in ep.signals} == {"float16", "bfloat16"}
