"""Precision per training entry point (issue 8): evidence roles, entry points and what they reach,
the half-model-with-fp32-master-weights regime, and evidence in configuration files. Each case is a
small project; the near misses are named after the real code they stand for."""
import textwrap

import pytest

from amplint.config_evidence import config_signals
from amplint.precision_facts import file_facts
from amplint.project import Project

from cliutil import run, write_project

OPTIM = "import torch\n\ndef make(model):\n    return torch.optim.AdamW(model.parameters())\n"


def project(tmp_path, files):
    return Project(write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()}))


def roles(source, path="train.py"):
    return [(s["role"], s["text"]) for s in file_facts(textwrap.dedent(source).encode(), path, None)["signals"]]


# ---- roles ----------------------------------------------------------------------------------------

def test_inference_half_after_the_training_loop_is_not_training():
    # diffusers' train_*.py: after the loop, pipe = ...; pipe.unet.to(torch.float16) for samples
    src = """
        import torch
        def main(model, loader, opt):
            for x in loader:
                loss = model(x).sum()
                loss.backward()
                opt.step()
            model = model.half()
            model(x)
    """
    assert roles(src) == [("inference", "model.half()")]


def test_a_half_cast_before_the_loop_is_training():
    src = """
        import torch
        def main(model, loader, opt):
            model = model.half()
            for x in loader:
                model(x).sum().backward()
                opt.step()
    """
    assert roles(src) == [("training", "model.half()")]


@pytest.mark.parametrize("src, role", [
    ("import torch\n@torch.no_grad()\ndef run(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
     "inference"),
    ("import torch\ndef run(model, x):\n    with torch.inference_mode():\n        model = model.half()\n", "inference"),
    ("import torch\ndef evaluate(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n", "inference"),
    ("import torch\ndef validation_step(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n",
     "inference"),
    ("import torch\ndef test_amp(model, x):\n    with torch.autocast('cuda'):\n        return model(x)\n", "test"),
])
def test_roles_of_evaluation_and_test_code(src, role):
    assert [r for r, _ in roles(src)] == [role]


def test_a_function_named_for_evaluation_that_trains_is_training():
    # vits' train_and_evaluate runs backward and the optimizer step itself
    src = """
        import torch
        def train_and_evaluate(model, opt, loader):
            for x in loader:
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = model(x).mean()
                loss.backward()
                opt.step()
    """
    assert roles(src) == [("training", 'torch.autocast("cuda", dtype=torch.float16)')]


def test_a_forward_helper_called_by_the_training_loop_is_training():
    # EveryDream2's get_model_prediction_and_target: the training loop's forward pass (also used by
    # validation), nested in main; the same helper under no_grad, and validation's own autocast, stay inference
    src = """
        import torch
        def main(unet, opt, loader, val_loader):
            def get_model_prediction_and_target(x):
                with torch.no_grad():
                    with torch.autocast("cuda", enabled=True):
                        latents = x * 2
                with torch.autocast("cuda", enabled=True):
                    return unet(latents)
            def validate_epoch():
                for x in val_loader:
                    get_model_prediction_and_target(x)
                    with torch.autocast("cuda", enabled=True):
                        unet(x)
            for x in loader:
                loss = get_model_prediction_and_target(x).mean()
                loss.backward()
                opt.step()
            validate_epoch()
    """
    signals = file_facts(textwrap.dedent(src).encode(), "train.py", None)["signals"]
    assert sorted((s["line"], s["role"]) for s in signals) == [(6, "inference"), (8, "training"), (13, "inference")]


def test_a_benchmark_dtype_branch_is_a_benchmark():
    # a memory benchmark: elif dtype == "float16": model.half()
    src = """
        import torch
        def measure(model, dtype):
            if dtype == "float32":
                pass
            elif dtype == "float16":
                model = model.half()
            model(x).sum().backward()
    """
    assert [r for r, _ in roles(src, "benchmarks/memory.py")] == ["benchmark"]
    assert [r for r, _ in roles(src.replace("def measure", "def benchmark_memory"))] == ["benchmark"]


def test_a_dtype_branch_in_training_code_is_one_of_its_branches():
    src = """
        import torch
        def main(args, model, opt):
            if args.fp16:
                model.half()
            model(x).sum().backward()
            opt.step()
    """
    signals = file_facts(textwrap.dedent(src).encode(), "train.py", None)["signals"]
    assert [(s["role"], s["one_of"]) for s in signals] == [("training", "if args.fp16")]


# ---- entry points and reachability ----------------------------------------------------------------

STEP = "    loss = model(x).sum()\n    loss.backward()\n    opt.step()\n"


def test_a_bf16_model_beside_an_fp16_one(tmp_path):
    # a monorepo: one model trains in pure half, another in bf16; each optimizer is judged by its own
    p = project(tmp_path, {
        "a/__init__.py": "", "b/__init__.py": "",
        "a/optim.py": OPTIM, "b/optim.py": OPTIM,
        "a/train.py": "import torch\nfrom a.optim import make\ndef main(model, x):\n    model = model.half()\n"
                      "    opt = make(model)\n" + STEP,
        "b/train.py": "import torch\nfrom b.optim import make\ndef main(model, x):\n    model = model.bfloat16()\n"
                      "    opt = make(model)\n" + STEP,
    })
    assert p.regime_for(p.root / "a/optim.py").mode == "fp16"
    assert p.regime_for(p.root / "b/optim.py").mode == "bf16"
    assert "a/train.py" in p.regime_for(p.root / "a/optim.py").scope
    r = run(["check", "--select", "AMP101", "."], p.root)
    assert r.out.count("AMP101") == 1 and "a/optim.py" in r.out and "b/optim.py" not in r.out, r.out
    assert "evidence: a/train.py:4: parameters are float16: `model.half()`" in r.out


def test_shared_code_is_judged_under_every_entry_point_reaching_it(tmp_path):
    p = project(tmp_path, {
        "common.py": OPTIM,
        "a.py": "import torch\nimport common\ndef main(model, x):\n    model = model.half()\n" + STEP,
        "b.py": "import torch\nimport common\ndef main(model, x):\n" + STEP,
    })
    r = p.regime_for(p.root / "common.py")
    assert r.mode == "fp16" and "a.py" in r.scope and "b.py" in r.scope
    out = run(["check", "--select", "AMP101", "common.py"], p.root).out
    assert "evidence: a.py:4: parameters are float16: `model.half()`" in out, out


def test_code_no_entry_point_reaches_is_library_when_they_disagree(tmp_path):
    p = project(tmp_path, {
        "lib.py": OPTIM,
        "a.py": "import torch\ndef main(model, x):\n    model = model.half()\n" + STEP,
        "b.py": "import torch\ndef main(model, x):\n    model = model.bfloat16()\n" + STEP,
    })
    r = p.regime_for(p.root / "lib.py")
    # (a.py and b.py are the project's own runs and say their precision: lib.py is run by neither)
    assert r.mode == "fp32" and r.not_run and "the entry points disagree" in r.scope
    # ... and the project's only precision when they agree
    p = project(tmp_path / "2", {"lib.py": OPTIM, "a.py": "import torch\ndef main(model, x):\n    model.half()\n" + STEP})
    assert p.regime_for(p.root / "lib.py").mode == "fp16"


def test_test_files_are_neither_evidence_nor_judged_by_the_regime(tmp_path):
    p = project(tmp_path, {
        "train.py": "import torch\ndef main(model, x):\n    model.half()\n" + STEP,
        "tests/test_opt.py": "import torch\ndef test_opt(model):\n    torch.optim.Adam(model.parameters())\n",
    })
    assert p.regime_for(p.root / "tests/test_opt.py").mode == "fp32"
    r = run(["check", "--output-format", "concise", "--select", "AMP101", "."], p.root)
    assert "tests/" not in r.out


# ---- half model with fp32 master weights -----------------------------------------------------------

def test_deepspeed_json_config_is_a_half_model_with_master_weights(tmp_path):
    p = project(tmp_path, {
        "ds_config.json": '{\n  "train_batch_size": 8,\n  "fp16": {"enabled": true, "loss_scale": 0}\n}\n',
        "train.py": "import torch, deepspeed\nfrom optim import make\n"
                    "def main(model):\n    engine, opt, _, _ = deepspeed.initialize(model=model, config='ds_config.json')\n",
        "optim.py": OPTIM,
    })
    r = p.regime_for(p.root / "optim.py")
    assert r.mode == "fp16-master" and r.half_params is not None and r.half_optimizer is None
    assert r.half_params.path.endswith("ds_config.json") and r.half_params.line == 3
    assert run(["check", "--select", "AMP101", "-q", "."], p.root).rc == 0


def test_deepspeed_dict_literal_and_conditional_enable(tmp_path):
    src = "import deepspeed\nds = {'fp16': {'enabled': args.fp16}}\nengine = deepspeed.initialize(model=m, config=ds)\n"
    signals = file_facts(src.encode(), "train.py", None)["signals"]
    assert [(s["kind"], s["master"], "one of" in s["note"]) for s in signals] == [("flag", True, True)]


def test_fsdp_mixed_precision_param_dtype(tmp_path):
    src = ("import torch\nfrom torch.distributed.fsdp import MixedPrecision\n"
           "mp = MixedPrecision(param_dtype=torch.float16, reduce_dtype=torch.float32)\n")
    [s] = file_facts(src.encode(), "train.py", None)["signals"]
    assert (s["kind"], s["dtype"], s["master"]) == ("half_params", "float16", True)


def test_convert_to_fp16_with_master_params_and_a_half_wrapper(tmp_path):
    src = ("import torch\nclass TrainLoop:\n    def setup(self):\n        self.master_params = list(self.model.parameters())\n"
           "        self.model.convert_to_fp16()\n    def step(self):\n        self.loss.backward()\n")
    [s] = file_facts(src.encode(), "train_util.py", None)["signals"]
    assert (s["kind"], s["pure"], s["master"]) == ("half_params", True, True)
    wrapper = ("import torch\nclass Float16Module(torch.nn.Module):\n    def __init__(self, module):\n"
               "        super().__init__()\n        self.add_module('module', module.half())\n")
    [s] = file_facts(wrapper.encode(), "model.py", None)["signals"]
    assert (s["kind"], s["master"], s["role"]) == ("half_params", True, "training")


