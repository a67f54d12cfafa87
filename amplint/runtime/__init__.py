"""amplint.runtime: a training-time guard for mixed-precision runs (imports torch; `amplint check`
never imports this package).

    from amplint.runtime import AmpGuard
    guard = AmpGuard(model, optimizer, scaler, max_bad_steps=20, window=1000, dump_dir="amp_guard")
    ...
    scaler.scale(loss).backward()
    guard.step(loss, batch=batch, outputs=outputs)   # scaler.step + scaler.update, then the checks

Adapters: amplint.runtime.lightning.AmpGuardCallback, amplint.runtime.hf.AmpGuardTrainerCallback,
AmpGuard.from_accelerator(accelerator, model, optimizer).
"""
from .guard import AmpGuard, AmpGuardError, AmpGuardWarning, GradReport, GuardedStep

__all__ = ["AmpGuard", "AmpGuardError", "AmpGuardWarning", "GradReport", "GuardedStep"]
