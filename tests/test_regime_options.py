"""Which of a project's precision options is judged (issue 8): a half option with float32 master
weights, a flag that is the half cast's own switch, a frozen module cast to half beside the model
that trains. Each case is a small project named after the real code it stands for."""
import re
import textwrap

from amplint.context.evidence import Signal
from amplint.context.file_context import Evidence
from amplint.precision_facts import file_facts
from amplint.project import Project, Regime, regime_data, regime_from

from cliutil import run, write_project


def project(tmp_path, files):
    return Project(write_project(tmp_path / "p", {k: textwrap.dedent(v) for k, v in files.items()}))


# fairseq: `--fp16` (model.half() + FP16Optimizer keeping fp32 master weights) beside a later `--amp`
_FAIRSEQ = {
    "trainer.py": """
        import torch
        from optim import FP16Optimizer, AMPOptimizer
        class Trainer:
            def __init__(self, cfg, model):
                if cfg.common.fp16:
                    assert not cfg.common.amp
                    model = model.half()
                self.model = model
                self.opt = AMPOptimizer(model) if cfg.common.amp else FP16Optimizer(model)
            def train_step(self, x):
                with torch.autocast("cuda", enabled=self.cfg.common.amp):
                    loss = self.model(x).sum()
                self.opt.backward(loss)
                self.opt.step()
    """,
    "optim.py": """
        import torch
        class FP16Optimizer:
            def __init__(self, model):
                self.fp32_params = [p.detach().float() for p in model.parameters()]
                self.inner = torch.optim.Adam(self.fp32_params)
        class AMPOptimizer:
            def __init__(self, model):
                self.scaler = torch.amp.GradScaler("cuda")
    """,
    "modules/kmeans.py": """
        import torch.nn.functional as F
        from torch import nn
        class Kmeans(nn.Module):
            def forward(self, x):
                return F.normalize(x, 2, dim=-1)
    """,
}


def test_a_half_option_with_master_weights_is_judged_beside_an_amp_option(tmp_path):
    p = project(tmp_path, _FAIRSEQ)
    assert [m.rsplit("/", 1)[-1] for m in p.master_optimizers()] == ["optim.py:FP16Optimizer"]
    r = p.regime_for(p.root / "modules/kmeans.py")
    assert r.mode == "fp16-master" and r.half_params is not None and r.half_optimizer is None
    out = run(["check", "--select", "AMP102", "--output-format", "concise", "."], p.root).out
    assert "modules/kmeans.py:6" in out and "normalize" in out


def test_without_master_weights_the_amp_option_is_judged(tmp_path):
    # near miss: the same script with a plain optimizer (open_clip's `--precision pure_fp16` beside amp)
    files = dict(_FAIRSEQ, **{"optim.py": _FAIRSEQ["optim.py"].replace("FP16Optimizer", "PlainOptimizer")
                              .replace("fp32_params", "params")})
    files["trainer.py"] = files["trainer.py"].replace("FP16Optimizer", "PlainOptimizer")
    p = project(tmp_path, files)
    assert p.master_optimizers() == []
    assert p.regime_for(p.root / "modules/kmeans.py").mode == "fp16-mixed"


def test_the_half_cast_s_own_command_line_flag_is_not_a_mixed_alternative(tmp_path):
    train = """
        import argparse, torch
        p = argparse.ArgumentParser()
        p.add_argument("--fp16", action="store_true")
        def main(args, model, loader):
            if args.fp16:
                model = model.half()
            opt = torch.optim.AdamW(model.parameters())
            for x in loader:
                model(x).sum().backward()
                opt.step()
    """
    p = project(tmp_path, {"train.py": train})
    assert p.regime_for(p.root / "train.py").mode == "fp16"
    # near miss: an `--amp` flag is another option, and the mixed one is judged
    p = project(tmp_path / "amp", {"train.py": train.replace('"--fp16"', '"--amp"')})
    assert p.regime_for(p.root / "train.py").mode == "fp16-mixed"


# Time-MoE (held-out bug B18): `--precision fp16` loads float16 weights AND passes fp16=True to the HF Trainer
_TIME_MOE = """
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
    def train_model(cfg, data):
        precision = cfg.get("precision", "bf16")
        if precision == "bf16":
            torch_dtype = torch.bfloat16
        elif precision == "fp16":
            torch_dtype = torch.float16
        else:
            torch_dtype = torch.float32
        args = TrainingArguments(output_dir="out", bf16=True if precision == "bf16" else False,
                                 fp16=True if precision == "fp16" else False,
                                 adam_epsilon=float(cfg.get("adam_epsilon", 1e-8)), optim=cfg.get("optim", "adamw_torch"))
        model = AutoModelForCausalLM.from_pretrained("m", torch_dtype=torch_dtype)
        Trainer(model=model, args=args, train_dataset=data).train()
"""


def test_a_trainer_fp16_flag_switched_by_the_half_load_s_own_test_is_the_same_run(tmp_path):
    # the float16 load and `fp16=True` are both taken when precision == "fp16": float16 parameters under the
    # Trainer's AdamW (it fails with "Attempting to unscale FP16 gradients"), not an fp16-mixed alternative
    p = project(tmp_path, {"train.py": _TIME_MOE})
    assert p.regime_for(p.root / "train.py").mode == "fp16"
    out = run(["check", "--select", "AMP101", "--output-format", "concise", "."], p.root).out
    assert "train.py:14:" in out and "adam_epsilon=1e-8" in out  # `cfg.get("optim", "adamw_torch")`: AdamW by default
    # near misses: float16 loaded under two tests (`"fp16"`, `"half"`) says no one switch: the flag is taken as the
    # mixed-precision alternative, as before ...
    two = _TIME_MOE.replace("        else:\n            torch_dtype = torch.float32",
                            '        elif precision == "half":\n            torch_dtype = torch.float16')
    assert two != _TIME_MOE
    p = project(tmp_path / "two", {"train.py": two})
    assert p.regime_for(p.root / "train.py").mode == "fp16-mixed"
    # ... and an optimizer whose default the config read names is no AdamW (no eps on float16 parameters)
    p = project(tmp_path / "ada", {"train.py": _TIME_MOE.replace('"adamw_torch"', '"adafactor"')})
    assert "AMP101" not in run(["check", "--select", "AMP101", "."], p.root).out


def test_a_cached_regime_keeps_which_casts_are_conditional():
    sig = Signal("half_params", "float16", pure=True, conditional=True, condition="if args.fp16")
    r = Regime([(sig, Evidence("`model.half()`", "train.py", 3))])
    back = regime_from(regime_data(r))
    assert back.signals[0][0] == sig


# diffusers' train_dreambooth.py: frozen vae / text encoder cast to weight_dtype, AdamW over the unet
_DREAMBOOTH = """
    import torch
    from accelerate import Accelerator
    def main(args, unet, vae, text_encoder, loader):
        accelerator = Accelerator(mixed_precision=args.mixed_precision)
        vae.requires_grad_(False)
        if not args.train_text_encoder:
            text_encoder.requires_grad_(False)
        opt = torch.optim.AdamW(unet.parameters(), eps=1e-8)
        unet, opt = accelerator.prepare(unet, opt)
        weight_dtype = torch.float32
        if accelerator.mixed_precision == "fp16":
            weight_dtype = torch.float16
        vae.to(accelerator.device, dtype=weight_dtype)
        if not args.train_text_encoder:
            text_encoder.to(accelerator.device, dtype=weight_dtype)
        for x in loader:
            latents = vae.encode(x.to(weight_dtype))
            loss = unet(latents).float().pow(2).mean()
            accelerator.backward(loss)
            opt.step()
"""


