"""A model class loading float16 by a string option (`DenseRetriever(**asdict(model_args))` with `dtype="fp16"` the
field's default and `elif dtype == "fp16": dtype = torch.float16`), trained by the Hugging Face Trainer with the
DeepSpeed JSON the launch script passes (`--deepspeed ds/stage0.json`, `"fp16": {"enabled": "auto"}`): DeepSpeed's
fp16 engine keeps float32 master weights, so AdamW's eps is not on float16 parameters (FlagEmbedding's llm_embedder,
triage T14-3). Near misses: a launcher that does not pass the JSON (pure fp16, AMP101 stays); a bf16 default (the
float16 load is not this program's)."""
import textwrap

from amplint.project import Project
from cliutil import hazard_findings, write_project

ARGS = """
from dataclasses import dataclass, field

from transformers import TrainingArguments


@dataclass
class RetrievalArgs:
    query_encoder: str = field(default="BAAI/bge-base-en")
    dtype: str = field(default="{default}")


@dataclass
class RetrievalTrainingArgs(TrainingArguments):
    fp16: bool = field(default=True)
"""
MODELING = """
import torch
import torch.nn as nn
from transformers import AutoModel


class DenseRetriever(nn.Module):
    def __init__(self, query_encoder, dtype="{default}", **kwargs):
        super().__init__()
        if dtype == "bf16":
            dtype = torch.bfloat16
        elif dtype == "fp16":
            dtype = torch.float16
        else:
            dtype = torch.float32
        self.encoder = AutoModel.from_pretrained(query_encoder, torch_dtype=dtype)

    def forward(self, **inputs):
        return self.encoder(**inputs).last_hidden_state[:, 0]
"""
RUN = """
from dataclasses import asdict

from transformers import HfArgumentParser, Trainer

from retrieval.args import RetrievalArgs, RetrievalTrainingArgs
from retrieval.modeling import DenseRetriever


def main():
    parser = HfArgumentParser((RetrievalArgs, RetrievalTrainingArgs))
    model_args, training_args = parser.parse_args_into_dataclasses()
    model = DenseRetriever(**asdict(model_args))
    Trainer(model=model, args=training_args).train()


if __name__ == "__main__":
    main()
"""
DS = """{
    "fp16": {"enabled": "auto", "loss_scale": 0},
    "bf16": {"enabled": "auto"},
    "zero_optimization": {"stage": 0},
    "train_micro_batch_size_per_gpu": "auto"
}
"""


def _check(tmp_path, default="fp16", deepspeed=True):
    flags = "--deepspeed ds/stage0.json" if deepspeed else ""
    root = write_project(tmp_path / "p", {
        "retrieval/__init__.py": "",
        "retrieval/args.py": textwrap.dedent(ARGS).format(default=default),
        "retrieval/modeling.py": textwrap.dedent(MODELING).format(default=default),
        "run_dense.py": textwrap.dedent(RUN),
        "ds/stage0.json": DS,
        "scripts/train.sh": f"torchrun --nproc_per_node=8 run_dense.py --output_dir out {flags} --learning_rate 5e-6\n",
    })
    p = Project(root)
    modes = {ep.display.rsplit("/", 1)[-1]: p.regime_for(ep.path).mode for ep in p.entry_points()}
    return modes, {code for _, code in hazard_findings(root)}


def test_a_half_load_trained_by_deepspeed_fp16_keeps_master_weights(tmp_path):
    modes, codes = _check(tmp_path)
    assert modes == {"run_dense.py": "fp16-master"}, modes
    assert "AMP101" not in codes, codes


def test_without_the_deepspeed_config_the_half_load_is_pure_fp16(tmp_path):
    modes, codes = _check(tmp_path, deepspeed=False)
    assert modes == {"run_dense.py": "fp16"}, modes
    assert "AMP101" in codes, codes


def test_a_bf16_default_takes_no_float16_branch(tmp_path):
    modes, codes = _check(tmp_path, default="bf16")
    assert modes["run_dense.py"] != "fp16", modes
    assert "AMP101" not in codes, codes
