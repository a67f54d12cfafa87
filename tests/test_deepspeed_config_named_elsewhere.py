"""A DeepSpeed JSON that some programs name in their code is read by their runs, not by a program beside it that never
names it (FlagAI's examples/vit_cifar100: `train_deepspeed.py` builds `Trainer(env_type="deepspeed",
deepspeed_config="./deepspeed.json")`; `train_single_gpu.py` beside it trains with env_type="pytorch" and no config).
Near misses: the program naming the JSON keeps it; a program reaching a shared module that names it keeps it; a JSON
no code names stays the evidence of the programs beside it."""
import textwrap

from amplint.project import Project
from cliutil import write_project

TRAINER = """
import deepspeed


class Trainer:
    def __init__(self, env_type="pytorch", fp16=False, deepspeed_config=None, lr=1e-4):
        self.env_type = env_type
        self.deepspeed_config = deepspeed_config

    def train(self, model, optimizer=None):
        if self.env_type == "deepspeed":
            model, optimizer, _, _ = deepspeed.initialize(model=model, optimizer=optimizer, config=self.deepspeed_config)
        for x in []:
            loss = model(x).sum()
            loss.backward()
            optimizer.step()
"""
PROGRAM = """
import torch

from mytrainer import Trainer
{extra}
trainer = Trainer({args})

if __name__ == "__main__":
    model = torch.nn.Linear(8, 8)
    trainer.train(model, optimizer=torch.optim.Adam(model.parameters(), lr=1e-4))
"""
DS = '{"train_micro_batch_size_per_gpu": 64, "fp16": {"enabled": true, "loss_scale": 0}, "zero_optimization": {"stage": 2}}\n'


def _modes(tmp_path, named=True, shared=False):
    ds_args = 'env_type="deepspeed", fp16=True, deepspeed_config="./deepspeed.json"' if named \
        else 'env_type="deepspeed", fp16=True'
    files = {
        "mytrainer.py": textwrap.dedent(TRAINER),
        "examples/vit/train_deepspeed.py": textwrap.dedent(PROGRAM).format(extra="", args=ds_args),
        "examples/vit/train_single_gpu.py": textwrap.dedent(PROGRAM).format(
            extra="from settings import DS_CONFIG\n" if shared else "", args='env_type="pytorch"'),
        "examples/vit/deepspeed.json": DS,
    }
    if shared:
        files["examples/vit/settings.py"] = 'DS_CONFIG = "deepspeed.json"\n'
    p = Project(write_project(tmp_path / "p", files))
    return {ep.display.split("/p/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}


def test_a_deepspeed_config_named_by_another_program_is_not_this_ones(tmp_path):
    modes = _modes(tmp_path)
    assert modes["examples/vit/train_deepspeed.py"] == "fp16-master", modes
    assert modes["examples/vit/train_single_gpu.py"] == "fp32", modes


def test_a_program_reaching_code_that_names_it_reads_it(tmp_path):
    modes = _modes(tmp_path, shared=True)
    assert modes["examples/vit/train_single_gpu.py"] == "fp16-master", modes


def test_a_config_no_code_names_is_the_evidence_of_the_programs_beside_it(tmp_path):
    modes = _modes(tmp_path, named=False)
    assert modes["examples/vit/train_single_gpu.py"] == "fp16-master", modes