def test_a_frozen_module_cast_to_half_means_mixed_precision_for_the_trained_model(tmp_path):
    p = project(tmp_path, {"train.py": _DREAMBOOTH})
    r = p.regime_for(p.root / "train.py")
    assert r.mode == "fp16-mixed" and r.half_params is None
    assert run(["check", "--select", "AMP101", "-q", "."], p.root).rc == 0


def test_frozen_through_its_parameters_and_loaded_frozen_from_pretrained():
    src = textwrap.dedent("""
        import torch
        from transformers import T5EncoderModel
        def main(model, encoder, loader, opt):
            for q in encoder.parameters():
                q.requires_grad = False
            encoder.to(dtype=torch.float16)
            text_pipeline = Pipeline.from_pretrained("x", torch_dtype=torch.float16)
            for x in loader:
                model(encoder(x)).sum().backward()
                opt.step()
    """)
    # float16 written in the casts themselves: the frozen parts' own dtype, not evidence of the trained
    # model's precision (sd-scripts' `vae.to(dtype=torch.float16)  # VAE is always fp16`, triage T4-7)
    roles = [s["role"] for s in file_facts(src.encode(), "train.py", None)["signals"]]
    assert roles == ["inference", "inference"]
    # near miss (diffusers): cast to a dtype variable that follows accelerate's mixed precision, the
    # frozen parts say the run is fp16 mixed precision
    src = src.replace("dtype=torch.float16", "dtype=weight_dtype").replace(
        "    for q in encoder.parameters():",
        "    weight_dtype = torch.float16 if mixed_precision == 'fp16' else torch.float32\n"
        "    for q in encoder.parameters():")
    kinds = [(s["kind"], s["pure"], s["role"]) for s in file_facts(src.encode(), "train.py", None)["signals"]]
    assert kinds == [("flag", False, "training"), ("flag", False, "training")]


def test_the_trained_model_cast_to_half_stays_a_half_model(tmp_path):
    # near miss: the unet itself cast to float16 (nothing frozen) is pure half, AMP101 fires
    src = _DREAMBOOTH.replace("vae.to(accelerator.device", "unet.to(accelerator.device")
    p = project(tmp_path, {"train.py": src})
    assert p.regime_for(p.root / "train.py").mode == "fp16"


# litgpt: `precision = precision or get_default_supported_precision(training=True)` -> L.Fabric(precision=...)
_LITGPT = {
    "pkg/__init__.py": "from pkg.api import LLM\n",
    "pkg/utils.py": """
        import torch
        def get_default_supported_precision(training: bool) -> str:
            if torch.cuda.is_available() and not torch.cuda.is_bf16_supported():
                return "16-mixed" if training else "16-true"
            return "bf16-mixed" if training else "bf16-true"
    """,
    "pkg/api.py": """
        import lightning as L
        from pkg.utils import get_default_supported_precision
        class LLM:
            def distribute(self):
                fabric = L.Fabric(precision=get_default_supported_precision(training=False))
                self.model = fabric.setup(self.model)
    """,
    "pkg/finetune.py": """
        import lightning as L
        import pkg
        from pkg.utils import get_default_supported_precision
        def setup(model, precision=None, quantize=None):
            precision = precision or get_default_supported_precision(training=True)
            if quantize:
                precision = None
            fabric = L.Fabric(precision=precision)
            fit(fabric, model)
        def fit(fabric, model):
            model, opt = fabric.setup(model, model.make_optimizer())
            fabric.backward(model(1).sum())
            opt.step()
    """,
    "pkg/generate/base.py": """
        import lightning as L
        from pkg.utils import get_default_supported_precision
        def main(model, precision=None):
            precision = precision or get_default_supported_precision(training=False)
            fabric = L.Fabric(precision=precision)
            model = fabric.setup(model)
            return model(1)
    """,
}


def test_a_precision_returned_by_a_project_function_is_one_of_its_returns(tmp_path):
    p = project(tmp_path, _LITGPT)
    assert "base.py" not in [e.path.name for e in p.entry_points()]  # fabric.setup in generate/: inference
    r = p.regime_for(p.root / "pkg/finetune.py")
    # the training branch gives "16-mixed" or "bf16-mixed": float16 first; the inference Fabric of
    # LLM.distribute (training=False: "16-true"), imported but not called by the script, is not evidence
    assert r.mode == "fp16-mixed" and r.half_params is None
    assert "16-mixed" in r.fp16.what or "finetune.py" in r.fp16.path


def test_a_precision_function_with_no_float16_return_is_no_float16_evidence(tmp_path):
    files = dict(_LITGPT)
    files["pkg/utils.py"] = "def get_default_supported_precision(training):\n    return 'bf16-mixed' if training else 'bf16-true'\n"
    p = project(tmp_path, files)
    assert p.regime_for(p.root / "pkg/finetune.py").mode == "bf16"


def test_a_precision_asked_for_inference_is_not_the_trainers(tmp_path):
    # litgpt's tutorials (triage T6-2): `L.Trainer(precision="bf16-true")` trains a model from `LLM.load(...)`,
    # whose `L.Fabric(precision=get_default_supported_precision(training=False))` casts a model for generation
    # ("16-true" or "bf16-true"): that Fabric's precision is inference evidence, the Trainer's bf16 is the run's
    files = dict(_LITGPT)
    files["pkg/api.py"] = """
        import lightning as L
        from pkg.utils import get_default_supported_precision
        class LLM:
            @classmethod
            def load(cls, distribute="auto"):
                fabric = L.Fabric(precision=get_default_supported_precision(training=False))
                return cls()
    """
    files["train.py"] = """
        import lightning as L
        import torch
        from pkg.api import LLM
        class Lit(L.LightningModule):
            def __init__(self):
                super().__init__()
                self.llm = LLM.load()
            def configure_optimizers(self):
                return torch.optim.AdamW(self.llm.model.parameters(), lr=2e-4)
        def main():
            L.Trainer(precision="bf16-true").fit(Lit(), None)
    """
    p = project(tmp_path, files)
    assert p.regime_for(p.root / "train.py").mode == "bf16"
    assert "AMP101" not in run(["check", "--select", "AMP101", "."], p.root).out
    # near miss: the same helper asked for training precision (`training=True`: "16-mixed" first) is evidence
    files["pkg/api.py"] = files["pkg/api.py"].replace("training=False", "training=True")
    p = project(tmp_path / "t", files)
    assert p.regime_for(p.root / "train.py").mode == "fp16-mixed"


