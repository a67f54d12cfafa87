"""DeepSpeed ``"fp16": {"enabled": "auto"}`` / ``"bf16": {"enabled": "auto"}`` blocks follow the Hugging
Face trainer's flags: a launcher passing ``--bf16 True`` trains in bf16 (InternVL: triage T7-2, 2 FPs on
bf16 code judged under fp16 master weights); one passing the config with neither flag trains in float32 (T19-3)."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import run, write_project

DS = """{
  "zero_optimization": {"stage": 1},
  "fp16": {"enabled": "auto", "loss_scale": 0},
  "bf16": {"enabled": "auto"}
}
"""
TRAIN = """
import transformers

def main():
    parser = transformers.HfArgumentParser(transformers.TrainingArguments)
    (args,) = parser.parse_args_into_dataclasses()
    model = transformers.AutoModelForCausalLM.from_pretrained("m")
    transformers.Trainer(model=model, args=args).train()

if __name__ == "__main__":
    main()
"""
SH = "torchrun finetune.py --output_dir out {flag} --deepspeed ds_config.json\n"


@pytest.mark.parametrize("flag, mode", [
    ("--bf16 True", "bf16"),
    ("--fp16 True", "fp16-master"),
    # the command passing the config passes neither flag: both "auto" blocks off, as Hugging Face runs them
    ("", "fp32"),
])
def test_auto_blocks_follow_the_launchers_flag(tmp_path, flag, mode):
    root = write_project(tmp_path / "p", {"ds_config.json": DS, "finetune.py": textwrap.dedent(TRAIN),
                                          "finetune.sh": SH.format(flag=flag)})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode, flag


COMPUTE_DTYPE = """
import torch
import transformers

def train():
    parser = transformers.HfArgumentParser(transformers.TrainingArguments)
    (training_args,) = parser.parse_args_into_dataclasses()
    compute_dtype = (
        torch.float16
        if training_args.fp16
        else (torch.bfloat16 if training_args.bf16 else torch.float32)
    )
    model = transformers.AutoModel.from_pretrained("m", torch_dtype=compute_dtype)
    transformers.Trainer(model=model, args=training_args).train()

if __name__ == "__main__":
    train()
"""


@pytest.mark.parametrize("launch, mode, amp101", [
    # MiniCPM-V's finetune_lora.sh (T11-1): the cast switched by the trainer's --fp16 is taken in DeepSpeed's fp16
    # runs, whose optimizer keeps float32 master weights
    ("--fp16 true --deepspeed ds_config.json", "fp16-master", False),
    # near miss: the same program run without DeepSpeed steps the float16 parameters with the Trainer's AdamW
    ("--fp16 true", "fp16", True),
])
def test_a_cast_switched_by_the_fp16_flag_trains_under_deepspeed_fp16(tmp_path, launch, mode, amp101):
    root = write_project(tmp_path / "p", {"ds_config.json": DS, "finetune.py": textwrap.dedent(COMPUTE_DTYPE),
                                          "finetune_lora.sh": f"torchrun finetune.py --output_dir out {launch}\n"})
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
    r = run(["check", "--no-cache", "--select", "AMP101", "."], root)
    assert ("AMP101" in r.out) is amp101, r.out


def test_a_cast_switched_by_more_than_the_fp16_flag_is_not_deepspeeds(tmp_path):
    # near miss: `if args.fp16 and not args.deepspeed: model.half()` is taken only in runs without DeepSpeed:
    # not marked as DeepSpeed's master-weight run (kept pure half, as before)
    src = textwrap.dedent(COMPUTE_DTYPE).replace("if training_args.fp16\n",
                                                 "if training_args.fp16 and not training_args.deepspeed\n")
    root = write_project(tmp_path / "p", {"ds_config.json": DS, "finetune.py": src,
                                          "finetune_lora.sh": "torchrun finetune.py --fp16 true --deepspeed ds_config.json\n"})
    p = Project(root)
    (ep,) = p.entry_points()
    assert not any(sig.master for sig, _ in ep.signals if sig.kind == "half_params")


README = """# repro

```bash
python -m torch.distributed.launch --nproc_per_node 4 finetune.py --output_dir out --do_train
```

```bash
deepspeed finetune.py --deepspeed deepspeed/ds_config_zero2.json --output_dir out --do_train{zero2_flag}
```
"""


@pytest.mark.parametrize("zero2_flag, sh, mode", [
    # UnifiedSKG (P21-1): zero1 / zero3 passed by no command, and no command passes --fp16: "auto" says nothing
    ("", None, "fp32"),
    # near misses: a command passes --fp16 (with the passed config); a launcher forwards its own arguments ("$@",
    # which may hold --fp16 and --deepspeed ds_config_zero3.json): the unpassed configs stay float16 evidence
    (" --fp16", None, "fp16-master"),
    ("", 'deepspeed finetune.py --output_dir out "$@"\n', "fp16-master"),
])
def test_an_auto_config_no_command_passes_follows_the_commands_flags(tmp_path, zero2_flag, sh, mode):
    ds = '{"fp16": {"enabled": "auto", "loss_scale": 0}, "zero_optimization": {"stage": %d}}\n'
    files = {"README.md": README.format(zero2_flag=zero2_flag), "finetune.py": textwrap.dedent(TRAIN),
             **{f"deepspeed/ds_config_zero{i}.json": ds % i for i in (1, 2, 3)}}
    if sh:
        files["run.sh"] = sh
    root = write_project(tmp_path / "p", files)
    p = Project(root)
    (ep,) = p.entry_points()
    assert p.regime_for(ep.path).mode == mode
    if mode == "fp32":
        r = run(["check", "--no-cache", "--show-settings", "."], root)
        assert ("ds_config_zero3.json:1 [not read] (\"auto\" takes the trainer's --fp16, which no command running "
                "this program passes (README.md))") in r.out, r.out
