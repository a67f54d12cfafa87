"""Rule gaps seen in real bugs: shapes each rule must see, with the near misses beside them."""
import textwrap

import pytest

from conftest import HALF_TRAINING
from training_util import fixed, found, lines

MIXED_LOOP = """
    import torch
    def train(model, loader, optimizer):
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x).sum()
            CHECK
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    """


def loop_with(check):
    return MIXED_LOOP.replace("CHECK", textwrap.indent(textwrap.dedent(check), " " * 12).strip())


# ---- AMP102: ``x += eps`` is a guard -----------------------------------------------------------
AUG = """
    import torch
    def f(x):
        with torch.autocast("cuda"):
            n = x @ x.T
            n += EPS
            return x / n
    """


def test_augmented_guard_is_a_guard():
    out = found("AMP102", AUG.replace("EPS", "1e-8"))
    assert [line for line, _ in out] == [6]
    assert "1e-8 guards a float16 denominator" in out[0][1]
    assert "n += 1e-4" in fixed(AUG.replace("EPS", "1e-8"), unsafe=True)


@pytest.mark.parametrize("name, source", [
    ("a guard float16 holds", AUG.replace("EPS", "1e-3")),
    ("a float32 value", AUG.replace("n = x @ x.T", "n = (x @ x.T).float()").replace("EPS", "1e-8")),
    ("not used as a denominator", AUG.replace("EPS", "1e-8").replace("x / n", "x * n")),
    ("rebound before its use", AUG.replace("EPS", "1e-8").replace("return x / n", "n = n.float()\n        return x / n")),
])
def test_augmented_guard_near_misses(name, source):
    assert lines("AMP102", source) == [], name


# ---- AMP302: ``for opt in optimizers: scaler.unscale_(opt)`` unscales ------------------------------
UNSCALE_EACH = """
    import torch
    def train(model, loader, optimizers, scaler):
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x).sum()
            scaler.scale(loss).backward()
            for opt in optimizers:
                UNSCALE
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            for opt in optimizers:
                scaler.step(opt)
            scaler.update()
    """


def test_unscale_in_a_loop_over_the_optimizers_unscales():
    assert lines("AMP302", UNSCALE_EACH.replace("UNSCALE", "scaler.unscale_(opt)")) == []


def test_a_loop_that_does_not_unscale_each_optimizer_still_clips_scaled_gradients():
    assert lines("AMP302", UNSCALE_EACH.replace("UNSCALE", "log(opt)")) == [10]
    # it unscales something else than the loop's element: the loop may still run zero times
    assert lines("AMP302", UNSCALE_EACH.replace("UNSCALE", "scaler.unscale_(optimizers[0])")) == [10]


# ---- AMP303 / AMP302: a scaler that arrives as an argument or an attribute --------------------------
def test_scaler_argument_stepped_past_by_the_optimizer():
    source = """
        import torch
        def train_step(model, x, optimizer, scaler):
            with torch.autocast("cuda"):
                loss = model(x).sum()
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scaler.update()
        """
    assert lines("AMP303", source) == [9]
    own = {"scaling.py": "class LossScaler:\n    pass\n"}
    assert lines("AMP303", source, extra_files=own) == []  # the project's own scaler: its protocol


def test_scaler_attribute_never_updated():
    source = """
        import torch
        class Trainer:
            def __init__(self, scaler: torch.amp.GradScaler):
                self.scaler = scaler
            def step(self, x):
                with torch.autocast("cuda"):
                    loss = self.model(x).sum()
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
        """
    assert lines("AMP303", source) == [10]
    assert lines("AMP303", source + "\n    def end(self):\n        self.scaler.update()\n") == []


# ---- AMP303: a loss weight named ``*_scale_factor`` is not loss scaling -----------------------------
SCALED_TERM = """
    import torch
    def train(model, loader, optimizer, WEIGHT):
        scaler = torch.amp.GradScaler("cuda")
        for x in loader:
            with torch.autocast("cuda"):
                loss = model(x).sum()
                loss = loss * WEIGHT
            loss.backward()
            scaler.step(optimizer)
            scaler.update()
    """


def test_a_term_weight_named_scale_factor_is_not_loss_scaling():
    assert lines("AMP303", SCALED_TERM.replace("WEIGHT", "kl_scale_factor")) == [9]


@pytest.mark.parametrize("weight", ["loss_scale", "loss_scale_factor", "scale"])
def test_a_loss_multiplied_by_a_loss_scale_may_be_scaled_by_hand(weight):
    assert lines("AMP303", SCALED_TERM.replace("WEIGHT", weight)) == []