# torchtune: recipe YAML `dtype: bf16` (195 configs), read through training.get_dtype(cfg.dtype)
def test_a_training_config_s_dtype_is_the_model_s_dtype(tmp_path):
    p = project(tmp_path, {
        "configs/run.yaml": "dtype: fp16\nbatch_size: 4\noptimizer:\n  _component_: torch.optim.AdamW\n",
        "recipe.py": """
            import torch
            DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
            def train(cfg, model):
                model = model.to(dtype=DTYPES[cfg.dtype])
                opt = torch.optim.AdamW(model.parameters(), eps=1e-8)
                model(1).backward()
                opt.step()
        """})
    assert p.regime_for(p.root / "recipe.py").mode == "fp16"
    assert "AMP101" in run(["check", "--select", "AMP101", "--output-format", "concise", "."], p.root).out


def test_config_dtype_near_misses():
    from amplint.config_evidence import config_signals
    [(sig, line, _)] = config_signals(b"epochs: 1\ndtype: bf16\n", "7B_full.yaml")
    assert (sig.kind, sig.dtype, sig.pure, line) == ("half_params", "bfloat16", True, 2)
    assert config_signals(b"max_new_tokens: 300\ndtype: fp16\nbatch_size: 1\n", "generation.yaml") == []
    assert config_signals(b"data:\n  dtype: float16\n  batch_size: 4\n", "data.yaml") == []  # not top level
    assert config_signals(b"dtype: float16\npath: x.bin\n", "storage.yaml") == []  # no training keys


# Hugging Face: a model loaded in float16 and handed to Trainer(args=TrainingArguments(fp16=True))
_HF = """
    import torch
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
    def main(ds):
        model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=torch.float16)
        args = TrainingArguments(output_dir="out", fp16=True)
        t = Trainer(model=model, args=args, train_dataset=ds)
        t.train()
"""


def test_a_half_model_handed_to_the_hf_trainer_is_trained_in_half(tmp_path):
    p = project(tmp_path, {"finetune.py": _HF})
    assert [e.functions[0]["function"] for e in p.entry_points()] == ["main"]
    assert p.regime_for(p.root / "finetune.py").mode == "fp16"
    assert "AMP101" in run(["check", "--select", "AMP101", "--output-format", "concise", "."], p.root).out


def test_a_chained_trainer_train_is_an_entry_point():
    src = textwrap.dedent("""
        from transformers import Trainer, TrainingArguments
        Trainer(model=model, args=TrainingArguments("out", fp16=True)).train()
    """)
    assert file_facts(src.encode(), "finetune.py", None)["entry_points"][0]["why"] == ["Trainer.train"]


def test_a_half_base_model_under_lora_adapters_is_mixed_precision(tmp_path):
    # near miss: PEFT freezes the float16 base model and trains float32 adapters
    src = _HF.replace("        args =", "        model = get_peft_model(model, LoraConfig(r=8))\n        args =")
    p = project(tmp_path, {"finetune.py": "from peft import LoraConfig, get_peft_model\n" + textwrap.dedent(src)})
    assert p.regime_for(p.root / "finetune.py").mode == "fp16-mixed"


def test_a_half_task_model_under_peft_trains_its_head_in_half(tmp_path):
    # pykoi's reward model: PEFT trains a copy of the classification head (modules_to_save) in the
    # base's float16, so TrainingArguments' implicit adam_epsilon=1e-8 is a hazard
    src = _HF.replace("AutoModelForCausalLM", "AutoModelForSequenceClassification").replace(
        "        args =", "        model = get_peft_model(model, LoraConfig(r=8, task_type='SEQ_CLS'))\n        args =")
    p = project(tmp_path, {"finetune.py": "from peft import LoraConfig, get_peft_model\n" + textwrap.dedent(src)})
    assert p.regime_for(p.root / "finetune.py").mode == "fp16"
    assert "AMP101" in run(["check", "--select", "AMP101", "--output-format", "concise", "."], p.root).out


def test_a_frozen_half_task_model_is_not_trained_in_half(tmp_path):
    # near miss: the same model frozen with requires_grad_(False) (a reward model scoring another's outputs)
    src = _HF.replace("AutoModelForCausalLM", "AutoModelForSequenceClassification").replace(
        "        args =", "        model.requires_grad_(False)\n        args =")
    p = project(tmp_path, {"finetune.py": src})
    assert p.regime_for(p.root / "finetune.py").mode == "fp16-mixed"


_TWO_TRAINERS = {
    "pkg/__init__.py": "from .sft import SFT\nfrom .reward import Reward\n",
    "pkg/sft.py": """
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        class SFT:
            def __init__(self, cfg):
                self.args = TrainingArguments(output_dir="out", fp16=cfg.fp16)
                self.model = AutoModelForCausalLM.from_pretrained("gpt2")
            def train(self):
                Trainer(model=self.model, args=self.args).train()
    """,
    "pkg/reward.py": """
        import torch
        from transformers import AutoModelForCausalLM, Trainer, TrainingArguments
        import pkg
        class Reward(Trainer):
            def __init__(self, cfg):
                args = TrainingArguments(output_dir="out", bf16=cfg.bf16)
                self.torch_dtype = torch.bfloat16 if cfg.bf16 else torch.float16
                model = AutoModelForCausalLM.from_pretrained("gpt2", torch_dtype=self.torch_dtype)
                super().__init__(model=model, args=args)
            def train_and_save(self):
                self.train()
    """,
}


def test_a_half_option_is_judged_per_entry_point(tmp_path):
    # pykoi: the reward trainer's model is float16 unless cfg.bf16; the SFT script's fp16=True
    # autocast is another run's precision, not a mixed-precision alternative of this one
    p = project(tmp_path, _TWO_TRAINERS)
    modes = {e.display.rsplit("/", 1)[-1]: Regime(e.signals).mode for e in p.entry_points()}
    assert modes == {"reward.py": "fp16", "sft.py": "fp16-mixed"}
    reward = p.regime_for(p.root / "pkg" / "reward.py")
    assert reward.mode == "fp16" and reward.half_optimizer is not None
    assert "AMP101" in run(["check", "--select", "AMP101", "--output-format", "concise", "pkg/reward.py"], p.root).out
    # near miss: the SFT script is imported by the reward's package, but its run does not run SFT's code
    assert p.regime_for(p.root / "pkg" / "sft.py").mode == "fp16-mixed"
    assert "AMP101" not in run(["check", "--select", "AMP101", "--output-format", "concise", "pkg/sft.py"], p.root).out


def test_one_run_with_a_half_option_beside_autocast_stays_mixed():
    # near miss: within ONE entry point, `if args.fp16: model.half()` beside its autocast is an option
    half = Signal("half_params", "float16", pure=True, conditional=True, condition="if args.precision == 'fp16'")
    amp = Signal("autocast", "float16")
    ev = Evidence("x", "train.py", 1)
    assert Regime([(half, ev), (amp, ev)], origins=(("a",), ("a",))).mode == "fp16-mixed"
    assert Regime([(half, ev), (amp, ev)], origins=(("a",), ("b",))).mode == "fp16"
    assert Regime([(half, ev), (amp, ev)], origins=(("a",), ("a", "b"))).mode == "fp16-mixed"
    back = regime_from(regime_data(Regime([(half, ev), (amp, ev)], origins=(("a",), ("b",)))))
    assert back.origins == (("a",), ("b",)) and back.mode == "fp16"


# ---- evidence an entry point's code calls, not every line of the modules it imports ----------------

