"""A loader whose dtype is picked by a string parameter (FlagEmbedding's activation_beacon, triage T14-2):
`def get_model(name, dtype="bf16")` loading `torch_dtype=torch.float16` only `elif dtype == "fp16":`, called as
`get_model(name, dtype=model_args.dtype)` with the option a dataclass field defaulting to "bf16" that no launcher
changes: the float16 branch is not this program's run, so the Trainer's AdamW eps is not on float16 parameters.
Near misses: a launcher passing `--dtype fp16`, a call passing "fp16" itself, a default of "fp16"."""
import textwrap

import pytest

from amplint.project import Project
from cliutil import hazard_findings, write_project

LOADER = """
import torch
from transformers import AutoModelForCausalLM


def get_model(model_name, dtype="{default}"):
    if dtype == "bf16":
        torch_dtype = torch.bfloat16
    elif dtype == "fp16":
        torch_dtype = torch.float16
    else:
        torch_dtype = torch.float32
    return AutoModelForCausalLM.from_pretrained(model_name, torch_dtype=torch_dtype)
"""
TRAIN = """
from dataclasses import dataclass, field

from transformers import HfArgumentParser, Trainer, TrainingArguments

from lib import get_model


@dataclass
class ModelArgs:
    model_name: str = field(default="meta-llama/Llama-2-7b-hf")
    dtype: str = field(default="{option}")


def main():
    parser = HfArgumentParser((ModelArgs, TrainingArguments))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = get_model(model_args.model_name, {passed})
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
SCRIPT = "torchrun --nproc_per_node 8 train.py --model_name meta-llama/Llama-2-7b-hf {flags} --output_dir out\n"


def _check(tmp_path, default="bf16", option="bf16", passed="dtype=model_args.dtype", flags="--bf16"):
    root = write_project(tmp_path / "p", {
        "lib/__init__.py": textwrap.dedent(LOADER).format(default=default),
        "train.py": textwrap.dedent(TRAIN).format(option=option, passed=passed),
        "train.sh": SCRIPT.format(flags=flags),
    })
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    return modes, {code for _, code in hazard_findings(root)}


def test_an_option_left_at_bf16_does_not_take_the_float16_branch(tmp_path):
    modes, codes = _check(tmp_path)
    assert modes == {"train.py": "bf16"}, modes
    assert "AMP101" not in codes, codes


def test_the_parameter_default_when_the_call_passes_nothing(tmp_path):
    modes, codes = _check(tmp_path, passed="", flags="")
    assert modes == {"train.py": "fp32"}, modes
    assert "AMP101" not in codes, codes


@pytest.mark.parametrize("kwargs", [
    dict(flags="--dtype fp16"),  # the launcher picks the float16 branch
    dict(passed='dtype="fp16"', flags=""),  # the call does
    dict(default="fp16", passed="", flags=""),  # the parameter's default does
    dict(passed="dtype=str(model_args.dtype)", flags=""),  # a value that is not read: the branch may be taken
])
def test_a_run_that_takes_the_float16_branch_keeps_it(tmp_path, kwargs):
    modes, codes = _check(tmp_path, **kwargs)
    assert modes == {"train.py": "fp16"}, modes
    assert "AMP101" in codes, codes


# the real shape: the loader takes the options object and reads the dtype by its key
LOADER_BY_KEY = """
from dataclasses import asdict

import torch
from transformers import AutoModelForCausalLM


def get_model(model_args):
    model_args_dict = asdict(model_args)
    dtype = model_args_dict["dtype"]
    if dtype == "bf16":
        dtype = torch.bfloat16
    elif dtype == "fp16":
        dtype = torch.float16
    else:
        dtype = torch.float32
    return AutoModelForCausalLM.from_pretrained(model_args_dict["model_name"], torch_dtype=dtype)
"""


@pytest.mark.parametrize("flags, mode", [("--bf16", "bf16"), ("--dtype fp16", "fp16")])
def test_a_dtype_read_from_the_options_by_its_key(tmp_path, flags, mode):
    root = write_project(tmp_path / "p", {
        "lib/__init__.py": textwrap.dedent(LOADER_BY_KEY),
        "train.py": textwrap.dedent(TRAIN).format(option="bf16", passed="").replace(
            "get_model(model_args.model_name, )", "get_model(model_args)"),
        "train.sh": SCRIPT.format(flags=flags),
    })
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    assert modes == {"train.py": mode}, modes
    assert ("AMP101" in {code for _, code in hazard_findings(root)}) is (mode == "fp16")