# ---- AMP304: ``break`` / ``return`` out of the training loop, a raise in a helper -------------------
@pytest.mark.parametrize("stop", ["break", "return", "return None"])
def test_leaving_the_training_loop_on_a_nan_loss(stop):
    out = found("AMP304", loop_with(f"if torch.isnan(loss):\n    {stop}"))
    assert [line for line, _ in out] == [9]
    assert "training loop" in out[0][1]


@pytest.mark.parametrize("name, source", [
    ("continue skips the step", loop_with("if torch.isnan(loss):\n    continue")),
    ("a break out of a loop over the parameters", loop_with(
        "for p in model.parameters():\n    if torch.isnan(p.grad).any():\n        break")),
    ("a Lightning-style step that returns None to skip", """
        import torch
        class Module:
            def training_step(self, batch, i):
                with torch.autocast("cuda"):
                    loss = self.model(batch).sum()
                if torch.isnan(loss):
                    return None
                return loss
        """),
])
def test_leaving_near_misses(name, source):
    assert lines("AMP304", source) == [], name


HELPER = """
    import torch
    def check_finite(value):
        if not torch.isfinite(value).all():
            raise RuntimeError("non-finite")
    """


def test_a_raise_in_a_helper_called_from_the_training_loop():
    out = found("AMP304", HELPER + loop_with("check_finite(loss)"))
    assert [line for line, _ in out] == [5]
    assert "`check_finite`" in out[0][1] and "line 13" in out[0][1] and "`loss`" in out[0][1]


@pytest.mark.parametrize("name, call", [
    ("the helper checks the input data", "check_finite(x)"),
    ("the helper is not called", "pass"),
])
def test_a_raise_in_a_helper_near_misses(name, call):
    assert lines("AMP304", HELPER + loop_with(call)) == [], name


def test_a_raise_in_a_helper_called_only_by_evaluation():
    source = HELPER + """
    def evaluate(model, loader):
        with torch.no_grad():
            for x in loader:
                check_finite(model(x))
    """
    assert lines("AMP304", source, extra_files={"train.py": textwrap.dedent(MIXED_LOOP.replace("CHECK", ""))}) == []


# ---- AMP101: Hugging Face TrainingArguments' implicit adam_epsilon ----------------------------------
HF = """
    import torch, train  # the model is train.py's (precision follows the entry point's imports)
    from transformers import Trainer, TrainingArguments
    args = TrainingArguments(output_dir="out"ARGS)
    trainer = Trainer(model=model, args=args)
    trainer.train()
    """


def test_training_arguments_default_adam_epsilon_on_half_parameters():
    out = found("AMP101", HF.replace("ARGS", ""), extra_files={"train.py": HALF_TRAINING})
    assert [line for line, _ in out] == [4]
    assert "adam_epsilon=1e-8" in out[0][1] and "train.py:3" in out[0][1]
    assert 'adam_epsilon=1e-4' in fixed(HF.replace("ARGS", ""), extra_files={"train.py": HALF_TRAINING})
    assert lines("AMP101", HF.replace("ARGS", ", adam_epsilon=1e-10"), extra_files={"train.py": HALF_TRAINING}) == [4]


def test_training_arguments_adam_epsilon_from_a_config_lookup_default():
    """Time-MoE: ``adam_epsilon=float(train_config.get("adam_epsilon", 1e-8))``: 1e-8 unless the
    config sets it."""
    source = HF.replace("ARGS", ', adam_epsilon=float(cfg.get("adam_epsilon", 1e-8))')
    assert lines("AMP101", source, extra_files={"train.py": HALF_TRAINING}) == [4]
    safe = HF.replace("ARGS", ', adam_epsilon=getattr(cfg, "adam_epsilon", 1e-4)')
    assert lines("AMP101", safe, extra_files={"train.py": HALF_TRAINING}) == []


@pytest.mark.parametrize("extra, reported", [
    # AnglE: TrainingArguments(..., **argument_kwargs) with report_to / push_to_hub keys only
    ('extra = {"report_to": "none"}\n    extra["push_to_hub"] = False', True),
    ('extra = dict(report_to="none")\n    extra.update(hub_model_id="x")', True),
    ('extra = {"report_to": "none", "adam_epsilon": 1e-4}', False),
    ('extra = {}\n    extra["optim"] = "adafactor"', False),
    ('extra = {}\n    fill(extra)', False),  # a function may add any key
    ('extra = load_kwargs()', False),
])
def test_training_arguments_given_a_dict_of_known_keywords(extra, reported):
    source = HF.replace("    args = ", "    " + extra + "\n    args = ").replace("ARGS", ", **extra")
    assert bool(lines("AMP101", source, extra_files={"train.py": HALF_TRAINING})) is reported