_MONOREPO = {
    "common/__init__.py": "",
    "common/build.py": """
        import torch
        def build_plain(model):
            return model.cuda()
        def build_half(model):
            model = model.half()
            return model
    """,
    "a/train.py": """
        import torch
        from common.build import build_plain
        def main(model, x):
            model = build_plain(model)
            opt = torch.optim.AdamW(model.parameters())
            model(x).sum().backward()
            opt.step()
    """,
    "b/train.py": """
        import torch
        from common.build import build_half
        def main(model, x):
            model = build_half(model)
            opt = torch.optim.AdamW(model.parameters())
            model(x).sum().backward()
            opt.step()
    """,
}


def test_evidence_in_a_helper_counts_only_for_the_entry_points_calling_it(tmp_path):
    p = project(tmp_path, _MONOREPO)
    assert p.regime_for(p.root / "a/train.py").mode == "fp32"
    assert p.regime_for(p.root / "b/train.py").mode == "fp16"
    # the shared module runs under both: judged under each, so float16 is among them
    assert p.regime_for(p.root / "common/build.py").mode == "fp16"


def test_module_level_evidence_of_an_imported_module_still_counts(tmp_path):
    files = dict(_MONOREPO)
    files["common/build.py"] = textwrap.dedent(files["common/build.py"]) + "SCALER = torch.amp.GradScaler('cuda')\n"
    p = project(tmp_path, files)
    assert p.regime_for(p.root / "a/train.py").mode == "fp16-mixed"


def test_an_entry_point_without_evidence_does_not_make_unreached_code_library(tmp_path):
    # fairseq: an optimizer wrapper whose step() steps another optimizer is an entry point with no
    # evidence; the models built through a registry are reached by no import
    p = project(tmp_path, {
        "train.py": "import torch\ndef main(model, opt):\n    model = model.half()\n    model(1).backward()\n    opt.step()\n",
        "composite.py": "class Composite:\n    def step(self):\n        self.optimizer.step()\n",
        "models/attn.py": "import torch\n",
    })
    assert p.regime_for(p.root / "models/attn.py").mode == "fp16"


# ---- real-bug misses (benchmarks/real_bugs.md) ----------------------------------------------------

def test_a_disabled_config_block_is_no_evidence():
    # openfold's deepspeed_config.json: "amp": {"enabled": false, "opt_level": "O2"}
    from amplint.config_evidence import config_signals
    assert config_signals(b'{"amp": {"enabled": false, "opt_level": "O2"}}', "deepspeed_config.json") == []
    [(sig, _, _)] = config_signals(b'{"amp": {"enabled": true, "opt_level": "O2"}}', "deepspeed_config.json")
    assert sig.master


def test_a_trainer_subclass_training_itself_is_an_entry_point(tmp_path):
    # pykoi: RewardTrainer(Trainer).train_and_save() calls self.train(); the reward model is loaded in float16
    p = project(tmp_path, {"rw.py": """
        import torch
        from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
        class RewardTrainer(Trainer):
            def __init__(self, cfg):
                self.torch_dtype = torch.bfloat16 if cfg.bf16 else torch.float16
                model = AutoModelForSequenceClassification.from_pretrained("gpt2", torch_dtype=self.torch_dtype)
                super().__init__(model=model, args=TrainingArguments(output_dir="out", bf16=cfg.bf16))
            def train_and_save(self, path):
                self.train()
                self.save_model(path)
    """})
    assert [e.functions[0]["function"] for e in p.entry_points()] == ["train_and_save"]
    assert p.regime_for(p.root / "rw.py").mode == "fp16"
    # near miss: a module's own self.train() (nn.Module.train, switching to training mode) trains nothing
    src = "from torch import nn\nclass Net(nn.Module):\n    def fit(self):\n        self.train()\n"
    assert file_facts(src.encode(), "net.py", None)["entry_points"] == []


def test_an_autograd_function_backward_is_not_an_entry_point():
    # peft boft: @staticmethod backward(ctx, grad) calling a CUDA extension's .backward(...)
    src = textwrap.dedent("""
        import torch
        class FastBlockDiag(torch.autograd.Function):
            @staticmethod
            def backward(ctx, grad_output):
                return ext.backward(grad_output, ctx.saved_tensors[0])
    """)
    assert file_facts(src.encode(), "layer.py", None)["entry_points"] == []


def test_a_published_package_is_not_given_fp32_by_its_own_examples(tmp_path):
    # linformer-pytorch: its examples/ train in fp32; the package's users train it in fp16
    files = {
        "setup.py": "from setuptools import setup\nsetup(name='pkg')\n",
        "pkg/__init__.py": "from pkg.model import Model\n",
        "pkg/model.py": "import torch\nclass Model(torch.nn.Module):\n    pass\n",
        "examples/train.py": "import torch\nfrom pkg import Model\ndef main(x, opt):\n    Model()(x).backward()\n    opt.step()\n",
    }
    p = project(tmp_path, files)
    assert p.regime_for(p.root / "pkg/model.py").scope.startswith("library")
    # near misses: examples that train in fp16 give it their precision; a training script outside
    # examples/ is the project's own training
    p = project(tmp_path / "amp", dict(files, **{"examples/train.py": files["examples/train.py"].replace(
        "    Model()(x)", "    with torch.autocast('cuda'):\n        y = Model()(x)\n    y")}))
    assert p.regime_for(p.root / "pkg/model.py").mode == "fp16-mixed"
    # the same without setup.py (linformer-pytorch's tree before it had one)
    p = project(tmp_path / "bare", {k: v for k, v in files.items() if k != "setup.py"})
    assert p.regime_for(p.root / "pkg/model.py").scope.startswith("library")
    # (pkg/model.py: `from pkg import Model` runs the module defining Model, not the re-exporting __init__'s code)
    assert "only example scripts with no precision evidence reach 1 file (library policy)" in run(["check", "."], p.root).out
    assert "package files only example scripts with no precision evidence reach: 1" in \
        run(["check", "--show-settings", "."], p.root).out
    # a research repository: its package beside a train.py at the root (and examples too)
    p = project(tmp_path / "research", dict(files, **{"train.py": files["examples/train.py"]}))
    assert p.regime_for(p.root / "pkg/model.py").mode == "fp32"
    p = project(tmp_path / "own", dict(files, **{"train.py": files.pop("examples/train.py")}))
    assert p.regime_for(p.root / "pkg/model.py").mode == "fp32"


_LAUNCHED = """
    import torch
    import torch.nn.functional as F
    from torch import nn
    from accelerate import Accelerator
    class Loss:
        def __call__(self, logits, target):
            return F.binary_cross_entropy(logits.sigmoid(), target)
    def main(model, loader, opt):
        accelerator = Accelerator()
        model, opt = accelerator.prepare(model, opt)
        for x, y in loader:
            accelerator.backward(Loss()(model(x), y))
            opt.step()
"""


