"""AmpGuard as a Hugging Face ``TrainerCallback``: ``Trainer(..., callbacks=[AmpGuardTrainerCallback()])``.

transformers is imported here only; amplint does not depend on it. Hooks used:
- ``on_train_begin``: the guard, on the model and the optimizer the Trainer passes (accelerate's
  prepared optimizer carries the GradScaler of ``fp16=True``; none under ``bf16=True``); the dump
  goes to ``<output_dir>/amp_guard`` unless ``dump_dir`` is given;
- ``on_pre_optimizer_step``: after the Trainer's clipping (which unscaled), before the step:
  ``check_gradients`` names the non-finite parameters;
- ``on_optimizer_step``: after ``optimizer.step()`` (accelerate ran ``scaler.step`` and
  ``scaler.update``), before ``zero_grad``: ``end_step``.
The Trainer does not show its callbacks the batch or the loss, so the dump holds the model,
optimizer and scaler state and the history, without the batch (override ``training_step`` and set
``callback.batch = inputs`` to keep it). These two hooks exist since transformers 4.41.
"""
from __future__ import annotations

import os

try:
    from transformers import TrainerCallback
except ImportError as error:
    raise ImportError("amplint.runtime.hf needs transformers: pip install transformers "
                      "(amplint does not install it)") from error

from .guard import AmpGuard


class AmpGuardTrainerCallback(TrainerCallback):
    """Keyword arguments are AmpGuard's (max_bad_steps, window, dump_dir, scale_drop, ...)."""

    def __init__(self, **guard_options) -> None:
        self.guard_options = guard_options
        self.guard: AmpGuard = None  # type: ignore[assignment]
        self.batch = None

    def on_train_begin(self, args, state, control, model=None, optimizer=None, **kwargs):
        options = dict(self.guard_options)
        options.setdefault("dump_dir", os.path.join(getattr(args, "output_dir", None) or ".", "amp_guard"))
        self.guard = AmpGuard(model, optimizer, **options)

    def on_pre_optimizer_step(self, args, state, control, **kwargs):
        self.guard.check_gradients()

    def on_optimizer_step(self, args, state, control, **kwargs):
        self.guard.end_step(batch=self.batch)
        self.batch = None