def test_dtype_held_in_a_conditional_attribute(tmp_path):
    # self.torch_dtype = torch.bfloat16 if cfg.bf16 else torch.float16; from_pretrained(torch_dtype=self.torch_dtype)
    src = textwrap.dedent("""
        import torch
        from transformers import AutoModel
        class T:
            def __init__(self, cfg):
                self.torch_dtype = torch.bfloat16 if cfg.bf16 else torch.float16
                self.model = AutoModel.from_pretrained(cfg.name, torch_dtype=self.torch_dtype)
            def step(self):
                self.loss.backward()
    """)
    [s] = file_facts(src.encode(), "trainer.py", None)["signals"]
    assert (s["kind"], s["dtype"], s["role"]) == ("half_params", "float16", "training")
    assert "one of" in s["one_of"]


def test_training_arguments_fp16_from_the_command_line():
    src = "from transformers import TrainingArguments\nargs = TrainingArguments('o', fp16=cli.fp16)\n"
    [s] = file_facts(src.encode(), "train.py", None)["signals"]
    assert (s["kind"], s["dtype"]) == ("flag", "float16") and "one of" in s["note"]


# ---- configuration files ----------------------------------------------------------------------------

@pytest.mark.parametrize("name, text, dtype, pure, master", [
    ("ds.json", '{"bf16": {"enabled": true}}', "bfloat16", True, True),
    ("ds.json", '{"fp16": {"enabled": "auto"}}', "float16", True, True),
    ("default_config.yaml", "compute_environment: LOCAL_MACHINE\nmixed_precision: fp16\n", "float16", False, False),
    ("config.yaml", "trainer:\n  max_epochs: 10\n  precision: 16\n", "float16", False, False),
    ("config.yaml", "trainer:\n  precision: 16-mixed\n", "float16", False, False),
    ("config.yaml", "trainer:\n  precision: bf16-true\n", "bfloat16", True, False),
    ("fsdp.yaml", "fsdp:\n  mixed_precision:\n    param_dtype: float16\n", "float16", True, True),
    ("fsdp.yaml", "fsdp:\n  use: true\n  param_dtype: float16\n", "float16", True, True),
    ("args.toml", "[training]\nfp16 = true\n", "float16", False, False),
    ("run.sh", "accelerate launch --mixed_precision fp16 train.py\n", "float16", False, False),
    ("run.sh", "python train.py --fp16 --lr 1e-4\n", "float16", False, False),
    ("run.sh", "python train.py trainer.precision=16-mixed\n", "float16", False, False),
    # detectron2 / Mask2Former: DefaultTrainer builds its AMPTrainer (autocast + GradScaler) from this
    ("Base-Seg.yaml", "SOLVER:\n  BASE_LR: 0.0001\n  AMP:\n    ENABLED: True\n", "float16", False, False),
])
def test_config_file_evidence(name, text, dtype, pure, master):
    [(sig, line, what)] = config_signals(text.encode(), name)
    assert (sig.dtype, sig.pure, sig.master) == (dtype, pure, master)
    assert line >= 1 and what


@pytest.mark.parametrize("name, text", [
    ("ds.json", '{"fp16": {"enabled": false}}'),
    ("metrics.yaml", "precision: 0.93\nrecall: 0.9\n"),
    ("model.yaml", "layers:\n  precision: 16\n"),  # an int 16 outside a trainer section is not Lightning's
    ("run.sh", "python train.py --fp16_full_eval\n# --fp16\n"),
    ("broken.yaml", "fp16: [unclosed\n"),
    ("tokenizer.json", '{"fp16": {"enabled": true}}'),
    # audiocraft's base solver config: FSDP's dtypes are read only when fsdp.use
    ("default.yaml", "fsdp:\n  use: false\n  param_dtype: float16\n"),
    ("default.yaml", "amp:\n  enable: no\n  opt_level: O2\n"),
    ("Base-Seg.yaml", "SOLVER:\n  AMP:\n    ENABLED: False\n"),
])
def test_config_near_misses(name, text):
    assert config_signals(text.encode(), name) == []


def test_a_yaml_config_sets_the_precision_of_the_entry_point_beside_it(tmp_path):
    p = project(tmp_path, {
        "configs/train.yaml": "trainer:\n  precision: 16-mixed\n",
        "train.py": "import lightning as L\ndef main(cfg, model):\n    L.Trainer(**cfg.trainer).fit(model)\n",
        "other/pyproject.toml": "[project]\nname='x'\n",
    })
    r = p.regime_for(p.root / "train.py")
    assert r.mode == "fp16-mixed" and r.fp16_autocast.path.endswith("configs/train.yaml")


# ---- what amplint assumed, shown ----------------------------------------------------------------------

def test_show_settings_names_entry_points_precision_and_evidence_roles(tmp_path):
    p = project(tmp_path, {
        "train.py": "import torch\nimport lib\ndef main(model, x, opt):\n    model.half()\n" + STEP +
                    "    with torch.no_grad():\n        model.half()\n",
        "lib.py": OPTIM,
    })
    r = run(["check", "--show-settings"], p.root)
    assert r.rc == 0
    assert "entry point train.py:3 (main): fp16" in r.out
    assert "evidence: `model.half()` at train.py:4 [training]" in r.out
    assert "evidence: `model.half()` at train.py:9 [inference] (under `torch.no_grad`()) (not counted)" in r.out.replace(
        "`torch.no_grad()`", "`torch.no_grad`()")


def test_summary_line_says_which_precision_and_what_no_entry_point_reaches(tmp_path):
    p = project(tmp_path, {
        "a.py": "import torch\ndef main(model, x):\n    model = model.half()\n" + STEP,
        "b.py": "import torch\ndef main(model, x):\n    model = model.bfloat16()\n" + STEP,
        "lib.py": "import torch\ndef f(x):\n    return x\n",
        "tests/test_lib.py": "def test_f():\n    pass\n",
    })
    r = run(["check", "--output-format", "concise"], p.root)
    last = r.out.splitlines()[-1]
    assert last.startswith("Assumed precision: ") and "fp16 for 1 file" in last and "bf16 for 1 file" in last
    assert "no training run of the project reaches 1 file (not judged in float16)" in last and "1 file is a test" in last


def test_library_code_is_judged_by_assume_precision_when_configured(tmp_path):
    p = write_project(tmp_path / "lib", {"pkg/__init__.py": "", "pkg/optim.py": OPTIM})
    r = run(["check", "--output-format", "concise", "."], p)
    assert r.rc == 0 and "no training entry point: library policy" in r.out
    (p / "pyproject.toml").write_text('[project]\nname = "lib"\n[tool.amplint]\nassume-precision = "fp16"\n')
    r = run(["check", "--output-format", "concise", "."], p)
    assert r.rc == 1 and "pkg/optim.py:4:12: AMP101" in r.out
    (p / "pyproject.toml").write_text('[project]\nname = "lib"\n[tool.amplint]\nassume-precision = "half"\n')
    r = run(["check", "."], p)
    assert r.rc == 2 and "`assume-precision` must be one of" in r.err


def test_a_frozen_model_cast_to_half_beside_an_fp32_trained_one(tmp_path):
    # diffusers' train_text_to_image.py: vae / text_encoder cast to weight_dtype, AdamW over unet
    train = textwrap.dedent("""
        import torch
        def main(args, unet, vae, text_encoder):
            weight_dtype = torch.float32
            if args.mixed_precision == "fp16":
                weight_dtype = torch.float16
            vae.to(dtype=weight_dtype)
            text_encoder.to(dtype=weight_dtype)
            opt = torch.optim.AdamW(unet.parameters())
            unet(x).sum().backward()
            opt.step()
    """)
    p = write_project(tmp_path / "d", {"train.py": train})
    assert run(["check", "--select", "AMP101", "-q", "."], p).rc == 0
    p = write_project(tmp_path / "e", {"train.py": train.replace("unet.parameters()", "text_encoder.parameters()")})
    assert "AMP101" in run(["check", "--select", "AMP101", "--output-format", "concise", "."], p).out


@pytest.mark.parametrize("line, dtype, pure", [
    ('p.add_argument("--precision", default="16-mixed")', "float16", False),
    ('p.add_argument("--precision", type=str, default="bf16-true")', "bfloat16", True),
    ('p.add_argument("--mixed_precision", default="fp16", choices=["no", "fp16", "bf16"])', "float16", False),
    ('p.add_argument("--fp16", action="store_true")', "float16", False),
    ('p.add_argument("--amp", action="store_true", help="mixed precision")', "float16", False),
])
def test_precision_on_the_command_line(line, dtype, pure):
    src = "import argparse\np = argparse.ArgumentParser()\n" + line + "\n"
    [s] = file_facts(src.encode(), "train.py", None)["signals"]
    assert (s["kind"], s["dtype"], s["pure"]) == ("flag", dtype, pure)


@pytest.mark.parametrize("line", [
    'p.add_argument("--precision", default="32")',
    'p.add_argument("--fp16", action="store_false")',
    'p.add_argument("--mixed_precision", default="no")',
])
def test_command_line_near_misses(line):
    src = "import argparse\np = argparse.ArgumentParser()\n" + line + "\n"
    assert file_facts(src.encode(), "train.py", None)["signals"] == []


def test_a_nested_package_trained_by_the_enclosing_repository(tmp_path):
    # a nested package with its own setup.py, trained in fp16 by the repository's harness
    root = write_project(tmp_path / "repo", {
        "train.py": "import torch\nfrom nested_lib.optim import make\ndef main(model, x):\n    model = model.half()\n"
                    "    opt = make(model)\n" + STEP,
        "nested/setup.py": "from setuptools import setup\nsetup(name='nested_lib')\n",
        "nested/nested_lib/__init__.py": "",
        "nested/nested_lib/optim.py": OPTIM,
        "other/setup.py": "", "other/other_lib/__init__.py": "", "other/other_lib/optim.py": OPTIM,
    })
    nested = Project(root / "nested")
    r = nested.regime_for(root / "nested/nested_lib/optim.py")
    assert r.mode == "fp16" and "enclosing project" in r.scope
    other = Project(root / "other")
    assert other.regime_for(root / "other/other_lib/optim.py").scope.startswith("library")


def test_a_half_copy_saved_by_a_function_that_does_not_train_is_export():
    # ultralytics utils/files.py update_models: model.half(); model.save(path)
    src = "def update_models(names):\n    for n in names:\n        model = YOLO(n)\n        model.half()\n        model.save(n)\n"
    assert roles(src, "pkg/utils/files.py") == [("export", "model.half()")]