def test_a_precision_the_launcher_decides_judges_what_fails_under_any_autocast(tmp_path):
    # Yolov7-training: pytorch_accelerated / `accelerate launch --mixed_precision fp16` decide the precision
    p = project(tmp_path, {"train.py": _LAUNCHED})
    r = p.regime_for(p.root / "train.py")
    assert r.mode == "fp32" and r.launcher is not None  # no float16 premise for the other rules
    out = run(["check", "--output-format", "concise", "."], p.root).out
    assert "AMP202" in out and "launcher" in out
    # near miss: mixed_precision="no" is the script's own choice
    p = project(tmp_path / "no", {"train.py": _LAUNCHED.replace("Accelerator()", 'Accelerator(mixed_precision="no")')})
    assert p.regime_for(p.root / "train.py").launcher is None
    assert "AMP202" not in run(["check", "--output-format", "concise", "."], p.root).out


_LAUNCHED_SCAN = """
    import torch
    from accelerate import Accelerator
    from torch import nn
    def scan(a, kv, eps={eps}):
        return torch.cumsum(a.clamp(min=eps).log(), dim=1) + kv
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = nn.Linear(8, 8)
        def forward(self, x):
            return scan(self.gate(x).sigmoid(), x).sum()
    def main(loader):
        accelerator = Accelerator()
        model = Net()
        opt = torch.optim.Adam(model.parameters())
        model, opt = accelerator.prepare(model, opt)
        for x in loader:
            accelerator.backward(model(x))
            opt.step()
"""


def test_a_precision_the_launcher_decides_judges_what_is_a_hazard_under_any_float16_use(tmp_path):
    # gateloop-transformer (fixed upstream): `a.clamp(min=1e-20).log()`, launched in fp16 by its users
    def findings(p):
        out = run(["check", "--output-format", "concise", "."], p.root).out
        return [line for line in out.splitlines() if re.match(r"\S+:\d+:\d+: AMP\d+", line)]

    p = project(tmp_path, {"train.py": _LAUNCHED_SCAN.replace("{eps}", "1e-20")})
    (finding,) = findings(p)  # no AMP101: no precision is assumed for the optimizer
    assert finding.startswith("train.py:5:") and " AMP102 " in finding and "the launcher's" in finding
    # near misses: the fixed guard, and the same script with its precision set to "no"
    assert findings(project(tmp_path / "fixed", {"train.py": _LAUNCHED_SCAN.replace("{eps}", "1e-4")})) == []
    assert findings(project(tmp_path / "no", {"train.py": _LAUNCHED_SCAN.replace("{eps}", "1e-20").replace(
        "Accelerator()", 'Accelerator(mixed_precision="no")')})) == []


def test_a_training_file_another_entry_point_imports_but_never_calls_stays_an_entry_point(tmp_path):
    # speechbrain: tokenizers/SentencePiece.py (an entry point) imports the package; core.py's Brain.fit
    # (autocast + GradScaler) is not its helper
    p = project(tmp_path, {
        "pkg/__init__.py": "from pkg.core import Brain\n",
        "pkg/core.py": """
            import torch
            class Brain:
                def fit_batch(self, x):
                    with torch.autocast("cuda"):
                        loss = self.model(x)
                    self.scaler.scale(loss).backward()
                    self.scaler.step(self.optimizer)
        """,
        "pkg/tokenizer.py": """
            import pkg
            def train_bpe(spm, x):
                spm.optimizer.step()
        """,
    })
    assert sorted(e.path.name for e in p.entry_points()) == ["core.py", "tokenizer.py"]


_SUBCLASSED_TRAINER = {
    "pkg/__init__.py": "",
    "pkg/trainer.py": """
        from pytorch_accelerated import Trainer
        class DetectorTrainer(Trainer):
            def calculate_train_batch_loss(self, batch):
                return self.loss_func(self.model(batch[0]), batch[1])
    """,
    "pkg/loss.py": """
        import torch.nn.functional as F
        class Loss:
            def __call__(self, logits, target):
                return F.binary_cross_entropy(logits.sigmoid(), target)
    """,
    "examples/train.py": """
        import torch
        from pkg.trainer import DetectorTrainer
        from pkg.loss import Loss
        def main(model):
            trainer = DetectorTrainer(model=model, loss_func=Loss(), optimizer=torch.optim.SGD(model.parameters(), lr=0.1))
            trainer.train(train_dataset=None, num_epochs=1)
    """,
}


def test_a_project_subclass_of_a_launcher_trainer_leaves_the_precision_to_the_launcher(tmp_path):
    # Yolov7-training: examples build yolov7.trainer.Yolov7Trainer(pytorch_accelerated.Trainer); its loss's
    # F.binary_cross_entropy fails under `accelerate launch --mixed_precision fp16`
    p = project(tmp_path, _SUBCLASSED_TRAINER)
    r = p.regime_for(p.root / "pkg" / "loss.py")
    assert r.mode == "fp32" and r.launcher is not None and "DetectorTrainer" in r.launcher.what
    out = run(["check", "--output-format", "concise", "."], p.root).out
    assert "AMP202" in out
    assert "Assumed precision: fp32: set by the launcher or the caller (`pkg.trainer.DetectorTrainer(...)`)" in out  # not "no autocast ..."
    # near miss: the same subclass of another library's trainer (its own precision: fp32 here)
    other = {**_SUBCLASSED_TRAINER,
             "pkg/trainer.py": _SUBCLASSED_TRAINER["pkg/trainer.py"].replace("pytorch_accelerated", "mylib")}
    p = project(tmp_path / "other", other)
    assert p.regime_for(p.root / "pkg" / "loss.py").launcher is None
    assert "AMP202" not in run(["check", "--output-format", "concise", "."], p.root).out


# ---- a trainer picked by a conditional expression; Lightning keywords in a ``**params`` dict ------

_PICKED_TRAINER = {
    "pkg/__init__.py": "",
    "pkg/trainers.py": """
        import torch
        class SimpleTrainer:
            def __init__(self, model, loader, optimizer):
                self.model, self.loader, self.optimizer = model, loader, optimizer
            def run_step(self, batch):
                loss = self.model(batch)
                loss.backward()
                self.optimizer.step()
            def train(self):
                for batch in self.loader:
                    self.run_step(batch)
        class AMPTrainer(SimpleTrainer):
            def __init__(self, model, loader, optimizer):
                super().__init__(model, loader, optimizer)
                self.scaler = torch.amp.GradScaler("cuda")
            def run_step(self, batch):
                with torch.autocast("cuda", dtype=torch.float16):
                    loss = self.model(batch)
                self.scaler.scale(loss).backward()
                self.scaler.step(self.optimizer)
                self.scaler.update()
    """,
    "train.py": """
        import torch
        from pkg.trainers import AMPTrainer, SimpleTrainer
        def do_train(cfg, model, loader):
            optim = torch.optim.SGD(model.parameters(), lr=0.1)
            trainer = (AMPTrainer if cfg.amp_enabled else SimpleTrainer)(model, loader, optim)
            trainer.train()
    """,
}


