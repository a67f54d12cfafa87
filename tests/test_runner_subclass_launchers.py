"""A program that builds a subclass of a runner class whose inherited method hands the model to a trainer is that
training's entry point: FlagEmbedding's ``python -m FlagEmbedding.finetune...base`` runs a ``__main__.py`` that
builds ``EncoderOnlyEmbedderRunner(...)`` and calls ``run()``, which ``AbsRunner`` defines as
``self.trainer.train()`` (the Trainer built in ``__init__``). It was no entry point, so the ``__main__.py`` fell
back to the project's precision, taken from an unrelated research program's float16 loader (set 14 T14-1: AMP101
on ``TrainingArguments``' implicit ``adam_epsilon`` "on float16 parameters", x8)."""
import textwrap

from amplint.project import Project

from cliutil import hazard_findings, write_project

ABS_RUNNER = """
from dataclasses import dataclass, field
from transformers import TrainingArguments
@dataclass
class AbsTrainingArguments(TrainingArguments):
    temperature: float = field(default=0.02)
class AbsRunner:
    def __init__(self, model_name, training_args):
        self.model_name = model_name
        self.training_args = training_args
        self.model = self.load_model()
        self.trainer = self.load_trainer()
    def load_model(self):
        raise NotImplementedError
    def load_trainer(self):
        raise NotImplementedError
    def run(self):
        self.trainer.train()
        self.trainer.save_model()
"""

RUNNER = """
from transformers import AutoModel, Trainer
from pkg.abc import AbsRunner
class EmbedderRunner(AbsRunner):
    def load_model(self):
        return AutoModel.from_pretrained(self.model_name)
    def load_trainer(self):
        return Trainer(model=self.model, args=self.training_args)
"""

MAIN = """
import sys
from transformers import HfArgumentParser
from pkg.finetune.base import EmbedderRunner, EmbedderTrainingArguments
def main():
    parser = HfArgumentParser((EmbedderTrainingArguments,))
    (training_args,) = parser.parse_args_into_dataclasses()
    runner = EmbedderRunner(sys.argv[1], training_args)
    runner.run()
if __name__ == "__main__":
    main()
"""

# another program of the repository that trains a float16 model
OTHER = """
import torch
from transformers import AutoModelForCausalLM, HfArgumentParser, Trainer, TrainingArguments
def main():
    (training_args,) = HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()
    model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch.float16)
    Trainer(model=model, args=training_args).train()
if __name__ == "__main__":
    main()
"""

FILES = {
    "pkg/__init__.py": "",
    "pkg/abc/__init__.py": "from .runner import AbsRunner, AbsTrainingArguments\n",
    "pkg/abc/runner.py": ABS_RUNNER,
    "pkg/finetune/__init__.py": "",
    "pkg/finetune/base/__init__.py": "from pkg.abc import AbsTrainingArguments as EmbedderTrainingArguments\n"
                                     "from .runner import EmbedderRunner\n",
    "pkg/finetune/base/runner.py": RUNNER,
    "pkg/finetune/base/__main__.py": MAIN,
    "research/other/train.py": OTHER,
}


def _project(tmp_path, files):
    return write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()})


def _entry_points(root):
    p = Project(root)
    return {p.relative(ep.path): ep for ep in p.entry_points()}


def test_a_program_building_a_runner_subclass_runs_its_inherited_training(tmp_path):
    root = _project(tmp_path, FILES)
    eps = _entry_points(root)
    main = eps["pkg/finetune/base/__main__.py"]
    assert "pkg/finetune/base/runner.py" in {Project(root).relative(f) for f in main.reach}
    assert Project(root).regime_for(root / "pkg" / "finetune" / "base" / "__main__.py").mode == "fp32"
    found = hazard_findings(root)
    assert ("pkg/finetune/base/__main__.py", "AMP101") not in found
    assert ("research/other/train.py", "AMP101") in found  # the float16 program keeps its finding


def test_near_miss_a_subclass_overriding_the_method_does_not_run_the_base_training(tmp_path):
    files = {**FILES, "pkg/finetune/base/runner.py": RUNNER + "    def run(self):\n        print(self.model)\n"}
    root = _project(tmp_path, files)
    assert "pkg/finetune/base/__main__.py" not in _entry_points(root)


# FlagEmbedding's examples/finetune/embedder/encoder_only/base.sh runs that program by its module name, with
# the Trainer's flags (`torchrun --nproc_per_node $n -m FlagEmbedding.finetune.embedder.encoder_only.base ...
# --fp16 ...`): `-m pkg.mod` runs pkg/mod/__main__.py (or pkg/mod.py), and the flags are that program's.
LAUNCH = '''
training_args="\\
    --output_dir ./out \\
    --fp16 \\
"
cmd="torchrun --nproc_per_node 2 \\
    -m {module} \\
    $training_args \\
"
eval $cmd
'''


def _main_mode(tmp_path, files):
    root = _project(tmp_path, files)
    return Project(root).regime_for(root / "pkg" / "finetune" / "base" / "__main__.py").mode


def test_a_launcher_running_the_program_by_module_name_gives_it_its_flags(tmp_path):
    files = {**FILES, "examples/finetune/base.sh": LAUNCH.format(module="pkg.finetune.base")}
    assert _main_mode(tmp_path, files) == "fp16-mixed"
    # the program as a module file (``-m pkg.finetune.base`` with pkg/finetune/base.py) is the same program
    single = {k.replace("pkg/finetune/base/__main__.py", "pkg/finetune/base_main.py"): v for k, v in files.items()}
    single["examples/finetune/base.sh"] = LAUNCH.format(module="pkg.finetune.base_main")
    root = _project(tmp_path / "single", single)
    assert Project(root).regime_for(root / "pkg" / "finetune" / "base_main.py").mode == "fp16-mixed"


def test_near_miss_a_launcher_running_another_module_leaves_the_program_alone(tmp_path):
    other = {**FILES, "pkg/finetune/other.py": MAIN, "examples/finetune/other.sh": LAUNCH.format(module="pkg.finetune.other")}
    assert _main_mode(tmp_path, other) == "fp32"


def test_near_miss_a_module_of_no_project_file_names_no_program(tmp_path):
    # `python -m pip install -e .` beside `accelerate launch --mixed_precision fp16 $SCRIPT`: the script still names no
    # program of the project, so its flags stay with the programs around it
    files = {**FILES, "research/other/run.sh": "python -m pip install -e .\naccelerate launch --mixed_precision fp16 $SCRIPT\n",
             "research/other/train.py": OTHER.replace("torch_dtype=torch.float16", "torch_dtype=torch.float32")}
    root = _project(tmp_path, files)
    assert Project(root).regime_for(root / "research" / "other" / "train.py").mode == "fp16-mixed"
