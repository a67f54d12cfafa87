"""The commands a project documents in Markdown (a README's, docs/*.md, examples/**/*.md fenced shell blocks) are its
runs, read like a shell launcher's, command by command: tevatron's drivers are run only from READMEs, with `--bf16`
and DeepSpeed JSONs whose precision blocks are "auto" (= the trainer's --fp16 / --bf16): bf16, not float16 (triage
T19-3, 6 FPs on set 19). Near misses: the same README passing `--fp16` keeps float16 (and AMP101 at the program's
TrainingArguments); a flag in prose, in a ```python block, or in another program's command is not this run's."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

TRAIN = """
from dataclasses import dataclass, field

import torch
from transformers import AutoModel, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ModelArguments:
    model_name_or_path: str = field(default="some/vlm")


def main():
    parser = HfArgumentParser((ModelArguments, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    if training_args.bf16:
        torch_dtype = torch.bfloat16
    elif training_args.fp16:
        torch_dtype = torch.float16
    else:
        torch_dtype = torch.float32
    model = AutoModel.from_pretrained(model_args.model_name_or_path, torch_dtype=torch_dtype)
    Trainer(model=model, args=training_args, train_dataset=None).train()


if __name__ == "__main__":
    main()
"""
DS = """{
  "zero_optimization": {"stage": 3},
  "fp16": {"enabled": "auto", "loss_scale": 0, "initial_scale_power": 10},
  "bf16": {"enabled": "auto"}
}
"""
README = """# A retriever

Train it (use `--fp16` on older GPUs):

```bash
{command} \\
  --output_dir out \\
  --model_name_or_path some/vlm \\
  --per_device_train_batch_size 8
```
"""


def project(tmp_path, command, readme="README.md", extra=None):
    files = {"train.py": textwrap.dedent(TRAIN), "ds_zero3_config.json": DS,
             readme: README.replace("{command}", command), **(extra or {})}
    return write_project(tmp_path / "p", files)


def mode_of(root, program="train.py"):
    p = Project(root)
    (ep,) = [e for e in p.entry_points() if e.path.name == program]
    return p.regime_for(ep.path).mode


@pytest.mark.parametrize("command, mode, amp101", [
    # tevatron's DSE README: the "auto" blocks take the command's --bf16
    ("deepspeed --include localhost:0,1 train.py --deepspeed ds_zero3_config.json --bf16", "bf16", False),
    ("python train.py --bf16", "bf16", False),
    # near misses: the documented --fp16 run loads the model in float16 and steps it with the Trainer's AdamW
    # (tevatron's BERT retriever, the set's one TP); under DeepSpeed fp16 its optimizer keeps float32 master weights
    ("python train.py --fp16", "fp16", True),
    ("deepspeed train.py --deepspeed ds_zero3_config.json --fp16", "fp16-master", False),
])
def test_a_readme_command_is_the_programs_run(tmp_path, command, mode, amp101):
    root = project(tmp_path, command)
    assert mode_of(root) == mode
    r = run(["check", "--no-cache", "--select", "AMP101", "."], root)
    assert ("train.py:" in r.out and "AMP101" in r.out) is amp101, r.out


def test_auto_blocks_follow_the_command_that_passes_the_config(tmp_path):
    # the command passes the config and neither flag: DeepSpeed runs both "auto" blocks off
    root = project(tmp_path, "deepspeed train.py --deepspeed ds_zero3_config.json")
    p = Project(root)
    (ep,) = p.entry_points()
    assert not any(ev.path.endswith(".json") for _, ev in ep.signals)
    assert {where.split("`")[1] for role, where, _ in ep.roles if role == "not read"} >= {"fp16.enabled", "bf16.enabled"}


@pytest.mark.parametrize("readme", ["docs/training.md", "examples/example_dse.md", "examples/dse/README.md"])
def test_documentation_pages_are_read(tmp_path, readme):
    command = "python train.py --bf16" if readme.startswith("examples/dse") else "python -m train --bf16"
    assert mode_of(project(tmp_path, command, readme=readme)) == "bf16"


def test_flags_outside_a_shell_block_are_not_a_run(tmp_path):
    # the command's --bf16 is in a ```python block (an example of calling the API), the --fp16 in prose: neither is
    # a documented run, so the program stays what its own code and the config say (float16 first: one of)
    readme = "# Use\n\nPass `--fp16` to train faster.\n\n```python\nos.system('python train.py --bf16')\n```\n"
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN), "ds_zero3_config.json": DS,
                                          "README.md": readme})
    p = Project(root)
    (ep,) = p.entry_points()
    assert not any(ev.path.endswith("README.md") for _, ev in ep.signals)
    assert p.regime_for(ep.path).mode != "bf16"


def test_a_flag_belongs_to_its_own_command(tmp_path):
    # one page documents two programs: encode.py's --fp16 is not train.py's run
    other = textwrap.dedent(TRAIN).replace("def main", "def encode_main").replace("main()", "encode_main()")
    readme = ("# Runs\n\n```bash\npython train.py \\\n  --bf16 \\\n  --output_dir out\n\n"
              "python encode.py \\\n  --fp16 \\\n  --output_dir emb\n```\n")
    root = write_project(tmp_path / "p", {"train.py": textwrap.dedent(TRAIN), "encode.py": other, "README.md": readme})
    assert mode_of(root) == "bf16"
    assert mode_of(root, "encode.py") == "fp16"
