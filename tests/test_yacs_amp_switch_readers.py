"""A detectron2 / yacs config's `SOLVER: AMP: ENABLED: True` is read only by programs that read such configs
(detectron2's `DefaultTrainer` builds its AMP trainer from it): LongLoRA's `pdf2txt/configs/Base-RCNN-FPN.yaml`, the
config of a PDF layout helper, is no setting of the Hugging Face fine-tuning script above it (triage P22-1: judged
fp16-mixed instead of bf16). Near miss: a detectron2 `train_net.py` that reads the config keeps it."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import write_project

FINE_TUNE = """
import torch
import transformers


def train():
    parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.bfloat16)
    transformers.Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    train()
"""
README = """# fine-tune

```
torchrun --nproc_per_node=8 fine_tune.py --bf16 True --output_dir out
```
"""
YAML = """MODEL:
  META_ARCHITECTURE: "GeneralizedRCNN"
SOLVER:
  BASE_LR: 0.02
  AMP:
    ENABLED: True
"""
TRAIN_NET = """
from detectron2.config import get_cfg
from detectron2.engine import DefaultTrainer, default_argument_parser


def main(args):
    cfg = get_cfg()
    cfg.merge_from_file(args.config_file)
    trainer = DefaultTrainer(cfg)
    return trainer.train()


if __name__ == "__main__":
    main(default_argument_parser().parse_args())
"""


@pytest.mark.parametrize("program, source, mode", [
    ("fine_tune.py", FINE_TUNE, "bf16"),  # LongLoRA (P22-1)
    ("train_net.py", TRAIN_NET, "fp16-mixed"),  # near miss: a program reading the config
])
def test_a_yacs_amp_switch_is_read_by_programs_reading_such_configs(tmp_path, program, source, mode):
    root = write_project(tmp_path / "p", {program: textwrap.dedent(source), "README.md": README,
                                          "tools/configs/Base-RCNN-FPN.yaml": YAML})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