def test_a_trainer_picked_by_a_conditional_expression_reaches_both(tmp_path):
    # detectron2's lazyconfig_train_net: (AMPTrainer if cfg.train.amp.enabled else SimpleTrainer)(...)
    p = project(tmp_path, _PICKED_TRAINER)
    (ep,) = p.entry_points()
    assert ep.display.endswith("train.py") and Regime(ep.signals).mode == "fp16-mixed"
    # near miss: a script that imports the trainers but runs a loop of its own
    alone = dict(_PICKED_TRAINER, **{"train.py": """
        import torch
        from pkg.trainers import AMPTrainer, SimpleTrainer
        def do_train(cfg, model, loader):
            optim = torch.optim.SGD(model.parameters(), lr=0.1)
            for x in loader:
                model(x).sum().backward()
                optim.step()
    """})
    p = project(tmp_path / "alone", alone)
    modes = {e.display.rsplit("/", 1)[-1]: Regime(e.signals).mode for e in p.entry_points()}
    assert modes["train.py"] == "fp32"
    # detectron2: the trainers come through the package's star re-export (engine/__init__: from .train_loop import *)
    starred = {**_PICKED_TRAINER, "pkg/__init__.py": "from .trainers import *\n",
               "train.py": _PICKED_TRAINER["train.py"].replace("from pkg.trainers import", "from pkg import")}
    p = project(tmp_path / "starred", starred)
    assert p.index.resolve("pkg.AMPTrainer").name == "pkg.trainers.AMPTrainer"
    modes = {e.display.rsplit("/", 1)[-1]: Regime(e.signals).mode for e in p.entry_points()}
    assert modes["train.py"] == "fp16-mixed"
    assert p.index.resolve("pkg.NoSuchTrainer") is None


_SPLAT = """
    import pytorch_lightning as pl
    def train(cfg, module):
        params = {"max_steps": cfg.max_iter}
        if cfg.amp_enabled:
            params["precision"] = 16
        trainer = pl.Trainer(**params)
        trainer.fit(module)
"""


def test_lightning_precision_in_a_kwargs_dict(tmp_path):
    # detectron2's lightning_train_net: trainer_params["precision"] = 16 under `if cfg.SOLVER.AMP.ENABLED`
    p = project(tmp_path, {"train.py": _SPLAT})
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "fp16-mixed"
    assert "if cfg.amp_enabled" in ep.signals[0][0].condition
    for near_miss in (_SPLAT.replace("= 16", "= 32"),  # a float32 run
                      _SPLAT.replace('params["precision"] = 16', 'other["precision"] = 16'),  # another dict
                      _SPLAT.replace("        trainer.fit(module)", '        params["precision"] = 16\n        trainer.fit(module)')
                      .replace('        if cfg.amp_enabled:\n            params["precision"] = 16\n', "")):  # set after the call
        p = project(tmp_path / str(abs(hash(near_miss))), {"train.py": near_miss})
        (ep,) = p.entry_points()
        assert Regime(ep.signals).mode == "fp32", near_miss


_CALLERS_TRAINER = {
    "pkg/__init__.py": "",
    "pkg/loss.py": """
        import torch.nn.functional as F
        class BinaryLoss:
            def __call__(self, logits, target):
                return F.binary_cross_entropy(logits.sigmoid(), target)
    """,
    "pkg/model.py": """
        from pytorch_lightning import Trainer
        from pkg.loss import BinaryLoss
        class Model:
            def fit(self, loader, max_epochs=10, **trainer_kwargs):
                self.loss = BinaryLoss()
                trainer = Trainer(max_epochs=max_epochs, **trainer_kwargs)
                trainer.fit(self, loader)
    """,
}


def test_a_lightning_trainer_built_from_the_callers_kwargs_takes_the_callers_precision(tmp_path):
    # graphnet's EasySyntax.fit(..., **trainer_kwargs): users pass precision="16-mixed"; its loss's
    # F.binary_cross_entropy then raises under autocast
    p = project(tmp_path, _CALLERS_TRAINER)
    r = p.regime_for(p.root / "pkg" / "loss.py")
    assert r.mode == "fp32" and r.launcher is not None
    assert "AMP202" in run(["check", "--output-format", "concise", "."], p.root).out
    assert "set by the launcher or the caller" in run(["check", "--show-settings", "."], p.root).out
    # near misses: the trainer's own precision, and kwargs that are not the function's own **kwargs
    for src in (_CALLERS_TRAINER["pkg/model.py"].replace("max_epochs=max_epochs,", "precision=32, max_epochs=max_epochs,"),
                _CALLERS_TRAINER["pkg/model.py"].replace("**trainer_kwargs)", "**self.trainer_kwargs)")):
        p = project(tmp_path / str(abs(hash(src))), {**_CALLERS_TRAINER, "pkg/model.py": src})
        assert p.regime_for(p.root / "pkg" / "loss.py").launcher is None
        assert "AMP202" not in run(["check", "--output-format", "concise", "."], p.root).out


_LIBRARY_LOOP = {
    "pyproject.toml": "[project]\nname = 'imglib'\n",
    "imglib/__init__.py": "from .color import rgb_to_hsv\nfrom .register import ImageRegistrator\n",
    "imglib/color.py": """
        import torch
        def rgb_to_hsv(image: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
            max_rgb = image.amax(-3)
            return (max_rgb - image.amin(-3)) / (max_rgb + eps)
    """,
    "imglib/register.py": """
        import torch
        from torch import nn
        class ImageRegistrator(nn.Module):
            def __init__(self):
                super().__init__()
                self.h = nn.Parameter(torch.eye(3))
            def register(self, src, dst, steps=100):
                opt = torch.optim.Adam(self.parameters(), lr=1e-3)
                for _ in range(steps):
                    loss = (src @ self.h - dst).abs().mean()
                    loss.backward()
                    opt.step()
                return self.h
    """,
}


def test_a_packages_own_optimisation_loop_does_not_make_the_package_fp32(tmp_path):
    # kornia: ImageRegistrator.register fits a homography with Adam; the rest of the library (rgb_to_hsv's
    # eps=1e-8, NaN on a black pixel in float16) is its users' to run in fp16: the library policy applies
    p = project(tmp_path, _LIBRARY_LOOP)
    color = p.regime_for(p.root / "imglib" / "color.py")
    assert color.library
    out = run(["check", "--output-format", "concise", "."], p.root).out
    assert "color.py" in out and "AMP102" in out
    assert "only the package's own optimisation loops with no precision evidence reach" in out
    # near misses: a program of the package (run as __main__), a training script at the root
    script = textwrap.dedent(_LIBRARY_LOOP["imglib/register.py"]) + "\nif __name__ == '__main__':\n    ImageRegistrator().register(1, 2)\n"
    p = project(tmp_path / "script", {**_LIBRARY_LOOP, "imglib/register.py": script})
    assert p.regime_for(p.root / "imglib" / "color.py").mode == "fp32"
    assert not p.regime_for(p.root / "imglib" / "color.py").library
    train = "import torch\nimport imglib\ndef main(m, x, opt):\n    m(imglib.rgb_to_hsv(x)).sum().backward()\n    opt.step()\n"
    p = project(tmp_path / "root", {**_LIBRARY_LOOP, "train.py": train})
    assert not p.regime_for(p.root / "imglib" / "color.py").library