LLAVA = """
import torch
import transformers

def train(model_args, training_args, data_module):
    model = transformers.AutoModelForCausalLM.from_pretrained(model_args.name)
    CAST_BEFORE
    trainer = transformers.Trainer(model=model, args=training_args, **data_module)
    trainer.train()
    CAST_AFTER
    trainer.save_model(output_dir=training_args.output_dir)
"""


@pytest.mark.parametrize("before, after, role", [
    # LLaVA's train.py: the cast before trainer.train() is the dtype it trains in, though the
    # function saves the model at its end
    ("model.to(torch.float16)", "pass", "training"),
    # near miss: a cast after training, then the save, is the half copy saved
    ("pass", "model.to(torch.float16)", "export"),
])
def test_a_cast_before_the_trainer_trains_is_not_a_saved_copy(before, after, role):
    src = LLAVA.replace("CAST_BEFORE", before).replace("CAST_AFTER", after)
    assert [r for r, text in roles(src) if text == "model.to(torch.float16)"] == [role]


def test_a_profiler_running_backward_is_not_an_entry_point():
    src = "import torch\ndef profile_ops(model, x):\n    model(x).sum().backward()\n"
    assert file_facts(src.encode(), "pkg/utils/torch_utils.py", None)["entry_points"] == []


def test_a_training_helper_imported_by_an_entry_point_is_not_an_entry_point(tmp_path):
    # transformers: trainer_pt_utils.smp_forward_backward (a backward helper) imported by trainer.py
    p = project(tmp_path, {
        "helpers.py": "def forward_backward(model, x):\n    model(x).sum().backward()\n",
        "trainer.py": "import torch\nimport helpers\ndef train(model, opt, x):\n    model.half()\n"
                      "    helpers.forward_backward(model, x)\n    opt.step()\n",
        "models.py": OPTIM,
    })
    assert [e.path.name for e in p.entry_points()] == ["trainer.py"]
    assert p.regime_for(p.root / "models.py").mode == "fp16"


# ---- a half cast that is one option among several -------------------------------------------------

_CLIP_TRAIN = """
    import torch
    from model import build
    def main(args, loader):
        model = build(args.precision)
        opt = torch.optim.AdamW(model.parameters())
        scaler = torch.amp.GradScaler("cuda") if args.precision == "amp" else None
        for x in loader:
            with torch.autocast("cuda", enabled=args.precision == "amp"):
                loss = model(x).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
"""


def test_an_optional_half_branch_beside_autocast_training_is_judged_as_mixed(tmp_path):
    # open_clip: `--precision fp16` (pure half, discouraged) next to its default `amp`; the script
    # trains with autocast and a GradScaler, so the half branch does not make every file pure half
    p = project(tmp_path, {"train.py": _CLIP_TRAIN, "model.py": """
        import torch
        def build(precision):
            model = torch.nn.Linear(2, 2)
            dtype = torch.float16 if "fp16" in precision else torch.bfloat16
            model.to(dtype=dtype)
            return model
    """})
    r = p.regime_for(p.root / "model.py")
    assert r.mode == "fp16-mixed" and r.half_params is None and r.half_optimizer is None


def test_an_optional_half_branch_with_no_mixed_alternative_still_makes_the_model_half(tmp_path):
    p = project(tmp_path, {"train.py": """
        import torch
        def main(args, model, loader):
            if args.fp16:
                model = model.half()
            opt = torch.optim.AdamW(model.parameters())
            for x in loader:
                model(x).sum().backward()
                opt.step()
    """})
    assert p.regime_for(p.root / "train.py").mode == "fp16"


def test_a_trainer_precision_chosen_by_a_conditional_expression_is_one_of_its_branches(tmp_path):
    # lightning-bolts: `Trainer(precision=32 if args.fp32 else 16)`, 16-mixed unless --fp32 is given
    p = project(tmp_path, {"train.py": """
        import argparse
        from pytorch_lightning import Trainer
        def main():
            parser = argparse.ArgumentParser()
            parser.add_argument("--fp32", action="store_true")
            args = parser.parse_args()
            trainer = Trainer(precision=32 if args.fp32 else 16)
            trainer.fit(Model())
    """})
    r = p.regime_for(p.root / "train.py")
    assert r.mode == "fp16-mixed"
    assert roles(p.root.joinpath("train.py").read_text()) == [("training", "Trainer(precision=32 if args.fp32 else 16)")]


def test_a_conditional_keyword_with_no_float16_branch_is_no_float16_evidence(tmp_path):
    p = project(tmp_path, {"train.py": """
        from pytorch_lightning import Trainer
        def main(args):
            Trainer(precision=32 if args.fp32 else 64).fit(Model())
    """})
    assert p.regime_for(p.root / "train.py").mode == "fp32"


def test_a_lightning_module_s_own_cli_precision_stays_with_its_script(tmp_path):
    # lightning-bolts: simclr_module.py trains itself in 16-mixed from its cli_main; a GAN script that
    # imports the package for its classes trains with the default precision (fp32)
    p = project(tmp_path, {
        "simclr.py": """
            import torch
            from pytorch_lightning import LightningModule, Trainer
            class SimCLR(LightningModule):
                def training_step(self, batch, i):
                    return self(batch).sum()
            def cli_main():
                trainer = Trainer(precision=16)
                trainer.fit(SimCLR())
        """,
        "gan.py": """
            import torch
            from pytorch_lightning import LightningModule, Trainer
            from simclr import SimCLR
            class GAN(LightningModule):
                def training_step(self, batch, i):
                    return torch.nn.BCELoss()(self(batch), batch)
            def cli_main(args):
                trainer = Trainer.from_argparse_args(args)
                trainer.fit(GAN())
        """})
    assert p.regime_for(p.root / "simclr.py").mode == "fp16-mixed"
    assert p.regime_for(p.root / "gan.py").mode == "fp32"
    assert {e.display.rsplit("/", 1)[-1] for e in p.entry_points()} == {"simclr.py", "gan.py"}


_NEOX = {
    "pyproject.toml": "[project]\nname = 'neox'\n",
    "train.py": """
        import sys
        import yaml
        from megatron.training import pretrain
        def main(model, loader):
            pretrain(model, loader, yaml.safe_load(open(sys.argv[1])))
    """,
    "megatron/__init__.py": "",
    "megatron/training.py": """
        import deepspeed
        def pretrain(model, loader, ds_config):
            if ds_config.get("precision") == "bfloat16":
                ds_config.update({"bf16": {"enabled": True}})
            engine, _, _, _ = deepspeed.initialize(model=model, config_params=ds_config)
            for batch in loader:
                engine.backward(engine(batch))
                engine.step()
    """,
    "runs/125M.yml": '{"train_micro_batch_size_per_gpu": 4, "fp16": {"enabled": true, "loss_scale": 0}}\n',
}


def test_configs_beside_the_script_that_runs_an_entry_point_belong_to_it(tmp_path):
    # gpt-neox: `python train.py configs/125M.yml`; the loop is in megatron/training.py, the configs in a sibling dir
    # (here runs/, a name that is not a configuration directory's: the script beside it is what ties them)
    p = project(tmp_path, _NEOX)
    (ep,) = p.entry_points()
    # train.py runs the loop: the program is the entry point, the loop's file its helper
    assert ep.display.endswith("/train.py") and tmp_path / "p/megatron/training.py" in ep.reach
    from amplint.project import Regime
    assert Regime(ep.signals).mode == "fp16-master"
    assert p.regime_for(tmp_path / "p/megatron/training.py").mode == "fp16-master"
    # the bf16 block under `if ... == "bfloat16":` is one of the options, shown with its condition
    (bf16,) = [s for s, _ in ep.signals if s.dtype == "bfloat16"]
    assert bf16.conditional and "bfloat16" in bf16.condition
    # near miss: no script runs it from beside the configs (a package's loop, configs of another tool)
    files = {k: v for k, v in _NEOX.items() if k != "train.py"}
    files["tools/other.py"] = "import json\n"
    p = project(tmp_path / "alone", files)
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "bf16"


_DINO = {
    "pyproject.toml": "[project]\nname = 'proj'\n",
    "proj/__init__.py": "",
    "proj/fsdp/__init__.py": "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n",
    "proj/train/__init__.py": "",
    "proj/train/train.py": """
        import torch
        from proj.fsdp import ShardedGradScaler
        def do_train(cfg, model, loader):
            scaler = ShardedGradScaler() if cfg.grad_scaler else None
            opt = torch.optim.AdamW(model.parameters())
            for x in loader:
                scaler.scale(model(x).sum()).backward()
                scaler.step(opt)
                scaler.update()
    """,
    "proj/configs/ssl_default_config.yaml": "compute_precision:\n  mixed_precision:\n    param_dtype: fp16\n"
                                            "optim:\n  lr: 0.001\n",
}


def test_a_reexported_scaler_and_a_configs_dir_beside_the_training_package(tmp_path):
    # dinov2: ShardedGradScaler imported from the project's fsdp package; FSDP param_dtype fp16 in proj/configs/
    from amplint.project import Regime
    p = project(tmp_path, _DINO)
    (ep,) = p.entry_points()
    kinds = {s.kind for s, _ in ep.signals}
    assert "grad_scaler" in kinds and Regime(ep.signals).mode == "fp16-master"
    # near miss: the same YAML in a directory not named for configurations (data/) does not apply beside it
    files = dict(_DINO)
    files["proj/data/ssl_default_config.yaml"] = files.pop("proj/configs/ssl_default_config.yaml")
    p = project(tmp_path / "data", files)
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_half_cast_of_what_the_optimizer_trains_counts_whatever_its_name():
    # DALLE-pytorch: `dalle = dalle.half()` then Adam(get_trainable_params(dalle)); near miss: a tensor's .half()
    src = """
        import torch
        def main(args, x):
            dalle = build()
            if args.fp16:
                dalle = dalle.half()
            opt = torch.optim.Adam(get_trainable_params(dalle))
            images = x.half()
            dalle(images).sum().backward()
            opt.step()
    """
    assert [(r, t) for r, t in roles(src)] == [("training", "dalle.half()")]


