"""A model loaded with a dtype looked up by a command-line option's string (the Hugging Face scripts'
`torch_dtype = args.torch_dtype if args.torch_dtype in ["auto", None] else getattr(torch, args.torch_dtype)`
then `from_pretrained(..., torch_dtype=torch_dtype)`) has the dtype that option has in the program's runs: the
value the repository's launcher script passes (`--torch_dtype float16`), else the option's default. A DeepSpeed
config that no launcher script of the program passes is not its run's. (docs/precision.md, "Evidence in
configuration files"; held-out bug B43, MedicalGPT's dpo_training.py, fixed upstream by casting the trainable
parameters back to float32.)"""
import textwrap

from cliutil import run, write_project

TRAIN = """
from dataclasses import dataclass, field
from typing import Optional
import torch
from transformers import AutoConfig, AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments


@dataclass
class ScriptArguments:
    model_name_or_path: str = field(default="gpt2")
    torch_dtype: Optional[str] = field(default={default}, metadata={"choices": ["auto", "bfloat16", "float16"]})
    fp16: bool = field(default=False)


def main():
    args = HfArgumentParser(ScriptArguments).parse_args_into_dataclasses()[0]
    torch_dtype = args.torch_dtype if args.torch_dtype in ["auto", None] else getattr(torch, args.torch_dtype)
    config = AutoConfig.from_pretrained(args.model_name_or_path, torch_dtype=torch_dtype)
    model = AutoModelForCausalLM.from_pretrained(args.model_name_or_path, config=config, torch_dtype=torch_dtype)
    {recast}
    training_args = TrainingArguments(output_dir="out", fp16=args.fp16)
    trainer = Trainer(model=model, args=training_args, train_dataset=[])
    trainer.train()


if __name__ == "__main__":
    main()
"""
RECAST = """for param in filter(lambda p: p.requires_grad, model.parameters()):
        param.data = param.data.to(torch.float32)"""
DEEPSPEED = '{"fp16": {"enabled": true}, "zero_optimization": {"stage": 2}, "train_batch_size": "auto"}'


def _amp101(tmp_path, script=None, default="None", recast="", extra=None):
    files = {"train.py": TRAIN.replace("{default}", default).replace("{recast}", recast)}
    if script is not None:
        files["run.sh"] = f"python train.py --model_name_or_path gpt2 {script}\n"
    files.update(extra or {})
    root = write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})
    result = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "."], root)
    return [line for line in result.out.splitlines() if "AMP101" in line]


def test_the_run_scripts_float16_makes_the_parameters_half(tmp_path):
    found = _amp101(tmp_path, "--torch_dtype float16 --fp16 True")
    assert len(found) == 1 and "TrainingArguments with the default adam_epsilon" in found[0]
    # the evidence is the model's load, not the config's
    assert "`AutoModelForCausalLM.from_pretrained(" in found[0]


def test_a_half_default_without_a_script(tmp_path):
    assert len(_amp101(tmp_path, default='"float16"')) == 1


def test_no_value_or_a_float32_value_is_no_evidence(tmp_path):
    # near misses: the option left at None (float32 parameters), or the script passing float32 / bfloat16
    assert _amp101(tmp_path / "none", "--fp16 True") == []
    assert _amp101(tmp_path / "fp32", "--torch_dtype float32 --fp16 True") == []
    assert _amp101(tmp_path / "auto", "--torch_dtype=auto --fp16 True") == []


def test_a_script_naming_another_program_says_nothing(tmp_path):
    files = {"other.sh": "python evaluate.py --torch_dtype float16\n"}
    assert _amp101(tmp_path, "--fp16 True", extra=files) == []


def test_trainable_parameters_cast_back_to_float32(tmp_path):
    # the upstream fix: the parameters that train are float32 again (activations stay float16)
    assert _amp101(tmp_path, "--torch_dtype float16 --fp16 True", recast=RECAST) == []


def _settings(tmp_path, script, files):
    files = {"train.py": TRAIN.replace("{default}", "None").replace("{recast}", ""),
             "run.sh": f"python train.py {script}\n", **files}
    root = write_project(tmp_path, {k: textwrap.dedent(v) for k, v in files.items()})
    out = run(["check", "--no-cache", "--show-settings", "."], root).out
    return [line.strip() for line in out.splitlines() if "ds_zero2.json" in line]


def test_a_deepspeed_config_no_launcher_passes_is_not_the_run(tmp_path):
    files = {"ds_zero2.json": DEEPSPEED}
    unused = _settings(tmp_path / "unused", "--torch_dtype float16 --fp16 True", files)
    assert unused and all("[not read]" in line for line in unused)
    # near misses: the launcher passes it; a program no launcher script names keeps the configs beside it
    used = _settings(tmp_path / "used", "--fp16 True --deepspeed ds_zero2.json", files)
    assert used and not any("[not read]" in line for line in used)
    unnamed = _settings(tmp_path / "unnamed", "--fp16 True", {**files, "run.sh": "echo nothing to run\n"})
    assert unnamed and not any("[not read]" in line for line in unnamed)


def test_a_deepspeed_config_named_by_another_config_or_the_program_is_read(tmp_path):
    # near misses: a YAML the launcher passes names it (`deepspeed: ds_zero2.json`); the program names it itself
    files = {"ds_zero2.json": DEEPSPEED, "args.yaml": "deepspeed: ds_zero2.json\nfp16: true\n"}
    named = _settings(tmp_path / "yaml", "args.yaml", files)
    assert named and not any("[not read]" in line for line in named)


def test_a_half_load_under_deepspeeds_fp16_keeps_float32_master_weights(tmp_path):
    files = {"ds_zero2.json": DEEPSPEED}
    assert _amp101(tmp_path, "--torch_dtype float16 --fp16 True --deepspeed ds_zero2.json", extra=files) == []


def test_a_scripts_options_are_those_of_the_command_running_the_program(tmp_path):
    # one script runs train.py in bfloat16 and an export program in float16: the float16 is not train.py's run
    # (string options per command, like the switches)
    script = "--torch_dtype bfloat16\npython export.py --torch_dtype float16"
    assert _amp101(tmp_path, script, extra={"export.py": "print('export')\n"}) == []
    # near miss: the command running train.py passes float16
    script = "--torch_dtype float16\npython export.py --torch_dtype bfloat16"
    assert len(_amp101(tmp_path / "near", script, extra={"export.py": "print('export')\n"})) == 1
