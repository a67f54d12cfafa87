"""AmpGuard as a Lightning callback: ``Trainer(callbacks=[AmpGuardCallback(max_bad_steps=20)])``.

Lightning is imported here only (``lightning`` or the older ``pytorch_lightning``); amplint does not
depend on it. Hooks used:
- ``on_train_start``: the guard, on the LightningModule, the first optimizer and the precision
  plugin's GradScaler (``precision="16-mixed"``; none for ``"bf16-mixed"`` / ``"16-true"``);
- ``on_before_optimizer_step``: Lightning has unscaled the gradients (before clipping), so the
  scaler's found-inf is ready: ``check_gradients`` names the non-finite ones at no extra cost;
- ``on_train_batch_end``: ``end_step`` with the step's loss, batch and outputs (the gradients are
  cleared only at the next step).
"""
from __future__ import annotations

from collections.abc import Mapping

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the package's older name
    try:
        from pytorch_lightning.callbacks import Callback  # type: ignore[no-redef]
    except ImportError as error:
        raise ImportError("amplint.runtime.lightning needs Lightning: pip install lightning "
                          "(amplint does not install it)") from error

from .guard import AmpGuard


def _scaler_of(trainer):
    for owner in (trainer, getattr(trainer, "strategy", None)):
        plugin = getattr(owner, "precision_plugin", None)
        if plugin is not None:
            return getattr(plugin, "scaler", None)
    return None


class AmpGuardCallback(Callback):
    """Keyword arguments are AmpGuard's (max_bad_steps, window, dump_dir, scale_drop, ...)."""

    def __init__(self, **guard_options) -> None:
        super().__init__()
        self.guard_options = guard_options
        self.guard: AmpGuard = None  # type: ignore[assignment]

    def on_train_start(self, trainer, pl_module) -> None:
        optimizers = list(getattr(trainer, "optimizers", None) or [])
        self.guard = AmpGuard(pl_module, optimizers[0] if optimizers else None, _scaler_of(trainer),
                              **self.guard_options)

    def on_before_optimizer_step(self, trainer, pl_module, optimizer) -> None:
        self.guard.check_gradients()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        loss = outputs.get("loss") if isinstance(outputs, Mapping) else outputs
        self.guard.end_step(loss, batch=batch, outputs=outputs)
