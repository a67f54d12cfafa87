"""A half cast after `get_peft_model` reaches the adapters it added, which train (ChatGLM-Efficient-Tuning's
`load_pretrained`: freeze the base, `get_peft_model`, then `model.half()`): the Hugging Face Trainer's AdamW steps
float16 parameters, and its implicit adam_epsilon=1e-8 is AMP101, also when the TrainingArguments come from
`HfArgumentParser(...).parse_args_into_dataclasses()` (the command line's, 1e-8 unless `--adam_epsilon` is given;
the launcher scripts that run the program are read for it). (docs/precision.md, "Evidence and its roles";
held-out bug B51.)"""
import textwrap

from cliutil import run, write_project

TRAIN = """
from peft import LoraConfig, get_peft_model
from transformers import AutoModel, HfArgumentParser, Trainer, TrainingArguments


def load_model():
    model = AutoModel.from_pretrained("THUDM/chatglm-6b", trust_remote_code=True)
    for param in model.parameters():
        param.requires_grad_(False)
    {order}
    return model


def main():
    parser = HfArgumentParser((TrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    model = load_model()
    trainer = Trainer(model=model, args=training_args, train_dataset=None)
    trainer.train()


if __name__ == "__main__":
    main()
"""
AFTER = """model = get_peft_model(model, LoraConfig(r=8, target_modules=["query_key_value"]))
    model = model.half()"""
BEFORE = """model = model.half()
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["query_key_value"]))"""


def _amp101(tmp_path, order=AFTER, script=None):
    files = {"train.py": TRAIN.replace("{order}", order)}
    if script is not None:
        files["run.sh"] = f"python train.py --output_dir out {script}\n"
    root = write_project(tmp_path, {k: textwrap.dedent(v) for k, v in files.items()})
    result = run(["check", "--no-cache", "--output-format", "concise", "--select", "AMP101", "."], root)
    return [line for line in result.out.splitlines() if "AMP101" in line]


def test_a_half_cast_after_get_peft_model_makes_the_adapters_half(tmp_path):
    found = _amp101(tmp_path)
    assert len(found) == 1 and "TrainingArguments parsed from the command line" in found[0]


def test_near_misses(tmp_path):
    # the base cast before the adapters exist (peft adds them in float32); the launcher passes a safe eps or
    # an optimizer without eps
    assert _amp101(tmp_path / "before", order=BEFORE) == []
    assert _amp101(tmp_path / "eps", script="--adam_epsilon 1e-4") == []
    assert _amp101(tmp_path / "optim", script="--optim adafactor") == []
    assert len(_amp101(tmp_path / "small", script="--adam_epsilon 1e-8")) == 1