def test_package_files_the_packages_own_loop_does_not_reach_are_library_code_too(tmp_path):
    # darts: TorchForecastingModel._train (trainer.fit, no precision) reaches the model classes only
    # through subclass overrides; TFT's attention (masked_fill(-1e9) on a float16 bmm, fixed upstream)
    # was judged fp32 as "not reached", while the files the loop reaches were library code
    attention = """
        import torch
        from torch import nn
        class Attention(nn.Module):
            def forward(self, q, k, mask):
                return torch.bmm(q, k.permute(0, 2, 1)).masked_fill(mask, -1e9)
    """
    p = project(tmp_path, {**_LIBRARY_LOOP, "imglib/attention.py": attention})
    assert p.regime_for(p.root / "imglib" / "attention.py").library
    out = run(["check", "--output-format", "concise", "."], p.root).out
    assert "attention.py:6:" in out and "AMP103" in out
    # near miss: beside a training script of the repository, unreached files keep the project's precision
    train = "import torch\nimport imglib\ndef main(m, x, opt):\n    m(imglib.rgb_to_hsv(x)).sum().backward()\n    opt.step()\n"
    p = project(tmp_path / "root", {**_LIBRARY_LOOP, "imglib/attention.py": attention, "train.py": train})
    assert not p.regime_for(p.root / "imglib" / "attention.py").library


_DECODER = {
    "setup.py": "from setuptools import setup\nsetup(name='asr')\n",
    "asr/__init__.py": "",
    "asr/audio.py": """
        import torch
        def log_mel(audio, filters):
            mel = filters @ audio
            return torch.clamp(mel, min=1e-10).log10()
    """,
    "asr/cli.py": """
        import argparse
        import torch
        from .audio import log_mel
        def transcribe(model, audio, filters, fp16=True):
            mel = log_mel(audio, filters)
            if fp16:
                model = model.half()
            with torch.no_grad():
                return model(mel.half())
        def cli():
            parser = argparse.ArgumentParser()
            parser.add_argument("--fp16", type=bool, default=True, help="whether to perform inference in fp16")
            return parser.parse_args()
    """,
}


def test_a_project_that_never_trains_is_library_code(tmp_path):
    # openai/whisper: an inference --fp16 flag and a decoder's .half(), no backward anywhere: not fp16 training
    p = project(tmp_path, _DECODER)
    assert p.regime_for(p.root / "asr" / "audio.py").library
    facts = file_facts(textwrap.dedent(_DECODER["asr/cli.py"]).encode(), "asr/cli.py", "asr.cli")
    assert [s["role"] for s in facts["signals"] if s["kind"] == "flag"] == ["inference"]
    out = run(["check", "--output-format", "concise", "."], p.root).out
    assert "nothing in the project trains: no training entry point reaches" in out
    assert "runs under fp16 autocast" not in out
    # near misses: a training flag's help text, and a step function that trains (an autocast the project runs)
    train_flag = 'parser.add_argument("--fp16", action="store_true", help="mixed precision training")\n'
    facts = file_facts(("import argparse\nparser = argparse.ArgumentParser()\n" + train_flag).encode(), "train.py", "train")
    assert [s["role"] for s in facts["signals"]] == ["training"]
    stepping = dict(_DECODER, **{"asr/step.py": """
        import torch
        def step(model, x, opt):
            with torch.autocast("cuda"):
                loss = model(x).sum()
            loss.backward()
            opt.step()
    """})
    p = project(tmp_path / "trains", stepping)
    assert not p.regime_for(p.root / "asr" / "audio.py").library
    # an autocast region runs its code in float16 whatever it is for (inference too): not library code
    autocast = dict(_DECODER, **{"asr/cli.py": _DECODER["asr/cli.py"].replace(
        "with torch.no_grad():", "with torch.autocast('cuda'):")})
    p = project(tmp_path / "autocast", autocast)
    assert p.regime_for(p.root / "asr" / "audio.py").mode == "fp16-mixed"
    # and a trainer's precision is a training's, even where no fit() is in sight
    trainer = dict(_DECODER, **{"asr/train.py": "import lightning as L\ntrainer = L.Trainer(precision='16-mixed')\n"})
    p = project(tmp_path / "trainer", trainer)
    assert not p.regime_for(p.root / "asr" / "audio.py").library


# EleutherAI lm-evaluation-harness (triage set 15, T15-3): an evaluation library. Its model wrapper runs
# data-parallel through an accelerate ``Accelerator()`` (the launch picks its precision) and a subclass
# loads a Mamba model with a ``dtype="float16"`` default; nothing runs backward, builds an optimizer or
# hands a model to a trainer. That was "fp16 (pure)" for every file (a numpy softmax helper got AMP203).
_EVAL_HARNESS = {
    "setup.py": "from setuptools import setup\nsetup(name='evalh')\n",
    "evalh/__init__.py": "",
    "evalh/utils.py": """
        import numpy as np
        def softmax(x):
            e_x = np.exp(x - np.max(x))
            return e_x / e_x.sum()
    """,
    "evalh/hf.py": """
        import torch
        from accelerate import Accelerator
        class HFLM:
            def __init__(self, pretrained, device="cuda", dtype="auto"):
                accelerator = Accelerator()
                if accelerator.num_processes > 1:
                    self.accelerator = accelerator
                self._device = device
                self._create_model(pretrained, dtype=dtype)
            def _create_model(self, pretrained, dtype="auto"):
                from transformers import AutoModelForCausalLM
                self._model = AutoModelForCausalLM.from_pretrained(pretrained, torch_dtype=dtype)
            @torch.no_grad()
            def loglikelihood(self, ids):
                return self._model(ids).logits.log_softmax(-1)
    """,
    "evalh/mamba.py": """
        import torch
        from .hf import HFLM
        def get_dtype(dtype):
            return getattr(torch, dtype) if isinstance(dtype, str) and dtype != "auto" else dtype
        class MambaLM(HFLM):
            def _create_model(self, pretrained, dtype="float16"):
                from mamba_ssm.models.mixer_seq_simple import MambaLMHeadModel
                self._model = MambaLMHeadModel.from_pretrained(
                    pretrained, device=self._device, dtype=torch.float16 if dtype == "auto" else get_dtype(dtype))
    """,
}


def test_an_evaluation_library_with_an_accelerator_is_library_code(tmp_path):
    p = project(tmp_path, _EVAL_HARNESS)
    assert not p.entry_points()
    assert p.regime_for(p.root / "evalh" / "utils.py").library
    out = run(["check", "--show-settings", "."], p.root).out
    assert "nothing in the project trains" in out and "fp16 (pure)" not in out
    # near misses: a training step in the project (what the Accelerator launches may be a training), and an
    # Accelerator that states float16 mixed precision itself (its prepared models run under autocast)
    stepping = dict(_EVAL_HARNESS, **{"tune.py": """
        import torch
        from evalh.mamba import MambaLM
        def main(batches):
            lm = MambaLM("state-spaces/mamba-130m")
            opt = torch.optim.SGD(lm._model.parameters(), lr=1e-3)
            for x in batches:
                lm._model(x).logits.sum().backward()
                opt.step()
        if __name__ == "__main__":
            main([])
    """})
    p = project(tmp_path / "trains", stepping)
    assert not p.regime_for(p.root / "evalh" / "utils.py").library
    mixed = dict(_EVAL_HARNESS, **{"evalh/hf.py": _EVAL_HARNESS["evalh/hf.py"].replace(
        "Accelerator()", 'Accelerator(mixed_precision="fp16")')})
    p = project(tmp_path / "mixed", mixed)
    assert not p.regime_for(p.root / "evalh" / "utils.py").library

