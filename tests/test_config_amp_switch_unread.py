"""A configuration file's autocast switch (`SOLVER.AMP.ENABLED: True`, `amp: true`) is the precision of a run
whose code can read it: a trainer it hands the model to, or an autocast / GradScaler in what it runs. A loop of
its own with neither trains in float32 (fast-reid's `tools/plain_train_net.py`, labelled fp16-mixed from the Base
configs that only its DefaultTrainer's AMP trainer reads, with an AMP304 on its `assert torch.isfinite(...)`;
docs/precision.md, "Evidence in configuration files"; triage T7-3)."""
import textwrap

from cliutil import run, write_project

CONFIG = "SOLVER:\n  AMP:\n    ENABLED: True\n  LR: 0.1\n"
AMP_TRAINER = """
import torch
class AmpTrainer:
    def __init__(self, cfg, model, opt, batches):
        self.model, self.opt, self.batches = model, opt, batches
        self.enabled = cfg["SOLVER"]["AMP"]["ENABLED"]
        self.scaler = torch.amp.GradScaler("cuda", enabled=self.enabled)
    def train(self):
        for x, y in self.batches:
            with torch.autocast("cuda", enabled=self.enabled):
                loss = torch.nn.functional.mse_loss(self.model(x), y)
            self.opt.zero_grad()
            self.scaler.scale(loss).backward()
            self.scaler.step(self.opt)
            self.scaler.update()
"""
TRAIN_NET = """
import torch
import yaml
from engine import AmpTrainer
def main():
    cfg = yaml.safe_load(open("configs/base.yml"))
    model = torch.nn.Linear(8, 1).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    AmpTrainer(cfg, model, opt, []).train()
if __name__ == "__main__":
    main()
"""
PLAIN = """
import torch
import yaml
def do_train(cfg, model, opt, batches):
    for x, y in batches:
        {forward}
        assert torch.isfinite(loss).all(), loss
        opt.zero_grad()
        loss.backward()
        opt.step()
def main():
    cfg = yaml.safe_load(open("configs/base.yml"))
    model = torch.nn.Linear(8, 1).cuda()
    do_train(cfg, model, torch.optim.SGD(model.parameters(), lr=0.1), [])
if __name__ == "__main__":
    main()
"""
FORWARD = "loss = torch.nn.functional.mse_loss(model(x), y)"
AUTOCAST_FORWARD = """with torch.autocast("cuda", enabled=cfg["SOLVER"]["AMP"]["ENABLED"]):
            loss = torch.nn.functional.mse_loss(model(x), y)"""


def _project(tmp_path, forward=FORWARD, config=CONFIG, extra=None):
    files = {"configs/base.yml": config, "engine.py": AMP_TRAINER, "train_net.py": TRAIN_NET,
             "plain_train_net.py": PLAIN.replace("{forward}", forward), **(extra or {})}
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def _modes(root):
    from amplint.project import Project, Regime
    return {ep.display.split("/")[-1]: Regime(ep.signals).mode for ep in Project(root).entry_points()}


def test_a_plain_loop_nothing_reads_the_amp_switch_in_trains_in_float32(tmp_path):
    root = _project(tmp_path)
    assert _modes(root) == {"plain_train_net.py": "fp32", "train_net.py": "fp16-mixed"}
    # (the plain loop's `assert torch.isfinite(...)` is a fail-fast on the forward loss: AMP305, named here)
    result = run(["check", "--no-cache", "--extend-select", "AMP305", "--output-format", "concise",
                  "plain_train_net.py"], root)
    assert "AMP304" not in result.out and "AMP305" not in result.out, result.out
    shown = run(["check", "--no-cache", "--show-settings", "."], root).out
    assert "[not read]" in shown and "SOLVER.AMP.ENABLED" in shown


def test_near_miss_the_loop_switches_its_own_autocast_by_the_setting(tmp_path):
    root = _project(tmp_path, forward=AUTOCAST_FORWARD)
    assert _modes(root)["plain_train_net.py"] == "fp16-mixed"
    result = run(["check", "--no-cache", "--extend-select", "AMP305", "--output-format", "concise",
                  "plain_train_net.py"], root)
    assert "AMP305" in result.out, result.out


def test_near_miss_a_trainer_the_loop_hands_the_model_to_reads_the_setting(tmp_path):
    hand_off = """
    import yaml
    from transformers import Trainer, TrainingArguments
    def main(model, data):
        cfg = yaml.safe_load(open("configs/base.yml"))
        Trainer(model=model, args=TrainingArguments("out", **cfg), train_dataset=data).train()
    """
    root = _project(tmp_path, config="amp: true\nlearning_rate: 0.1\n", extra={"hf_train.py": hand_off})
    assert _modes(root)["hf_train.py"] == "fp16-mixed"


def test_near_miss_a_launcher_script_naming_the_program_keeps_its_flag(tmp_path):
    root = _project(tmp_path, config="LR: 0.1\n", extra={"run.sh": "python plain_train_net.py --amp\n"})
    assert _modes(root)["plain_train_net.py"] == "fp16-mixed"


def test_lightnings_precision_is_read_by_its_trainer_not_by_a_plain_loop(tmp_path):
    # safari: standalone_cifar.py, a plain loop, beside the Hydra `trainer.precision: 16` configs of train.py
    lightning = """
    import pytorch_lightning as pl
    import yaml
    def main(module):
        cfg = yaml.safe_load(open("configs/base.yml"))
        pl.Trainer(**cfg["trainer"]).fit(module)
    """
    root = _project(tmp_path, config="trainer:\n  precision: 16\n  max_epochs: 3\n", extra={"pl_train.py": lightning})
    modes = _modes(root)
    assert modes["plain_train_net.py"] == "fp32"
    assert modes["pl_train.py"] == "fp16-mixed"  # near miss: the Trainer the setting is for