def test_a_checkpoint_saved_after_training_keeps_the_launchers_precision():
    # lit-llama finetune/full.py: L.Fabric(precision=...), train(...), then save_model_checkpoint(fabric, model, path)
    src = """
        import lightning as L
        import torch
        def main(model, loader):
            fabric = L.Fabric(accelerator="cuda", precision="16-mixed")
            model = fabric.setup_module(model)
            train(fabric, model, loader)
            save_model_checkpoint(fabric, model, "out/final.pth")
    """
    assert [r for r, _ in roles(src)] == ["training"]
    # near miss: a half copy assigned, then saved, is a checkpoint (ultralytics' deepcopy(model).half())
    saved = src.replace('save_model_checkpoint(fabric, model, "out/final.pth")',
                        'half = model.half()\n            torch.save({"model": half}, "out/final.pth")')
    assert "model.half()" not in [t for _, t in roles(saved)]


def test_a_trainer_precision_held_in_a_local_is_read():
    # InnerEye model_training.py: precision = 32 if num_gpus == 0 else 16 if config.use_mixed_precision else 32
    src = """
        import pytorch_lightning as pl
        def model_train(config, module, num_gpus=1):
            precision = 32 if num_gpus == 0 else 16 if config.use_mixed_precision else 32
            trainer = pl.Trainer(precision=precision, max_epochs=1)
            trainer.fit(module)
    """
    facts = file_facts(textwrap.dedent(src).encode(), "train.py", None)
    (sig,) = facts["signals"]
    assert (sig["dtype"], sig["role"]) == ("float16", "training") and "one of" in sig["one_of"]
    # near misses: a local that says 32; a value assigned after the call
    for near in (src.replace("32 if num_gpus == 0 else 16 if config.use_mixed_precision else 32", "32"),
                 src.replace("            precision = 32 if num_gpus == 0 else 16 if config.use_mixed_precision else 32\n", "")
                    .replace("            trainer.fit(module)", "            precision = 16\n            trainer.fit(module)")):
        assert file_facts(textwrap.dedent(near).encode(), "train.py", None)["signals"] == [], near


_DALLE = """
    import argparse
    import deepspeed
    import torch
    from torch.optim import Adam
    parser = argparse.ArgumentParser()
    parser.add_argument("--fp16", action="store_true")
    parser.add_argument("--amp", action="store_true", help="Apex O1 mixed precision")
    args = parser.parse_args()
    using_deepspeed = args.distributed_backend == "deepspeed"
    dalle = torch.nn.Linear(8, 8)
    if not using_deepspeed:
        if args.fp16:
            dalle = dalle.half()
    opt = Adam(dalle.parameters(), lr=3e-4)
    ds_config = {"train_batch_size": 8, "fp16": {"enabled": args.fp16},
                 "amp": {"enabled": args.amp, "opt_level": "O1"}}
    dalle, opt = backend.distribute(model=dalle, optimizer=opt, config=ds_config)
    for x in loader:
        loss = dalle(x).sum()
        loss.backward()
        opt.step()
"""


def test_a_flag_read_only_into_a_deepspeed_config_is_no_alternative_to_the_torch_half_branch(tmp_path):
    # DALLE-pytorch train_dalle.py: `--fp16` without DeepSpeed is `dalle.half()` stepped by torch's Adam
    # (pure fp16: AMP101 on Adam's eps), while `--amp` only enables apex O1 inside DeepSpeed's config
    from amplint.project import Regime
    p = project(tmp_path, {"train.py": _DALLE})
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "fp16"
    r = run(["check", "--no-cache", "--select", "AMP101", "."], tmp_path / "p")
    assert "train.py:15:" in r.out and "AMP101" in r.out
    # near miss (open_clip's --precision amp beside fp16): the --amp flag also opens the script's own
    # autocast, a mixed-precision alternative: the half cast is not judged as pure half, but the runs that
    # take it still step float16 parameters with Adam's eps (T6-14)
    mixed = _DALLE.replace("        loss = dalle(x).sum()",
                           "        with torch.autocast('cuda', enabled=args.amp):\n            loss = dalle(x).sum()")
    p = project(tmp_path / "mixed", {"train.py": mixed})
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "fp16-master"
    r = run(["check", "--no-cache", "--select", "AMP101", "."], tmp_path / "mixed" / "p")
    assert "train.py:15:" in r.out and "AMP101" in r.out


_SMOKE_TEST = {
    "lib/__init__.py": "",
    "lib/unet.py": """
        import torch
        from torch import nn
        class UNet(nn.Module):
            def forward(self, x):
                return x
        if __name__ == "__main__":
            unet = UNet().cuda()
            opt = torch.optim.SGD(unet.parameters(), lr=1e-3)
            scaler = torch.cuda.amp.GradScaler()
            with torch.cuda.amp.autocast():
                loss = unet(torch.randn(4, 8)).mean()
            scaler.scale(loss).backward()
            scaler.step(opt)
    """,
    "train.py": """
        import torch
        from lib.unet import UNet
        def train(loader):
            model = UNet()
            opt = torch.optim.AdamW(model.parameters())
            for x in loader:
                model(x).sum().backward()
                opt.step()
    """,
}


def test_a_main_block_of_an_imported_module_is_not_the_importers_precision(tmp_path):
    # sd-scripts: library/sdxl_original_unet.py's `if __name__ == "__main__":` speed test (GradScaler +
    # autocast) made every trainer importing the U-Net fp16-mixed; it runs only when the file is the program
    from amplint.project import Regime
    p = project(tmp_path, _SMOKE_TEST)
    [ep] = [e for e in p.entry_points() if e.display.endswith("train.py")]
    assert Regime(ep.signals).mode == "fp32"
    # near miss: the same evidence at the module's top level runs on import: the importer's precision
    files = dict(_SMOKE_TEST)
    files["lib/unet.py"] = files["lib/unet.py"].replace('if __name__ == "__main__":', "if True:")
    p = project(tmp_path / "top", files)
    [ep] = [e for e in p.entry_points() if e.display.endswith("train.py")]
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_frozen_module_always_cast_to_float16_is_not_the_trained_networks_precision(tmp_path):
    # sd-scripts hunyuan_image_train_network.py: `vae.to(dtype=torch.float16)  # VAE is always fp16`, frozen,
    # encodes latents under no_grad; the LoRA network AdamW trains is float32 (triage T4-7)
    from amplint.project import Regime
    train = """
        import torch
        def train(loader, vae, network):
            vae.to(dtype=torch.float16)
            vae.requires_grad_(False)
            optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
            for images in loader:
                with torch.no_grad():
                    latents = vae.encode(images.half()).float()
                network(latents).pow(2).mean().backward()
                optimizer.step()
    """
    (ep,) = project(tmp_path, {"train.py": train}).entry_points()
    assert Regime(ep.signals).mode == "fp32"
    # near miss: the network the optimizer trains cast to float16 is a half model
    (ep,) = project(tmp_path / "half", {"train.py": train.replace("vae.to(dtype", "network.to(dtype")}).entry_points()
    assert Regime(ep.signals).mode == "fp16"


_LLAMA_RECIPES = """
    import torch
    import torch.optim as optim
    from transformers import LlamaForCausalLM
    def train(model, loader, optimizer, cfg):
        scaler = torch.cuda.amp.GradScaler() if cfg.use_fp16 else None
        for batch in loader:
            with torch.cuda.amp.autocast(enabled=cfg.use_fp16):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
    def main(cfg, loader):
        model = LlamaForCausalLM.from_pretrained(cfg.name, torch_dtype=torch.float16 if cfg.use_fp16 else "auto")
        optimizer = optim.AdamW(model.parameters(), lr=cfg.lr)
        train(model, loader, optimizer, cfg)
"""