def test_a_project_subclass_of_training_arguments_gives_the_trainer_its_adam_epsilon():
    """Time-MoE's ``@dataclass class TimeMoETrainingArguments(TrainingArguments)`` in another file."""
    args_module = ("from dataclasses import dataclass\nfrom transformers import TrainingArguments\n\n\n"
                   "@dataclass\nclass TimeMoETrainingArguments(TrainingArguments):\n    min_learning_rate: float = 0.0\n")
    source = HF.replace("from transformers import Trainer, TrainingArguments",
                        "from transformers import Trainer\n    from hf_args import TimeMoETrainingArguments")
    source = source.replace("TrainingArguments(output_dir", "TimeMoETrainingArguments(output_dir").replace("ARGS", "")
    out = found("AMP101", source, extra_files={"train.py": HALF_TRAINING, "hf_args.py": args_module})
    assert [line for line, _ in out] == [5] and "TimeMoETrainingArguments (a TrainingArguments)" in out[0][1]
    # named in the singular and imported from its own file (LLM-Dojo's TrainArgument): the calling file
    # holds no "TrainingArguments" text, so the rule's needs must admit the name itself
    singular = {"train.py": HALF_TRAINING, "hf_args.py": args_module.replace("TimeMoETrainingArguments", "TrainArgument")}
    assert lines("AMP101", source.replace("TimeMoETrainingArguments", "TrainArgument"), extra_files=singular) == [5]
    # a class of the same name that is no TrainingArguments says nothing about the Trainer's optimizer
    unrelated = args_module.replace("(TrainingArguments)", "")
    assert lines("AMP101", source, extra_files={"train.py": HALF_TRAINING, "hf_args.py": unrelated}) == []


@pytest.mark.parametrize("name, args, extra", [
    ("a float16-safe adam_epsilon", ", adam_epsilon=1e-4", {"train.py": HALF_TRAINING}),
    ("an optimizer without eps", ', optim="adafactor"', {"train.py": HALF_TRAINING}),
    ("arguments from elsewhere", ", **kwargs", {"train.py": HALF_TRAINING}),
    ("float32 parameters under fp16 autocast", ", fp16=True", None),
])
def test_training_arguments_near_misses(name, args, extra):
    assert lines("AMP101", HF.replace("ARGS", args), extra_files=extra) == [], name


# ---- AMP501: the torch versions the project supports ------------------------------------------------
OLD_API = """
    import torch
    scaler = torch.cuda.amp.GradScaler()
    with torch.cuda.amp.autocast():
        pass
    """


@pytest.mark.parametrize("where, text, expected", [
    ("requirements.txt", "torch>=2.4\ntorchvision>=0.2\n", [3, 4]),
    ("requirements.txt", "numpy\n", [3, 4]),  # nothing declared: a current torch
    ("requirements.txt", "torch>=2.1\n", [4]),  # torch.amp.GradScaler is new in 2.3
    # torch.amp.autocast(device_type, ...) exists from 1.12 (torch/amp/autocast_mode.py); 1.11 has none
    ("requirements.txt", "torch>=1.13  # LTS\n", [4]),
    ("pyproject.toml", "[project]\nname = 'x'\ndependencies = ['torch >=1.12, <3']\n", [4]),
    ("requirements.txt", "torch>=1.11\n", []),
    ("setup.py", "setup(install_requires=['torch<2.4', 'pytorch-lightning>=2.5'])\n", []),
    # a pip constraints file (``pip install -r requirements.txt -c constraints.txt``: ml-cvnets, set 17)
    ("constraints.txt", "torch==1.13.0\ntorchvision==0.14.0\n", [4]),
    ("requirements/constraints.txt", "torch==2.1.2\n", [4]),
    # a conda environment file's dependencies (its conda spec, and its pip list) and the install lines of a shell
    # script / Dockerfile: the torch the project is set up with
    ("environment.yml", "dependencies:\n  - python=3.9\n  - pytorch::pytorch=1.13.1=py3.9_cuda11.7_0\n", [4]),
    ("environment.yml", "dependencies:\n  - pytorch 1.11.*\n", []),
    ("environment.yaml", "dependencies:\n  - pip\n  - pip:\n    - torch==2.1.0\n", [4]),
    ("docker/Dockerfile", "FROM nvidia/cuda:11.7.1-devel-ubuntu22.04\nRUN pip install --no-cache-dir \\\n"
                          "    torch==1.13.1+cu117 torchvision==0.14.1\n", [4]),
    ("install.sh", "conda install -y pytorch==1.10.0 torchvision cudatoolkit=11.3 -c pytorch\n", []),
    ("scripts/setup.sh", "pip install 'torch>=2.0' transformers\n", [4]),
    # near misses: a pin of another package; an unpinned install; an install in a comment; a current torch
    ("environment.yml", "dependencies:\n  - pytorch\n  - torchvision=0.11\n  - pytorch-lightning=1.5\n", [3, 4]),
    ("Dockerfile", "RUN pip install torch torchvision\n# RUN pip install torch==1.10\n", [3, 4]),
    ("Dockerfile", "RUN pip install torch==2.5.1\n", [3, 4]),
])
def test_deprecated_api_respects_the_supported_torch(where, text, expected):
    assert lines("AMP501", OLD_API, extra_files={where: text}) == expected


