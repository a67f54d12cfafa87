"""Training-framework switches that change what an fp16 training run does at a non-finite step.

Source: PyTorch Lightning's ``Trainer.__init__`` (pytorch_lightning/trainer/trainer.py, 1.x):
``terminate_on_nan: bool = False`` ("If set to True, will terminate training (by raising a
`ValueError`) at the end of each training batch, if any of the parameters or the loss are NaN or
+/-inf"; deprecated in 1.5, removed in 1.7), and ``precision`` (16 / "16" / "16-mixed": native AMP
with a GradScaler, which skips a step whose gradients overflowed and lowers the scale; "16-true":
half parameters, no scaler; "bf16*": no scaler).
"""
from __future__ import annotations

from typing import FrozenSet

LIGHTNING_TRAINERS: FrozenSet[str] = frozenset({
    "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
    "lightning.Trainer", "lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer",
    "lightning.pytorch.trainer.trainer.Trainer",
})
# Lightning 0.7 / 0.8's apex switch: ``Trainer(use_amp=True, amp_level="O1")`` trains with NVIDIA apex at that opt_level
# (O1: autocast-like patching, O2: a half model with float32 master weights, O3: pure half). Source: pytorch_lightning
# 0.8.x trainer/trainer.py (``use_amp=None`` deprecated for ``precision=16``; ``amp_level: str = 'O1'``) and
# trainer/distrib_parts.py (``amp.initialize(model, optimizers, opt_level=self.amp_level)``).
LIGHTNING_APEX_SWITCH = "use_amp"
LIGHTNING_APEX_LEVEL = "amp_level"
LIGHTNING_APEX_DEFAULT_LEVEL = "O1"
# ``precision=`` values that train with float16 autocast and a GradScaler (the int 16 is written as "16").
LIGHTNING_FP16_SCALED: FrozenSet[str] = frozenset({"16", "16-mixed"})
# The keyword that raises at the first non-finite loss or parameter.
TERMINATE_ON_NAN = "terminate_on_nan"

# ColossalAI booster plugins that cast the model to their ``precision`` and keep float32 master
# weights, with dynamic loss scaling, in the optimizer they wrap (ZeRO, Gemini, the mixed-precision
# optimizer): DeepSpeed's fp16 regime, a half model with float32 master weights. Source:
# colossalai/booster/plugin/low_level_zero_plugin.py (``precision: str = 'fp16'``, "Support 'fp16',
# 'bf16' and 'fp32'. Defaults to 'fp16'"), gemini_plugin.py and hybrid_parallel_plugin.py (the same
# keyword and default; ``module.to(self.mixed_precision)``).
COLOSSALAI_MASTER_WEIGHT_PLUGINS: FrozenSet[str] = frozenset({
    "LowLevelZeroPlugin", "GeminiPlugin", "HybridParallelPlugin", "MoeHybridParallelPlugin",
})
COLOSSALAI_DEFAULT_PRECISION = "fp16"

# mmcv 1.x's fp16 optimizer hook, built for ``fp16 = dict(loss_scale=...)`` configs: on torch >= 1.6 it trains in
# fp16 mixed precision (``wrap_fp16_model`` casts nothing there and only switches ``fp16_enabled``, the models'
# ``@auto_fp16`` forwards run under ``torch.cuda.amp.autocast``, and the hook scales the loss with a
# ``torch.cuda.amp.GradScaler``). Source: mmcv 1.x mmcv/runner/hooks/optimizer.py (``if TORCH_VERSION !=
# 'parrots' and digit_version(TORCH_VERSION) >= digit_version('1.6.0'): class Fp16OptimizerHook`` with
# ``self.loss_scaler = GradScaler(...)``), mmcv/runner/fp16_utils.py (``wrap_fp16_model``, ``auto_fp16``).
MMCV_FP16_HOOKS: FrozenSet[str] = frozenset({
    "mmcv.runner.Fp16OptimizerHook", "mmcv.runner.hooks.Fp16OptimizerHook",
    "mmcv.runner.hooks.optimizer.Fp16OptimizerHook",
})

# Hugging Face ``TrainingArguments``' precision switches and their defaults, as a program parsing it from the command
# line (``HfArgumentParser((ModelArguments, TrainingArguments))``) gets them when a launcher passes neither. Source:
# transformers/training_args.py (``fp16: bool = field(default=False, ...)``, ``bf16: bool = field(default=False, ...)``,
# ``fp16_full_eval`` / ``bf16_full_eval`` the same).
HF_TRAINING_ARGUMENTS_SWITCHES = {"fp16": False, "bf16": False, "fp16_full_eval": False, "bf16_full_eval": False}
# MosaicML composer's ``Trainer(precision=...)`` (composer/core/precision.py, ``class Precision``: FP32 = "fp32",
# AMP_FP16 = "amp_fp16" (torch.autocast float16 + a GradScaler), AMP_BF16 = "amp_bf16" (bfloat16 autocast), AMP_FP8):
# the autocast dtype each trains under, also as written in an llm-foundry-style YAML (``precision: amp_bf16``).
COMPOSER_PRECISIONS = {"amp_fp16": "float16", "amp_bf16": "bfloat16"}
