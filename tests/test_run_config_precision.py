"""A run config's own `precision: fp32 | fp16 | bf16` (speechbrain's recipe hparams, read by the shared Brain
class, which runs fp16 / bf16 autocast or none by it) is that run's precision, and a directory of programs each
with its own configs (`recipes/<task>/train.py` + `hparams/`) is not one configuration directory for all
(docs/precision.md, "Evidence in configuration files"; triage T6-6)."""
import textwrap

from cliutil import write_project

BRAIN = """
import torch
class Brain:
    def __init__(self, modules, hparams):
        self.modules = modules
        self.precision = hparams.get("precision", "fp32")
        self.optimizer = torch.optim.Adam(modules.parameters())
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.precision == "fp16")
    def fit_batch(self, batch):
        with torch.autocast("cuda", enabled=self.precision != "fp32"):
            loss = self.modules(batch).sum()
        self.scaler.scale(loss).backward()
        self.scaler.step(self.optimizer)
        self.scaler.update()
"""
RECIPE = """
import sys
import torch
import yaml
from lib.core import Brain
class RecipeBrain(Brain):
    def fit_batch(self, batch):
        loss = self.modules(batch).sum()
        loss.backward()
        self.optimizer.step()
if __name__ == "__main__":
    brain = RecipeBrain(torch.nn.Linear(8, 8), yaml.safe_load(open(sys.argv[1])))
"""


def _modes(tmp_path, **precisions):
    from amplint.project import Project, Regime
    files = {"lib/__init__.py": "", "lib/core.py": BRAIN}
    for task, line in precisions.items():
        files[f"recipes/{task}/train.py"] = RECIPE
        files[f"recipes/{task}/hparams/train.yaml"] = f"{line}\nlr: 0.001\nbatch_size: 8\n"
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    return {ep.display.split("recipes/")[-1].split("/")[0]: Regime(ep.signals).mode for ep in Project(root).entry_points()}


def test_each_recipe_runs_in_the_precision_its_config_states(tmp_path):
    assert _modes(tmp_path, enhance="precision: fp32", separation="precision: fp16", tts="precision: bf16") == \
        {"enhance": "fp32", "separation": "fp16-mixed", "tts": "bf16"}


def test_a_recipe_whose_config_states_no_precision_keeps_the_shared_trainers_evidence(tmp_path):
    # near miss: no `precision` key: the Brain's GradScaler and autocast are still one of its runs
    assert _modes(tmp_path, enhance="epochs: 3") == {"enhance": "fp16-mixed"}