@pytest.mark.parametrize("files, filename, expected", [
    # a sub-project installed on its own (EasyOCR's trainer/craft/requirements.txt torch==1.13.1, LLaMA-Adapter's
    # llama_adapter_v2_chat65b/environment.yml pytorch=2.0.0, T18-5): the pin of the nearest directory above the file
    ({"craft/requirements.txt": "torch==1.13.1\nopencv-python\n"}, "craft/train.py", [4]),
    ({"chat65b/environment.yml": "dependencies:\n  - pytorch=2.0.0\n"}, "chat65b/util/misc.py", [4]),
    ({"requirements.txt": "torch>=2.4\n", "mm7b/requirements.txt": "torch==2.0.0+cu117\n"}, "mm7b/train.py", [4]),
    # near misses: a sibling sub-project's pin; a sub-project's list without torch (the root's says); a root file
    ({"craft/requirements.txt": "torch==1.13.1\n"}, "other/train.py", [3, 4]),
    ({"requirements.txt": "torch>=2.4\n", "craft/requirements.txt": "opencv-python\n"}, "craft/train.py", [3, 4]),
    ({"craft/requirements.txt": "torch==1.13.1\n"}, "train.py", [3, 4]),
    # a sub-project's environment script (NeuralSpeech's BinauralGrad/prepare_env.sh: pip install torch==1.7.0)
    ({"bg/prepare_env.sh": "pip install torch==1.7.0\npip install torchaudio==0.7.0\n"}, "bg/src/learner.py", []),
    # near misses: its script installs torch without a version; a run script of the sub-project is no environment
    ({"bg/prepare_env.sh": "pip install torch\n"}, "bg/src/learner.py", [3, 4]),
    ({"bg/train.sh": "pip install torch==1.7.0\npython train.py\n"}, "bg/train.py", [3, 4]),
])
def test_deprecated_api_respects_a_sub_projects_own_pin(files, filename, expected):
    assert lines("AMP501", OLD_API, extra_files=files, filename=filename) == expected


HF_SPLAT = """
    import torch, train
    from transformers import Trainer, TrainingArguments
    extra = EXTRA
    MORE
    args = TrainingArguments(output_dir="out", **extra)
    trainer = Trainer(model=model, args=args)
    trainer.train()
    """


@pytest.mark.parametrize("name, extra, more, expected", [
    # AnglE (held-out bug B24): the splatted dict's keys are all known, none of them an eps
    ("a dict literal of other options", '{"report_to": "none"}', "pass", [6]),
    ("keys stored one by one", "{}", 'extra["push_to_hub"] = False', [6]),
    ("near miss: the dict passes adam_epsilon", '{"adam_epsilon": 1e-4}', "pass", []),
    ("near miss: the dict picks another optimizer", "{}", 'extra["optim"] = "adafactor"', []),
    ("near miss: the dict is updated from elsewhere", "{}", "extra.update(config)", []),
])
def test_training_arguments_with_a_splatted_dict_of_known_keys(name, extra, more, expected):
    source = HF_SPLAT.replace("EXTRA", extra).replace("MORE", more)
    assert lines("AMP101", source, extra_files={"train.py": HALF_TRAINING}) == expected, name


HF_SUBCLASS = """
    from dataclasses import dataclass, field
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments


    @dataclass
    class TrainArgument(TrainingArguments):
        output_dir: str = field(default="./out")
        fp16: bool = field(default=True)
        FIELD


    train_args = TrainArgument()
    model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16)
    Trainer(model=model, args=train_args).train()
    """


@pytest.mark.parametrize("name, field, expected", [
    # LLM-Dojo (held-out bug B26): a subclass not named *Arguments, built with no arguments
    ("the inherited default", "report_to: str = 'none'", [14]),
    ("its own default, still unsafe", "adam_epsilon: float = field(default=1e-10)", [14]),
    ("near miss: its own float16-safe default", "adam_epsilon: float = field(default=1e-4)", []),
    ("near miss: another optimizer", "optim: str = 'adafactor'", []),
    ("near miss: a default that is not a literal", "adam_epsilon: float = field(default=EPS)", []),
])
def test_training_arguments_subclass_defaults(name, field, expected):
    assert lines("AMP101", HF_SUBCLASS.replace("FIELD", field)) == expected, name