_VENDORED = {
    "setup.py": "from setuptools import setup\nsetup(name='mylib')\n",
    "mylib/__init__.py": "",
    "mylib/vendor/__init__.py": "",
    "mylib/vendor/fp16_utils.py": """
        import torch
        def wrap_fp16_model(model):
            model.half()
            return model
        class Fp16OptimizerHook:
            def after_train_iter(self, runner):
                (runner.outputs["loss"] * 512.0).backward()
                runner.optimizer.step()
    """,
}


def test_an_uncalled_helper_beside_an_entry_point_is_not_its_precision(tmp_path):
    # LAVIS's vendored mmcv: wrap_fp16_model (never called) beside an optimizer hook's after_train_iter
    p = project(tmp_path, _VENDORED)
    (ep,) = p.entry_points()
    assert Regime(ep.signals).mode == "fp32"
    assert any(role == "uncalled" for role, _, _ in ep.roles)
    # near misses: the hook calls it; a script's main() run under __main__; a method (a framework calls it)
    called = _VENDORED["mylib/vendor/fp16_utils.py"].replace(
        "def after_train_iter(self, runner):", "def after_train_iter(self, runner):\n                wrap_fp16_model(runner.model)")
    script = "import torch\ndef main(model, opt, x):\n    model.half()\n    run(model, opt, x)\n" \
             "def run(model, opt, x):\n    model(x).sum().backward()\n    opt.step()\n" \
             "if __name__ == '__main__':\n    main(None, None, None)\n"
    method = _VENDORED["mylib/vendor/fp16_utils.py"].replace(
        "class Fp16OptimizerHook:", "class Fp16OptimizerHook:\n            def before_run(self, runner):\n"
                                    "                runner.model.half()")
    for files in ({**_VENDORED, "mylib/vendor/fp16_utils.py": called}, {"train.py": script},
                  {**_VENDORED, "mylib/vendor/fp16_utils.py": method}):
        p = project(tmp_path / str(abs(hash(str(files)))), files)
        (ep,) = p.entry_points()
        assert Regime(ep.signals).mode == "fp16", files


_HUB = {
    "setup.py": "from setuptools import setup\nsetup(name='hub')\n",
    "hub/__init__.py": "",
    "hub/glm/__init__.py": "",
    "hub/glm/train_utils.py": """
        import torch
        from hub.glm.model import GLM
        def setup_model(args):
            model = GLM()
            if args.fp16:
                model.half()
            return model
        def train_step(model, batch, optimizer):
            loss = model(batch).sum()
            loss.backward()
            optimizer.step()
        def train(args, loader):
            model = setup_model(args)
            optimizer = torch.optim.Adam(model.parameters())
            for batch in loader:
                train_step(model, batch, optimizer)
    """,
    "hub/glm/model.py": """
        import torch
        from torch import nn
        class GLM(nn.Module):
            def __init__(self):
                super().__init__()
                self.proj = nn.Linear(8, 8)
            def forward(self, x):
                return self.proj(x)
    """,
    "hub/vision/__init__.py": "",
    "hub/vision/stft.py": """
        import torch
        def magnitude_ratio(spec, ref):
            return spec.abs() / (ref.abs() + 1e-8)
    """,
    "examples/finetune_vision.py": """
        import torch
        from hub.glm.model import GLM
        def main(loader):
            model = GLM()
            optimizer = torch.optim.AdamW(model.parameters())
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
    """,
}


def test_a_package_trainers_half_model_is_not_the_precision_of_the_packages_other_models(tmp_path):
    # modelscope: one package trainer's `model.half()` under `if args.fp16` (mglm's train_utils) made 766 files
    # of the package's other models pure half, 94 findings of 105 on that one line
    p = project(tmp_path, _HUB)
    stft = p.regime_for(p.root / "hub" / "vision" / "stft.py")
    assert stft.library and "package's own loops" in stft.scope
    assert p.regime_for(p.root / "hub" / "glm" / "model.py").mode == "fp16"  # what the trainer reaches keeps it
    # near misses: a script of the repository with the float16 evidence, a config file stating fp16
    script = {**_HUB, "train.py": "import torch\nfrom hub.glm.model import GLM\nmodel = GLM().half()\n"
                                  "opt = torch.optim.SGD(model.parameters(), lr=0.1)\nmodel(1).sum().backward()\nopt.step()\n"}
    p = project(tmp_path / "script", script)
    assert not p.regime_for(p.root / "hub" / "vision" / "stft.py").library
    # a file outside the package (a module at the repository's root) is not the package's users'
    outside = {**_HUB, "stft_utils.py": _HUB["hub/vision/stft.py"]}
    p = project(tmp_path / "outside", outside)
    assert not p.regime_for(p.root / "stft_utils.py").library
    # every training of the project is the package's float16 loop: the package trains in float16
    alone = {k: v for k, v in _HUB.items() if not k.startswith("examples/")}
    p = project(tmp_path / "alone", alone)
    assert p.regime_for(p.root / "hub" / "vision" / "stft.py").mode == "fp16"


_LAZY_PACKAGE = {
    "setup.py": "from setuptools import setup\nsetup(name='zoo')\n",
    "zoo/__init__.py": "",
    "zoo/models/__init__.py": "from . import audio, nlp\n",
    "zoo/models/audio/__init__.py": "from .denoise import Denoiser\n",
    "zoo/models/audio/denoise.py": "import torch\nclass Denoiser(torch.nn.Module):\n    pass\n",
    "zoo/models/nlp/__init__.py": "from typing import TYPE_CHECKING\n",
    "zoo/models/nlp/glm/__init__.py": "from typing import TYPE_CHECKING\n",
    "zoo/models/nlp/glm/model.py": "import torch\nclass GLM(torch.nn.Module):\n    pass\n",
    "zoo/models/nlp/glm/train_utils.py": """
        import torch
        import deepspeed
        from zoo.models.nlp.glm.model import GLM
        def train(loader):
            model = GLM()
            optimizer = torch.optim.Adam(model.parameters())
            for x in loader:
                model(x).sum().backward()
                optimizer.step()
    """,
}


def test_an_outside_import_is_no_import_of_the_enclosing_package(tmp_path):
    # modelscope (T9-5): `import torch` in modelscope/models/nlp/mglm/train_utils.py was guessed to be the package-
    # relative `modelscope.models.nlp.mglm.torch`, cut back to `modelscope.models.nlp.mglm` (its __init__), whose
    # `from typing import ...` led to `modelscope.models.nlp`, up to `modelscope.models` and every model it imports
    p = project(tmp_path, _LAZY_PACKAGE)
    [ep] = p.entry_points()
    reached = {p.relative(f) for f in ep.reach}
    assert "zoo/models/nlp/glm/model.py" in reached
    assert not reached & {"zoo/models/audio/denoise.py", "zoo/models/__init__.py", "zoo/models/nlp/glm/__init__.py"}
    # near miss: a package-relative module of that name is still found (a script beside its own helpers)
    files = {**_LAZY_PACKAGE, "zoo/models/nlp/glm/deepspeed.py": "import torch\n"}
    p = project(tmp_path / "own", files)
    [ep] = p.entry_points()
    assert "zoo/models/nlp/glm/deepspeed.py" in {p.relative(f) for f in ep.reach}