def test_a_half_load_switched_by_the_same_flag_as_the_scaler_is_the_same_run(tmp_path):
    # llama-recipes finetuning.py: use_fp16 loads float16 parameters AND turns on the scaler and autocast:
    # one run, AdamW's eps=1e-8 on float16 parameters (triage T4-10)
    from amplint.project import Regime
    (ep,) = project(tmp_path, {"finetune.py": _LLAMA_RECIPES}).entry_points()
    assert Regime(ep.signals).mode == "fp16"
    r = run(["check", "--no-cache", "--select", "AMP101", "."], tmp_path / "p")
    assert "finetune.py:15:" in r.out
    # near miss (open_clip's --precision fp16 beside amp): the scaler and autocast switched by another
    # flag are a mixed-precision alternative to the half load
    other = _LLAMA_RECIPES.replace("if cfg.use_fp16 else None", "if cfg.use_amp else None").replace(
        "enabled=cfg.use_fp16", "enabled=cfg.use_amp")
    (ep,) = project(tmp_path / "other", {"finetune.py": other}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"



def test_a_scaler_switched_by_the_half_loads_flag_and_another_is_the_same_run(tmp_path):
    # llama-recipes train_utils.py: `ShardedGradScaler() if use_fp16 and enable_fsdp`, `GradScaler() if use_fp16
    # and not enable_fsdp`: on only when use_fp16 loads float16 parameters (triage T4-10b, the real tree)
    from amplint.project import Regime
    both = _LLAMA_RECIPES.replace("if cfg.use_fp16 else None", "if cfg.use_fp16 and cfg.enable_fsdp else None").replace(
        "enabled=cfg.use_fp16", "enabled=cfg.use_fp16 and not cfg.enable_fsdp")
    (ep,) = project(tmp_path, {"finetune.py": both}).entry_points()
    assert Regime(ep.signals).mode == "fp16"
    # near miss: the half load needs a second flag the scaler does not: runs with the scaler and without the
    # half load exist, a mixed-precision alternative
    half_more = both.replace('torch.float16 if cfg.use_fp16 else "auto"', 'torch.float16 if cfg.use_fp16 and cfg.low_mem else "auto"')
    (ep,) = project(tmp_path / "more", {"finetune.py": half_more}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_recipes_dir_holds_the_run_configs_of_the_scripts_beside_it(tmp_path):
    # alignment-handbook: `accelerate launch scripts/sft.py --config recipes/.../config_full.yaml` (TrlParser)
    from amplint.project import Regime
    files = {
        "recipes/zephyr/sft/config_full.yaml": "model_name_or_path: m\nfp16: true\nlearning_rate: 2.0e-05\n",
        "scripts/sft.py": """
            from trl import SFTTrainer, TrlParser
            def main(script_args, training_args, model):
                trainer = SFTTrainer(model=model, args=training_args)
                trainer.train()
        """,
    }
    (ep,) = project(tmp_path, files).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"
    # near miss: the same YAML in a directory not named for configurations says nothing beside it
    files["examples_data/config_full.yaml"] = files.pop("recipes/zephyr/sft/config_full.yaml")
    (ep,) = project(tmp_path / "data", files).entry_points()
    assert Regime(ep.signals).mode == "fp32"


# ---- a launcher that builds the model and optimizer and runs a loop defined in another file ------

_TRAIN_UTILS = """
    import torch
    def train(model, loader, optimizer, cfg):
        scaler = torch.cuda.amp.GradScaler() if cfg.use_fp16 else None
        for batch in loader:
            with torch.cuda.amp.autocast(enabled=cfg.use_fp16):
                loss = model(**batch).loss
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
"""
_FINETUNING = """
    import torch
    import torch.optim as optim
    from transformers import LlamaForCausalLM
    from pkg.utils.train_utils import train
    def main(cfg, loader):
        model = LlamaForCausalLM.from_pretrained(cfg.name, torch_dtype=torch.float16 if cfg.use_fp16 else "auto")
        optimizer = optim.AdamW(model.parameters(), lr=cfg.lr)
        train(model, loader, optimizer, cfg)
    if __name__ == "__main__":
        import fire
        fire.Fire(main)
"""


def test_a_launcher_that_builds_the_model_and_optimizer_is_the_loops_entry_point(tmp_path):
    # llama-recipes: finetuning.py loads the model (float16 when use_fp16) and builds AdamW, then runs
    # utils/train_utils.py's train(); the same run as the loop's scaler (triage T4-10b)
    from amplint.project import Regime
    files = {"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/train_utils.py": _TRAIN_UTILS,
             "pkg/finetuning.py": _FINETUNING}
    p = project(tmp_path, files)
    (ep,) = p.entry_points()
    assert ep.display.endswith("pkg/finetuning.py") and ep.functions[0]["function"] == "main"
    assert Regime(ep.signals).mode == "fp16"
    assert p.regime_for(tmp_path / "p/pkg/utils/train_utils.py").mode == "fp16"
    r = run(["check", "--no-cache", "--select", "AMP101", "."], tmp_path / "p")
    assert "finetuning.py:8:" in r.out
    # near miss: a launcher that loads the model in the default dtype keeps the loop's fp16 autocast
    files["pkg/finetuning.py"] = _FINETUNING.replace('torch.float16 if cfg.use_fp16 else "auto"', '"auto"')
    (ep,) = project(tmp_path / "auto", files).entry_points()
    assert ep.display.endswith("pkg/finetuning.py") and Regime(ep.signals).mode == "fp16-mixed"


def test_a_file_that_imports_the_loop_without_calling_it_or_a_test_is_no_launcher(tmp_path):
    from amplint.project import Regime
    files = {"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/train_utils.py": _TRAIN_UTILS,
             # a script that only reads a constant of the loop's module: it runs no training
             "pkg/export.py": _FINETUNING.replace("train(model, loader, optimizer, cfg)", "print(train.__doc__)"),
             # a test that runs the loop on a tiny model
             "tests/test_train.py": _FINETUNING.replace("def main(", "def test_main("),
             }
    p = project(tmp_path, files)
    (ep,) = p.entry_points()
    assert ep.display.endswith("pkg/utils/train_utils.py") and Regime(ep.signals).mode == "fp16-mixed"


def test_files_only_a_launcher_reaches_run_in_its_precision(tmp_path):
    # DETR-style layout: main.py builds the model from models/ and the optimizer, engine.py holds
    # train_one_epoch; two launchers of one loop, one training in bfloat16, one in fp16 autocast
    from amplint.project import Regime
    engine = """
        import torch
        def train_one_epoch(model, criterion, loader, optimizer):
            for x, y in loader:
                loss = criterion(model(x), y)
                loss.backward()
                optimizer.step()
    """
    main = """
        import torch
        from engine import train_one_epoch
        from models.{name} import build
        def main(args):
            model, criterion = build(args)
            optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
            with torch.autocast("cuda", dtype=torch.{dtype}):
                train_one_epoch(model, criterion, args.loader, optimizer)
        if __name__ == "__main__":
            main(None)
    """
    model = "import torch\ndef build(args):\n    return torch.nn.Linear(2, 2), torch.nn.MSELoss()\n"
    files = {"engine.py": engine, "models/__init__.py": "", "models/detr.py": model, "models/vit.py": model,
             "main_detr.py": main.format(name="detr", dtype="float16"),
             "main_vit.py": main.format(name="vit", dtype="bfloat16")}
    p = project(tmp_path, files)
    eps = p.entry_points()
    assert [e.display.rsplit("/", 1)[-1] for e in eps] == ["main_detr.py", "main_vit.py"]
    assert p.regime_for(tmp_path / "p/models/detr.py").mode == "fp16-mixed"
    assert p.regime_for(tmp_path / "p/models/vit.py").mode == "bf16"
    # the loop runs under both
    assert p.regime_for(tmp_path / "p/engine.py").scope.count("main_") == 2


def test_a_peft_wrap_taken_only_in_some_runs_leaves_the_half_load_trained(tmp_path):
    # llama-recipes finetuning.py: `if train_config.use_peft: model = get_peft_model(model, peft_config)`;
    # without use_peft the whole float16 model is fine-tuned by AdamW (triage T4-10b)
    from amplint.project import Regime
    src = _LLAMA_RECIPES.replace("        optimizer = optim.AdamW", "        if cfg.use_peft:\n"
                                 "            model = get_peft_model(model, cfg.peft)\n        optimizer = optim.AdamW")
    (ep,) = project(tmp_path, {"finetune.py": "from peft import get_peft_model\n" + textwrap.dedent(src)}).entry_points()
    assert Regime(ep.signals).mode == "fp16"
    # near miss: wrapped in every run, only the adapters train (float32): the float16 base is frozen
    src = src.replace("        if cfg.use_peft:\n            model = get_peft_model", "        if True:\n            pass\n"
                      "        model = get_peft_model")
    (ep,) = project(tmp_path / "always", {"finetune.py": "from peft import get_peft_model\n" + textwrap.dedent(src)}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_an_optimizer_in_a_program_no_entry_point_reaches_is_not_of_the_entry_points_half_model(tmp_path):
    # llama-recipes: prompt_guard_tutorial trains its own classifier in float32 with AdamW beside finetuning.py's
    # use_fp16 load; a program of its own judged by the project's precision: not the entry point's float16 model
    # (a module no entry point imports, such as an optimizer a registry loads, keeps the project's half cast:
    # test_amp101_flags_tiny_eps_on_half_parameters)
    files = {"pkg/__init__.py": "", "pkg/utils/__init__.py": "", "pkg/utils/train_utils.py": _TRAIN_UTILS,
             "pkg/finetuning.py": _FINETUNING,
             "tutorial/classifier.py": """
                 import torch
                 def fit(model, loader):
                     optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
                     return optimizer
                 if __name__ == "__main__":
                     fit(torch.nn.Linear(2, 2), [])
             """}
    r = run(["check", "--no-cache", "--select", "AMP101", "."], write_project(tmp_path / "q", {
        k: textwrap.dedent(v) for k, v in files.items()}))
    assert "finetuning.py:8:" in r.out and "classifier.py" not in r.out
    # a notebook that trains its own model is a program of its own too
    import json
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": "import torch\nopt = torch.optim.AdamW(model.parameters(), lr=1e-5)\n"}
    doc = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    r = run(["check", "--no-cache", "--select", "AMP101", "."], write_project(tmp_path / "nb", {
        **{k: textwrap.dedent(v) for k, v in files.items()}, "tutorial/tune.ipynb": json.dumps(doc)}))
    assert "finetuning.py:8:" in r.out and "tune.ipynb" not in r.out
    # near miss: the launcher builds its optimizer with that helper: the entry point reaches it
    files["pkg/finetuning.py"] = _FINETUNING.replace("from pkg.utils", "from tutorial.classifier import fit\n    from pkg.utils").replace(
        "optimizer = optim.AdamW(model.parameters(), lr=cfg.lr)", "optimizer = fit(model, loader)")
    r = run(["check", "--no-cache", "--select", "AMP101", "."], write_project(tmp_path / "h", {
        k: textwrap.dedent(v) for k, v in files.items()}))
    assert "classifier.py:4:" in r.out


def test_a_deepspeed_block_enabled_by_a_parameter_is_read_at_its_default(tmp_path):
    # OpenRLHF get_train_ds_config(param_dtype="bf16"): "bf16": {"enabled": param_dtype == "bf16"}, "fp16": {...
    # == "fp16"}; every caller leaves the default (triage T5-3): bf16, not fp16 with master weights
    from amplint.project import Regime
    ds = """
        def get_train_ds_config(stage=2, param_dtype="bf16"):
            return {
                "zero_optimization": {"stage": stage},
                "bf16": {"enabled": param_dtype == "bf16"},
                "fp16": {"enabled": param_dtype == "fp16"},
            }
    """
    train = """
        import deepspeed
        from ds_utils import get_train_ds_config
        def train(model, loader, args):
            engine, _, _, _ = deepspeed.initialize(model=model, config=get_train_ds_config(param_dtype=args.dtype))
            for x in loader:
                engine.backward(engine(x))
                engine.step()
    """
    (ep,) = project(tmp_path, {"ds_utils.py": ds, "train.py": train}).entry_points()
    assert Regime(ep.signals).mode == "bf16"
    # near misses: an fp16 default is fp16 with master weights; a parameter with no default says "one of"
    (ep,) = project(tmp_path / "fp16", {"ds_utils.py": ds.replace('param_dtype="bf16"', 'param_dtype="fp16"'),
                                        "train.py": train}).entry_points()
    assert Regime(ep.signals).mode == "fp16-master"
    (ep,) = project(tmp_path / "none", {"ds_utils.py": ds.replace('stage=2, param_dtype="bf16"', 'param_dtype, stage=2'),
                                        "train.py": train}).entry_points()
    assert Regime(ep.signals).mode == "fp16-master"


def test_a_cast_of_activations_named_after_the_encoder_is_no_half_model(tmp_path):
    # sd-scripts library/train_util.py get_hidden_states: `encoder_hidden_states.to(weight_dtype)` made
    # train_control_net.py "pure fp16" and its AdamW an AMP101 (triage T4-16)
    from amplint.project import Regime
    util = """
        import torch
        def prepare_dtype(args):
            weight_dtype = torch.float32
            if args.mixed_precision == "fp16":
                weight_dtype = torch.float16
            return weight_dtype
        def get_hidden_states(text_encoder, input_ids, weight_dtype=None):
            encoder_hidden_states = text_encoder(input_ids)[0]
            if weight_dtype is not None:
                encoder_hidden_states = encoder_hidden_states.to(weight_dtype)
            return encoder_hidden_states
    """
    train = """
        import torch
        from lib import util
        def train(args, controlnet, text_encoder, loader):
            weight_dtype = util.prepare_dtype(args)
            optimizer = torch.optim.AdamW(controlnet.parameters(), lr=args.lr)
            for batch in loader:
                hidden = util.get_hidden_states(text_encoder, batch["input_ids"], weight_dtype)
                controlnet(batch["latents"], hidden).float().pow(2).mean().backward()
                optimizer.step()
    """
    files = {"lib/__init__.py": "", "lib/util.py": util, "train.py": train}
    (ep,) = project(tmp_path, files).entry_points()
    assert Regime(ep.signals).mode == "fp32"
    # near miss: the encoder itself cast to the dtype is a half model
    files["lib/util.py"] = util.replace("encoder_hidden_states = text_encoder(input_ids)[0]",
                                        "text_encoder.to(weight_dtype)\n            encoder_hidden_states = text_encoder(input_ids)[0]")
    (ep,) = project(tmp_path / "enc", files).entry_points()
    assert Regime(ep.signals).mode == "fp16"


def test_a_module_cast_to_float16_and_put_in_eval_mode_by_a_loader_method_is_frozen(tmp_path):
    # sd-scripts hunyuan_image_train_network.py load_target_model: `vae.to(dtype=torch.float16)  # VAE is always
    # fp16`, `vae.eval()`, `return vae`; the trainer optimizes only the LoRA network (triage T4-7b)
    from amplint.project import Regime
    train = """
        import torch
        class NetworkTrainer:
            def load_target_model(self):
                vae = VAE()
                vae.to(dtype=torch.float16)
                vae.eval()
                return vae
            def train(self, loader):
                vae = self.load_target_model()
                network = LoRANetwork()
                optimizer = torch.optim.AdamW(network.parameters(), lr=1e-4)
                for images in loader:
                    with torch.no_grad():
                        latents = vae.encode(images.half()).float()
                    network(latents).pow(2).mean().backward()
                    optimizer.step()
    """
    (ep,) = project(tmp_path, {"train_network.py": train}).entry_points()
    assert Regime(ep.signals).mode == "fp32"
    # near miss: a model evaluated between epochs and put back in training mode is the trained one
    evaluated = train.replace("vae.eval()", "vae.eval()\n                vae.train(True)")
    (ep,) = project(tmp_path / "back", {"train_network.py": evaluated}).entry_points()
    assert Regime(ep.signals).mode == "fp16"


def test_a_trainer_config_with_mixed_precision_true_is_fp16_autocast(tmp_path):
    # coqui TTS recipes: `config = VitsConfig(..., mixed_precision=True)`, `Trainer(TrainerArgs(), config, ...).fit()`;
    # the installed trainer package runs autocast + GradScaler when it is True (triage T5-6)
    from amplint.project import Regime
    recipe = """
        from trainer import Trainer, TrainerArgs
        from TTS.tts.configs.vits_config import VitsConfig
        config = VitsConfig(batch_size=32, mixed_precision=True)
        trainer = Trainer(TrainerArgs(), config, "runs/", model=None)
        trainer.fit()
    """
    (ep,) = project(tmp_path, {"recipes/train_vits.py": recipe}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"
    # near miss: mixed_precision=False trains in float32
    (ep,) = project(tmp_path / "off", {"recipes/train_vits.py": recipe.replace("=True", "=False")}).entry_points()
    assert Regime(ep.signals).mode == "fp32"


# nerfstudio's method registry (triage T5-14): each `TrainerConfig(method_name=..., mixed_precision=True|False,
# pipeline=...(model=XModelConfig()))` names the model it trains; scripts/train.py picks one of them
_RUN_REGISTRY = {
    "ns/__init__.py": "",
    "ns/trainer.py": """
        from dataclasses import dataclass
        import torch

        @dataclass
        class TrainerConfig:
            method_name: str = "base"
            mixed_precision: bool = False
            model: object = None

        class Trainer:
            def __init__(self, config):
                self.config = config
                self.model = config.model.setup()
                self.optimizer = torch.optim.Adam(self.model.parameters())
                self.grad_scaler = torch.cuda.amp.GradScaler(enabled=config.mixed_precision)

            def train_iteration(self, batch):
                with torch.autocast(device_type="cuda", enabled=self.config.mixed_precision):
                    loss = sum(self.model.get_loss_dict(self.model(batch), batch).values())
                self.grad_scaler.scale(loss).backward()
                self.grad_scaler.step(self.optimizer)
                self.grad_scaler.update()
    """,
    "ns/common.py": """
        import torch
        def clamp_weights(w):
            return w.clip(1e-3, 1.0 - 1e-3)
    """,
    "ns/nerfacto.py": """
        from dataclasses import dataclass
        import torch.nn.functional as F
        from torch import nn
        from ns.common import clamp_weights

        class NerfactoModel(nn.Module):
            def get_loss_dict(self, outputs, batch):
                return {"rgb": F.mse_loss(outputs["rgb"], batch["image"])}

        @dataclass
        class NerfactoModelConfig:
            def setup(self):
                return NerfactoModel()
    """,
    "ns/surface.py": """
        from dataclasses import dataclass
        import torch.nn.functional as F
        from torch import nn
        from ns.common import clamp_weights

        class SurfaceModel(nn.Module):
            def get_loss_dict(self, outputs, batch):
                weights_sum = clamp_weights(outputs["weights"].sum(dim=1))
                return {"fg_mask_loss": F.binary_cross_entropy(weights_sum, batch["fg_mask"].float())}

        @dataclass
        class SurfaceModelConfig:
            def setup(self):
                return SurfaceModel()
    """,
    "ns/neus.py": """
        from dataclasses import dataclass
        from ns.surface import SurfaceModel, SurfaceModelConfig

        class NeuSModel(SurfaceModel):
            pass

        @dataclass
        class NeuSModelConfig(SurfaceModelConfig):
            def setup(self):
                return NeuSModel()
    """,
    "ns/method_configs.py": """
        from ns.nerfacto import NerfactoModelConfig
        from ns.neus import NeuSModelConfig
        from ns.trainer import TrainerConfig

        method_configs = {}
        method_configs["nerfacto"] = TrainerConfig(method_name="nerfacto", mixed_precision=True,
                                                   model=NerfactoModelConfig())
        method_configs["neus"] = TrainerConfig(method_name="neus", mixed_precision=False, model=NeuSModelConfig())
    """,
    "train.py": """
        import sys
        from ns.method_configs import method_configs
        from ns.trainer import Trainer

        def train_loop(config, loader):
            trainer = Trainer(config)
            for batch in loader:
                trainer.train_iteration(batch)

        if __name__ == "__main__":
            train_loop(method_configs[sys.argv[1]], loader=[])
    """,
}


def test_a_run_config_precision_applies_to_the_code_of_the_model_it_names(tmp_path):
    p = project(tmp_path, _RUN_REGISTRY)
    mode = {f: p.regime_for(p.root / f).mode for f in ("ns/surface.py", "ns/neus.py", "ns/nerfacto.py", "ns/common.py",
                                                        "ns/trainer.py")}
    # neus' config names NeuSModelConfig, whose base (and model) lives in surface.py: trained in float32 only
    assert mode["ns/surface.py"] == mode["ns/neus.py"] == "fp32"
    assert "the run configs naming its code: " in p.regime_for(p.root / "ns/surface.py").scope
    # near misses: the nerfacto model's file, a helper both models import, the trainer every run uses
    assert mode["ns/nerfacto.py"] == mode["ns/common.py"] == mode["ns/trainer.py"] == "fp16-mixed"
    r = run(["check", "--select", "AMP202", "-q", "."], p.root)
    assert "surface.py" not in r.out and r.rc == 0


def test_a_run_config_that_turns_mixed_precision_on_for_the_model_keeps_its_findings(tmp_path):
    # near miss: neus configured with mixed_precision=True too
    files = dict(_RUN_REGISTRY)
    files["ns/method_configs.py"] = files["ns/method_configs.py"].replace(
        'method_name="neus", mixed_precision=False', 'method_name="neus", mixed_precision=True')
    p = project(tmp_path, files)
    assert p.regime_for(p.root / "ns/surface.py").mode == "fp16-mixed"
    r = run(["check", "--select", "AMP202", "."], p.root)
    assert "surface.py:10" in r.out and "AMP202" in r.out


def test_a_run_config_without_the_keyword_is_read_at_its_class_default(tmp_path):
    # a third run naming the neus model with no mixed_precision keyword: TrainerConfig's `mixed_precision: bool = False`
    files = dict(_RUN_REGISTRY)
    files["ns/method_configs.py"] = files["ns/method_configs.py"].rstrip() + \
        '\n        method_configs["neus-b"] = TrainerConfig(method_name="neus-b", model=NeuSModelConfig())\n'
    p = project(tmp_path / "off", files)
    assert p.regime_for(p.root / "ns/surface.py").mode == "fp32"
    # near miss: the class default True makes that run (and the surface model's code) one of fp16-mixed / fp32
    files["ns/trainer.py"] = files["ns/trainer.py"].replace("mixed_precision: bool = False", "mixed_precision: bool = True")
    p = project(tmp_path / "on", files)
    assert p.regime_for(p.root / "ns/surface.py").mode == "fp16-mixed"


def test_a_plugin_precision_from_a_helper_parameter_is_what_the_callers_pass(tmp_path):
    # Open-Sora: `create_colossalai_plugin(plugin, dtype, ...)` builds `LowLevelZeroPlugin(precision=dtype)`;
    # scripts/train.py passes `dtype=cfg_dtype`, `cfg_dtype = cfg.get("dtype", "bf16")` (all configs keep bf16)
    from amplint.project import Regime
    helper = """
        from colossalai.booster.plugin import LowLevelZeroPlugin
        def create_colossalai_plugin(plugin, dtype, grad_clip):
            return LowLevelZeroPlugin(stage=2, precision=dtype, max_norm=grad_clip)
    """
    train = """
        from colossalai.booster import Booster
        from pkg.train_utils import create_colossalai_plugin
        def main(cfg, model, optimizer, loader):
            cfg_dtype = cfg.get("dtype", "bf16")
            plugin = create_colossalai_plugin(plugin="zero2", dtype=cfg_dtype, grad_clip=1.0)
            booster = Booster(plugin=plugin)
            model, optimizer, _, loader, _ = booster.boost(model=model, optimizer=optimizer, dataloader=loader)
            for batch in loader:
                booster.backward(loss=model(batch), optimizer=optimizer)
                optimizer.step()
    """
    files = {"pkg/__init__.py": "", "pkg/train_utils.py": helper, "train.py": train}
    (ep,) = project(tmp_path, files).entry_points()
    assert Regime(ep.signals).mode == "bf16"
    # near misses: a caller passing "fp16" gives fp16 with master weights; a value no caller states is one of
    (ep,) = project(tmp_path / "fp16", {**files, "train.py": train.replace('cfg.get("dtype", "bf16")', '"fp16"')}).entry_points()
    assert Regime(ep.signals).mode == "fp16-master"
    (ep,) = project(tmp_path / "cli", {**files, "train.py": train.replace('cfg.get("dtype", "bf16")', "cfg.dtype")}).entry_points()
    assert Regime(ep.signals).mode == "fp16-master"


_MMENGINE_TRAIN = """
    import argparse
    from mmengine.config import Config
    from mmengine.runner import Runner
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("config")
        args = parser.parse_args()
        cfg = Config.fromfile(args.config)
        if args.amp:
            cfg.optim_wrapper.type = "AmpOptimWrapper"
        runner = Runner.from_cfg(cfg)
        runner.train()
    if __name__ == "__main__":
        main()
"""


def test_an_mmengine_runner_trains_and_amp_optim_wrapper_is_fp16_autocast(tmp_path):
    # mmocr tools/train.py (held-out bug B19): `--amp` sets cfg.optim_wrapper.type = "AmpOptimWrapper", then
    # Runner.from_cfg(cfg).train(); the registered nn.BCELoss loss is refused by CUDA autocast (AMP202)
    from amplint.project import Regime
    losses = """
        import torch
        class MaskedBCELoss(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.loss = torch.nn.BCELoss(reduction="none")
            def forward(self, prob, gt, mask):
                return (self.loss(prob, gt) * mask).sum() / mask.sum().clamp(min=1)
    """
    files = {"setup.py": "from setuptools import setup\nsetup(name='pkg')\n", "pkg/__init__.py": "",
             "pkg/losses.py": losses, "tools/train.py": _MMENGINE_TRAIN}
    (ep,) = project(tmp_path, files).entry_points()
    # --amp and the configs pick AmpOptimWrapper or not: the launch decides (fp32 or fp16 autocast), and what
    # fails under any autocast is reported (mmpretrain's --amp: its BLIP / CLIP temperatures are not judged
    # as under a known fp16 run)
    regime = Regime(ep.signals)
    assert ep.functions[0]["why"] == ["runner.train"] and regime.mode == "fp32" and regime.launcher is not None
    r = run(["check", "--no-cache", "--select", "AMP202", "."], tmp_path / "p")
    assert "pkg/losses.py:8:" in r.out
    # a config file's optim_wrapper = dict(type="AmpOptimWrapper", dtype="bfloat16") is bf16 autocast
    (sig,) = [s for s in file_facts(b"optim_wrapper = dict(type='AmpOptimWrapper', dtype='bfloat16')\n",
                                    "configs/x.py")["signals"]]
    assert sig["dtype"] == "bfloat16"
    # near miss: without the AmpOptimWrapper switch the runner trains in float32
    files["tools/train.py"] = _MMENGINE_TRAIN.replace('cfg.optim_wrapper.type = "AmpOptimWrapper"', "pass")
    (ep,) = project(tmp_path / "fp32", files).entry_points()
    assert Regime(ep.signals).mode == "fp32" and Regime(ep.signals).launcher is None
    r = run(["check", "--no-cache", "--select", "AMP202", "."], tmp_path / "fp32" / "p")
    assert "AMP202" not in r.out


def test_a_backward_given_the_gradients_with_no_step_is_no_training_loop():
    # mmpretrain's reversible ViT: RevBlock.backward_pass recomputes activations with `f_y1.backward(d_y1)` inside
    # the autograd backward of the block; no optimizer (triage T4-11)
    src = """
        import torch
        class RevBlock(torch.nn.Module):
            def backward_pass(self, y1, d_y1):
                with torch.enable_grad():
                    f_y1 = self.f(y1)
                    f_y1.backward(d_y1, retain_graph=True)
                return y1.grad
    """
    assert file_facts(textwrap.dedent(src).encode(), "revnet.py")["entry_points"] == []
    # near miss: a training step that also steps the optimizer stays an entry point
    stepped = src.replace("return y1.grad", "self.opt.step()")
    assert [e["function"] for e in file_facts(textwrap.dedent(stepped).encode(), "revnet.py")["entry_points"]] == \
        ["backward_pass"]


def test_a_sub_models_own_config_beside_its_code_is_not_the_trainers(tmp_path):
    # StyleTTS2: Utils/PLBERT/config.yml (`mixed_precision: "fp16"`) is PL-BERT's pretraining config shipped with
    # its checkpoint; util.py beside it reads only model_params. train_second.py trains in float32 (triage T5-11)
    from amplint.project import Regime
    train = """
        import torch
        import yaml
        from accelerate import Accelerator
        from Utils.PLBERT.util import load_plbert
        def main(model, loader):
            config = yaml.safe_load(open("Configs/config.yml"))
            plbert = load_plbert("Utils/PLBERT")
            accelerator = Accelerator()
            optimizer = torch.optim.AdamW(model.parameters())
            model, optimizer = accelerator.prepare(model, optimizer)
            for x in loader:
                accelerator.backward(model(x).mean())
                optimizer.step()
    """
    util = "import yaml\ndef load_plbert(d):\n    return yaml.safe_load(open(d + '/config.yml'))['model_params']\n"
    files = {"train_second.py": train, "Utils/PLBERT/util.py": util,
             "Utils/PLBERT/config.yml": 'mixed_precision: "fp16"\nmodel_params:\n  hidden: 768\n',
             "Configs/config.yml": "epochs: 10\n"}
    (ep,) = project(tmp_path, files).entry_points()
    assert Regime(ep.signals).mode == "fp32"
    # near misses: the same file in a run directory holding no code, or in Configs/, is the trainer's
    for where in ("runs/exp1/config.yml", "Configs/train.yml"):
        moved = {**files, where: files["Utils/PLBERT/config.yml"]}
        del moved["Utils/PLBERT/config.yml"]
        (ep,) = project(tmp_path / where.split("/")[0], moved).entry_points()
        assert Regime(ep.signals).mode == "fp16-mixed", where


def test_a_call_of_timms_loss_scaler_is_a_training_step(tmp_path):
    # DeiT engine.py: `loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())`, the scaler
    # a NativeScaler() main.py builds: backward, unscale_, clip, step and update in one call (triage T5-13)
    src = """
        import torch
        def train_one_epoch(model, criterion, loader, optimizer, loss_scaler, max_norm=0.0):
            for samples, targets in loader:
                with torch.cuda.amp.autocast():
                    loss = criterion(model(samples), targets)
                optimizer.zero_grad()
                loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())
    """
    (e,) = file_facts(textwrap.dedent(src).encode(), "engine.py")["entry_points"]
    assert e["function"] == "train_one_epoch"
    # near miss: a scaler's one-argument call (a learning-rate or image scaler) is not one
    called = src.replace("loss_scaler(loss, optimizer, clip_grad=max_norm, parameters=model.parameters())", "loss_scaler(loss)")
    assert file_facts(textwrap.dedent(called).encode(), "engine.py")["entry_points"] == []


_FINETUNE_TRAINER = """
    import torch
    from torch.optim import AdamW
    class Finetune:
        def __init__(self, model, loader):
            self.model = model
            self.loader = loader
            self.optimizer = AdamW(params=self.model.parameters(), lr=1e-6, eps=1e-08)
            self.grad_scaler = torch.cuda.amp.GradScaler()
        def _train_step(self, batch):
            self.optimizer.zero_grad()
            self.grad_scaler.scale(self.model(batch)).backward()
            self.grad_scaler.step(self.optimizer)
            self.grad_scaler.update()
        def run(self):
            for batch in self.loader:
                self._train_step(batch)
"""
_FINETUNE_MAIN = """
    import torch
    from fairseq2.models import load_unity_model
    from pkg.cli.trainer import Finetune
    def main(name, loader):
        float_dtype = torch.float16
        model = load_unity_model(name, device=torch.device("cpu"), dtype=float_dtype)
        Finetune(model=model, loader=loader).run()
    if __name__ == "__main__":
        main("m", [])
"""


def test_a_program_that_builds_a_trainer_class_runs_its_loop_with_the_model_it_loads(tmp_path):
    # seamless_communication (held-out B22): finetune.py loads the model with dtype=torch.float16 and runs
    # trainer.py's UnitYFinetune, whose __init__ builds AdamW(eps=1e-08) and a GradScaler over it
    files = {"pkg/__init__.py": "", "pkg/cli/__init__.py": "", "pkg/cli/trainer.py": _FINETUNE_TRAINER,
             "pkg/cli/finetune.py": _FINETUNE_MAIN}
    p = project(tmp_path, files)
    (ep,) = p.entry_points()
    assert ep.display.endswith("finetune.py") and ep.functions[0]["function"] == "main"
    # the launcher's file never trains itself (no backward, no optimizer): its load is still training evidence
    assert [r for r, what, _ in ep.roles if "load_unity_model" in what] == ["training"]
    r = run(["check", "--no-cache", "--select", "AMP101", "."], tmp_path / "p")
    assert "pkg/cli/trainer.py:8:" in r.out
    # near misses: the model loaded in float32 (the fix); a trainer class built by a method of another class
    # (a framework's own plumbing) is no program
    files["pkg/cli/finetune.py"] = _FINETUNE_MAIN.replace("torch.float16", "torch.float32")
    r = run(["check", "--no-cache", "--select", "AMP101", "."], write_project(tmp_path / "f32", {
        k: textwrap.dedent(v) for k, v in files.items()}))
    assert "AMP101" not in r.out
    files["pkg/cli/finetune.py"] = "from pkg.cli.trainer import Finetune\nclass Runner:\n" \
                                   "    def go(self, model, loader):\n        Finetune(model, loader).run()\n"
    (ep,) = project(tmp_path / "method", files).entry_points()
    assert ep.display.endswith("trainer.py")


@pytest.mark.parametrize("call", ["accelerator.backward(loss)", "model_engine.backward(loss)",
                                  "torch.autograd.backward(loss)", "booster.backward(loss, optimizer)"])
def test_a_frameworks_backward_given_the_loss_still_trains(call):
    # near misses of the given-gradients rule: these take the loss (the step runs elsewhere)
    src = f"import torch\ndef step(model, batch, accelerator, model_engine, booster, optimizer):\n" \
          f"    loss = model(batch).mean()\n    {call}\n"
    assert [e["function"] for e in file_facts(src.encode(), "train.py")["entry_points"]] == ["step"]


def test_a_precision_assigned_a_literal_per_branch_is_one_of_them(tmp_path):
    # parler-tts run_parler_tts_training.py: mixed_precision = "fp16" / "bf16" / "no" by training_args.dtype, then
    # Accelerator(mixed_precision=mixed_precision): plain fp32 with no evidence before (triage T5-12)
    from amplint.project import Regime
    src = """
        import torch
        from accelerate import Accelerator
        def main(training_args, model, loader):
            if training_args.dtype == "float16":
                mixed_precision = "fp16"
            elif training_args.dtype == "bfloat16":
                mixed_precision = "bf16"
            else:
                mixed_precision = "no"
            accelerator = Accelerator(mixed_precision=mixed_precision)
            optimizer = torch.optim.AdamW(model.parameters())
            model, optimizer = accelerator.prepare(model, optimizer)
            for batch in loader:
                accelerator.backward(model(batch).mean())
                optimizer.step()
    """
    (ep,) = project(tmp_path, {"train.py": src}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"
    assert any("one of" in s.condition for s, _ in ep.signals)
    # near miss: reassigned in sequence (no branch), the last value holds
    seq = src.replace('''            if training_args.dtype == "float16":
                mixed_precision = "fp16"
            elif training_args.dtype == "bfloat16":
                mixed_precision = "bf16"
            else:
                mixed_precision = "no"''', '''            mixed_precision = "fp16"
            mixed_precision = "bf16"''')
    (ep,) = project(tmp_path / "seq", {"train.py": seq}).entry_points()
    assert Regime(ep.signals).mode == "bf16"


def test_a_dtype_falling_back_to_float16_when_the_parameter_is_left_none_is_a_half_load(tmp_path):
    # AnglE (held-out B25): `from_pretrained(name, torch_dtype=torch_dtype or torch.float16)`, torch_dtype=None by default
    from amplint.project import Regime
    src = """
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        def load(name, torch_dtype=None):
            return AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch_dtype or torch.float16)
        model = load("gpt2")
        Trainer(model=model, args=TrainingArguments(output_dir="out", fp16=True), train_dataset=None).train()
    """
    (ep,) = project(tmp_path, {"train.py": src}).entry_points()
    assert Regime(ep.signals).mode == "fp16"
    # near miss: a parameter with no None default is one of the two (beside fp16=True: the mixed run is judged)
    (ep,) = project(tmp_path / "arg", {"train.py": src.replace("torch_dtype=None", "torch_dtype")}).entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"


def test_a_setup_function_named_for_evaluation_that_calls_the_training_loop_is_training(tmp_path):
    # glow-tts' ``train_and_eval`` builds the model, runs apex's amp.initialize under ``if hps.fp16_run:`` and
    # calls ``train(...)`` each epoch: its evidence is the training's, not an evaluation's (triage T9-1)
    source = textwrap.dedent("""
        import torch
        from apex import amp
        def train_and_eval(hps, loader, val_loader):
            model = torch.nn.Linear(4, 4).cuda()
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            if hps.fp16_run:
                model, optimizer = amp.initialize(model, optimizer, opt_level="O1")
            for epoch in range(10):
                train(hps, model, optimizer, loader)
                evaluate(model, val_loader)
        def train(hps, model, optimizer, loader):
            for x in loader:
                loss = model(x).pow(2).mean()
                loss.backward()
                optimizer.step()
        def evaluate(model, val_loader):
            with torch.no_grad():
                for x in val_loader:
                    model(x).half()
    """)
    facts = file_facts(source.encode(), "train.py", "train")
    roles = {s["text"].split("(", 1)[0]: s["role"] for s in facts["signals"]}
    assert roles.get("amp.initialize") == "training"


ADAPTER = """
import torch
from torch import nn

class ParallelLinearAdapter(nn.Module):
    def __init__(self, dim, config):
        super().__init__()
        self.linear = nn.Linear(dim, dim)
        if config.bf16:
            self.bfloat16()
        elif config.fp16:
            self.half()  # match the host model's O2 cast
"""


def test_a_module_casting_its_own_parameters_is_not_the_programs_precision(tmp_path):
    # NeMo's ParallelLinearAdapter: ``elif config.fp16: self.half()`` in its __init__ says what the adapter
    # holds, not that the programs reaching it train a pure-half model (it made an fp32 vocoder's Snake
    # `eps=1e-9` "a guard of a pure-half parameter", and AMP101 fire on the vocoder's Adam)
    assert roles(ADAPTER, "peft/adapter.py") == [("module", "self.half()")]
    p = project(tmp_path, {
        "peft/__init__.py": "", "peft/adapter.py": ADAPTER,
        "train.py": "import torch\nfrom peft.adapter import ParallelLinearAdapter\n"
                    "def main(model, cfg, x):\n    adapter = ParallelLinearAdapter(4, cfg)\n"
                    "    opt = torch.optim.Adam(model.parameters())\n" + STEP,
    })
    assert p.regime_for(p.root / "train.py").mode == "fp32"
    r = run(["check", "--show-settings", "."], p.root)
    assert "[module]" in r.out and "the module casts its own parameters" in r.out, r.out
    assert "AMP101" not in run(["check", "--select", "AMP101", "."], p.root).out


def test_a_trainer_method_casting_its_model_is_still_training_evidence():
    # near miss: ``self.model.half()`` in a trainer's method casts the model the program trains
    src = """
        import torch
        class Trainer:
            def setup(self, args):
                if args.fp16:
                    self.model.half()
            def train(self, loader):
                for x in loader:
                    self.model(x).sum().backward()
                    self.opt.step()
    """
    assert roles(src) == [("training", "self.model.half()")]


BF16_AMP_SCRIPT = """
import argparse
import torch
parser = argparse.ArgumentParser()
parser.add_argument("--amp", action="store_true")
args = parser.parse_args()
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.AdamW(model.parameters())
for step in range(10):
    with torch.autocast("cuda", dtype=torch.{dtype}, enabled=args.amp):
        loss = model(torch.randn(4, 8, device="cuda")).float().pow(2).mean()
    loss.backward()
    opt.step()
"""
PLAIN_SCRIPT = "import torch\ndef main(model, x, opt):\n" + STEP


@pytest.mark.parametrize("dtype, mode", [("bfloat16", "bf16"), ("float16", "fp16-mixed")])
def test_a_run_sh_runs_the_train_py_beside_it_and_a_generic_amp_flag_means_its_autocast(tmp_path, dtype, mode):
    # PhysicsNeMo: examples/.../airfrans/run.sh runs the train.py beside it with --amp (bf16 autocast there);
    # another example's train.py of the same name trains in fp32
    p = project(tmp_path, {
        "examples/a/run.sh": "torchrun --nproc_per_node 1 train.py --amp\n",
        "examples/a/train.py": BF16_AMP_SCRIPT.replace("{dtype}", dtype),
        "examples/b/train.py": PLAIN_SCRIPT,
    })
    assert p.regime_for(p.root / "examples/a/train.py").mode == mode
    assert p.regime_for(p.root / "examples/b/train.py").mode == "fp32"


def test_a_run_sh_naming_a_path_from_the_root_runs_that_program(tmp_path):
    # near miss: the script names the program by its path from the root
    p = project(tmp_path, {
        "scripts/run.sh": "python examples/b/train.py --fp16\n",
        "examples/a/train.py": PLAIN_SCRIPT,
        "examples/b/train.py": PLAIN_SCRIPT,
    })
    assert p.regime_for(p.root / "examples/b/train.py").mode == "fp16-mixed"  # a --fp16 flag alone: autocast
    assert p.regime_for(p.root / "examples/a/train.py").mode == "fp32"


DOMAINBED_ALGORITHMS = """
import torch

def get_algorithm_class(algorithm_name):
    if algorithm_name not in globals():
        raise NotImplementedError(algorithm_name)
    return globals()[algorithm_name]

class ERM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Linear(4, 4)
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=1e-3)

    def distances(self, x1, x2):
        x1_norm = x1.pow(2).sum(dim=-1, keepdim=True)
        x2_norm = x2.pow(2).sum(dim=-1, keepdim=True)
        res = torch.addmm(x2_norm.transpose(-2, -1), x1, x2.transpose(-2, -1), alpha=-2).add_(x1_norm)
        return res.clamp_min_(1e-30)

    def update(self, x):
        z = self.net(x)
        loss = torch.exp(-self.distances(z, z)).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()
"""
DOMAINBED_TRAIN = """
import torch
from domainbed import algorithms

if __name__ == "__main__":
    algorithm_class = algorithms.get_algorithm_class("ERM")
    algorithm = algorithm_class()
    for step in range(100):
        algorithm.update(torch.randn(8, 4))
"""


@pytest.mark.parametrize("lookup", ["globals()[algorithm_name]", "getattr(sys.modules[__name__], algorithm_name)"])
def test_a_program_building_the_trainer_class_through_a_name_lookup_runs_its_loop(tmp_path, lookup):
    # DomainBed (unseen set 10, T10-6): scripts/train.py builds the algorithm through get_algorithm_class's
    # globals() lookup and calls its update(); the package's loop is that program's (fp32), not library code
    src = DOMAINBED_ALGORITHMS.replace("globals()[algorithm_name]", lookup)
    if "sys." in lookup:
        src = "import sys\n" + src
    p = project(tmp_path, {"domainbed/__init__.py": "", "domainbed/algorithms.py": src,
                           "domainbed/scripts/__init__.py": "", "domainbed/scripts/train.py": DOMAINBED_TRAIN})
    r = p.regime_for(p.root / "domainbed/algorithms.py")
    assert r.mode == "fp32" and "library" not in r.scope, r.scope
    assert "AMP102" not in run(["check", "."], p.root).out
