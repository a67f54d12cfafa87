"""MosaicML composer's precisions (`Trainer(precision="amp_fp16")`, or an llm-foundry-style YAML's `precision: amp_bf16`
handed to `Trainer(precision=cfg.precision)`: LLM-Shearing, triage P22-3) are its autocast: fp16 mixed precision /
bf16. Near miss: `precision: fp32` says float32."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

TRAIN = """
import sys

import torch
from composer import Trainer
from composer.models import HuggingFaceModel
from omegaconf import OmegaConf as om
from transformers import AutoModelForCausalLM


def main(cfg):
    model = HuggingFaceModel(AutoModelForCausalLM.from_pretrained(cfg.model_name))
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.lr)
    trainer = Trainer(model=model, optimizers=optimizer, max_duration=cfg.max_duration, precision={precision})
    trainer.fit()


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        yaml_cfg = om.load(f)
    main(om.merge(yaml_cfg, om.from_cli(sys.argv[2:])))
"""
YAML = "model_name: m\nlr: 1e-4\nmax_duration: 3200ba\nprecision: {value}\n"


@pytest.mark.parametrize("precision, value, mode", [
    ("cfg.precision", "amp_bf16", "bf16"),  # LLM-Shearing (P22-3)
    ("cfg.precision", "amp_fp16", "fp16-mixed"),
    ('"amp_fp16"', "fp32", "fp16-mixed"),  # the trainer's own literal
    ("cfg.precision", "fp32", "fp32"),  # near miss
])
def test_composer_precisions_are_its_autocast(tmp_path, precision, value, mode):
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN).format(precision=precision),
                                          "configs/1.3b.yaml": YAML.format(value=value),
                                          "scripts/pretrain.sh": "composer train.py configs/1.3b.yaml lr=1e-4\n"})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
