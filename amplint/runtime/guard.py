"""AmpGuard: count non-finite steps and fail only past a threshold, name the layers whose gradients
overflow, watch the loss scale, and leave the evidence behind when it stops a run.

Cost on a clean step: with a GradScaler, one read of the scale (the scaler has already synchronised
in ``step``) and, when a loss is given, one ``isfinite`` of it; the gradients are read only on a
step the scaler skipped. Without a scaler (pure half, bfloat16) one fused ``_foreach_norm`` over the
gradients and one host sync.
"""
from __future__ import annotations

import logging
import math
import os
import time
import warnings
from collections import Counter, deque
from typing import Any, Deque, Dict, List, Optional

import torch

from .dump import bound, save_atomic, to_plain
from .grads import GradCheck, ParameterNames, layers_of

try:  # torch >= 2.3
    from torch.amp.grad_scaler import OptState
except ImportError:  # pragma: no cover
    from torch.cuda.amp.grad_scaler import OptState  # type: ignore

log = logging.getLogger("amplint.runtime")

DUMP_FORMAT = "amplint.runtime.AmpGuard/1"


class AmpGuardError(RuntimeError):
    """Too many non-finite steps in the window; ``.path`` is the dump (None if it could not be written)."""

    def __init__(self, message: str, path: Optional[str]) -> None:
        super().__init__(message)
        self.path = path


class AmpGuardWarning(UserWarning):
    """The loss scale has collapsed (fallen by the configured factor, or below the floor)."""


class GradReport:
    """What ``check_gradients`` found: ``finite``, and for a non-finite step ``params`` (one dict per
    non-finite gradient: param, module, layer, nonfinite, count, numel, max_finite, dtype)."""

    def __init__(self, finite: Optional[bool], params: List[dict]) -> None:
        self.finite = finite
        self.params = params

    @property
    def layers(self) -> List[str]:
        return layers_of(self.params)

    def __bool__(self) -> bool:  # ``if guard.check_gradients(): optimizer.step()``
        return self.finite is not False

    def __repr__(self) -> str:
        return f"GradReport(finite={self.finite}, layers={self.layers})"


def _unwrap_model(model):
    # DistributedDataParallel / DataParallel / accelerate wrappers keep the user's model in .module.
    inner = getattr(model, "module", None)
    return inner if isinstance(inner, torch.nn.Module) else model


def _unwrap_optimizer(optimizer):
    # accelerate's AcceleratedOptimizer (and Lightning's wrappers) keep the torch optimizer in .optimizer.
    while not isinstance(optimizer, torch.optim.Optimizer) and getattr(optimizer, "optimizer", None) is not None:
        optimizer = optimizer.optimizer
    return optimizer


def _rank() -> Optional[int]:
    dist = getattr(torch, "distributed", None)
    if dist is not None and dist.is_available() and dist.is_initialized():
        return dist.get_rank()
    return None


class AmpGuard:
    """Watch a mixed-precision training loop.

    ``model``: the module trained (its parameter names name the layers). ``optimizer``: the one
    stepped (needed with a scaler, and for the dump). ``scaler``: the GradScaler, if any (found
    on accelerate's prepared optimizer when not given); without one (pure half, bfloat16) the
    guard checks the gradients itself and only counts non-finite steps.

    ``max_bad_steps`` non-finite steps (skipped by the scaler, non-finite loss or gradients) are
    tolerated within the last ``window`` steps; one more saves the evidence to ``dump_dir`` (at most
    ``max_dump_bytes`` of tensors) and raises AmpGuardError. A loss scale that has fallen
    ``scale_drop`` times below its peak, or below ``scale_floor``, gives an AmpGuardWarning naming
    the layers that overflowed most often.
    """

    def __init__(self, model: torch.nn.Module, optimizer=None, scaler=None, *,
                 max_bad_steps: int = 20, window: int = 1000, dump_dir: str = "amp_guard",
                 max_dump_bytes: int = 2 << 30, scale_drop: float = 2.0 ** 10, scale_floor: float = 1.0,
                 history: int = 10_000, keep_bad_batches: int = 4, skip_nonfinite: bool = True) -> None:
        if max_bad_steps < 0 or window < 1:
            raise ValueError(f"max_bad_steps must be >= 0 and window >= 1 (got {max_bad_steps}, {window})")
        if scale_drop <= 1:
            raise ValueError(f"scale_drop must be > 1 (got {scale_drop})")
        if scaler is None:
            scaler = getattr(optimizer, "scaler", None)  # accelerate's AcceleratedOptimizer
        self.model = _unwrap_model(model)
        self.optimizer = _unwrap_optimizer(optimizer)
        self.scaler = scaler if scaler is not None and scaler.is_enabled() else None
        self.max_bad_steps = max_bad_steps
        self.window = window
        self.dump_dir = dump_dir
        self.max_dump_bytes = max_dump_bytes
        self.scale_drop = scale_drop
        self.scale_floor = scale_floor
        self.skip_nonfinite = skip_nonfinite
        self.names = ParameterNames(self.model)
        self.check = GradCheck(self.names)
        self.step_index = 0
        self.bad_steps: Deque[int] = deque()
        self.history: Deque[dict] = deque(maxlen=history)
        self.layer_counts: Counter = Counter()
        self.skipped = 0
        self.nonfinite_losses = 0
        self.bad_batches: Deque[dict] = deque(maxlen=keep_bad_batches)
        self.last_dump: Optional[str] = None
        self._scale = self.scaler.get_scale() if self.scaler is not None else None
        self._peak = self._scale
        self._warned_level: Optional[float] = None
        self._below_floor = False
        self._pending: Optional[GradReport] = None
        self._skipped_by_guard = False
        self._scaled_at_exit = False

    @classmethod
    def from_accelerator(cls, accelerator, model, optimizer, **kwargs) -> "AmpGuard":
        """A guard for an accelerate loop: the prepared model and optimizer, accelerate's scaler."""
        unwrap = getattr(accelerator, "unwrap_model", None)
        model = unwrap(model) if unwrap is not None else model
        kwargs.setdefault("scaler", getattr(accelerator, "scaler", None))
        return cls(model, optimizer, **kwargs)

    # -- the scaler -------------------------------------------------------------------------------
    def _scaler_state(self) -> Optional[dict]:
        states = getattr(self.scaler, "_per_optimizer_states", None)
        if states is None or self.optimizer is None:
            return None
        return dict.get(states, id(self.optimizer))  # never create an entry in its defaultdict

    def _scaler_found_inf(self) -> Optional[bool]:
        """The scaler's own verdict for this step, once it has unscaled (no extra pass)."""
        state = self._scaler_state()
        if not state or state["stage"] is OptState.READY or not state["found_inf_per_device"]:
            return None
        return sum(v.item() for v in state["found_inf_per_device"].values()) > 0

    # -- the calls in the user's loop -------------------------------------------------------------
    def check_gradients(self) -> GradReport:
        """After backward, before the optimizer step: are the gradients finite, and if not, whose
        are not? Reuses the scaler's found-inf when it has unscaled; otherwise one fused check."""
        found_inf = self._scaler_found_inf() if self.scaler is not None else None
        if found_inf is None:
            finite = self.check.all_finite()
        else:
            finite = not found_inf
        params = self._diagnose(self._grads_scaled()) if finite is False else []
        self._pending = GradReport(finite, params)
        return self._pending

    def _grads_scaled(self) -> bool:
        """Before the optimizer step: are the gradients still multiplied by the loss scale?"""
        if self.scaler is None:
            return False
        state = self._scaler_state()
        return state is None or state["stage"] is OptState.READY

    def _diagnose(self, scaled: bool) -> List[dict]:
        params = self.check.diagnose()
        if scaled:
            # Report true magnitudes, not the loss-scaled ones.
            scale = self.scaler.get_scale()
            for p in params:
                if p["max_finite"] is not None:
                    p["max_finite"] /= scale
        return params

    def step(self, loss=None, *, batch=None, outputs=None) -> bool:
        """The optimizer step, guarded: ``scaler.step`` + ``scaler.update`` with a scaler; without one,
        ``optimizer.step()`` unless the gradients are non-finite (``skip_nonfinite``). Then
        ``end_step``. Returns True when the step was bad."""
        if self.optimizer is None:
            raise ValueError("AmpGuard.step() needs the optimizer: AmpGuard(model, optimizer, ...)")
        if self.scaler is not None:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            report = self._pending if self._pending is not None else self.check_gradients()
            if report.finite is False and self.skip_nonfinite:
                self._skipped_by_guard = True
            else:
                self.optimizer.step()
        return self.end_step(loss, batch=batch, outputs=outputs)

    def end_step(self, loss=None, *, batch=None, outputs=None) -> bool:
        """After the optimizer step (and ``scaler.update()``), before the gradients are cleared:
        record the step; count it when bad; warn on a collapsing loss scale; past the threshold, save
        the evidence and raise AmpGuardError. Returns True when the step was bad."""
        step = self.step_index
        report, self._pending = self._pending, None
        skipped, scaled = self._skipped_by_guard, self._scaled_at_exit
        self._skipped_by_guard = self._scaled_at_exit = False
        scale = None
        if self.scaler is not None:
            found_inf = self._scaler_found_inf()  # stepped, not yet updated
            scale = self.scaler.get_scale()
            skipped = skipped or (bool(found_inf) if found_inf is not None else scale < self._scale)
        if report is None:
            if self.scaler is not None and not skipped:
                report = GradReport(True, [])  # the scaler read every gradient already
            else:
                finite = self.check.all_finite()  # None: the gradients were cleared
                report = GradReport(finite, self._diagnose(scaled) if finite is False else [])
        loss_finite = self._finite(loss)
        bad = skipped or report.finite is False or loss_finite is False
        if bad:
            self._record_bad(step, scale, skipped, loss_finite, report, batch)
        if self.scaler is not None:
            self._watch_scale(step, scale)
        while self.bad_steps and self.bad_steps[0] <= step - self.window:
            self.bad_steps.popleft()
        self.step_index += 1
        if bad and len(self.bad_steps) > self.max_bad_steps:
            self._fail(step, loss, batch, outputs)
        return bad

    def watch(self, batch=None) -> "GuardedStep":
        """``with guard.watch(batch) as s: ...; s.record(loss, outputs)``: ``end_step`` at the end of
        the block. An exception raised in the block on a non-finite step (a NaN check that raises)
        counts as a bad, skipped step and is swallowed below the threshold."""
        return GuardedStep(self, batch)

    # -- bookkeeping ------------------------------------------------------------------------------
    @staticmethod
    def _finite(loss) -> Optional[bool]:
        if loss is None:
            return None
        if isinstance(loss, torch.Tensor):
            return bool(torch.isfinite(loss.detach()).all())
        try:
            return math.isfinite(float(loss))
        except (TypeError, ValueError):
            return None

    def _record_bad(self, step, scale, skipped, loss_finite, report, batch) -> None:
        layers = report.layers
        self.bad_steps.append(step)
        self.layer_counts.update(layers)
        self.skipped += bool(skipped)
        self.nonfinite_losses += loss_finite is False
        record = {"step": step, "scale": scale, "skipped": bool(skipped), "loss_finite": loss_finite,
                  "grads_finite": report.finite, "layers": layers, "params": report.params[:16]}
        self.history.append(record)
        if batch is not None and self.bad_batches.maxlen:
            self.bad_batches.append({"step": step, "batch": to_plain(batch, copy=True)})
        log.info("amp guard: step %d non-finite (%s)%s; %d bad steps in the last %d", step,
                 ", ".join(w for w, on in (("skipped", skipped), ("loss", loss_finite is False),
                                           ("gradients", report.finite is False)) if on) or "?",
                 f" in {', '.join(layers[:5])}" if layers else "", len(self.bad_steps), self.window)

    def _watch_scale(self, step: int, scale: float) -> None:
        if scale != self._scale:
            self.history.append({"step": step, "scale": scale})
        self._scale = scale
        self._peak = max(self._peak, scale)
        message = None
        if scale <= self._peak / self.scale_drop:
            if self._warned_level is None or scale <= self._warned_level / self.scale_drop:
                message = f"loss scale fell to {scale:g} from its peak {self._peak:g} (÷{self._peak / scale:g})"
                self._warned_level = scale
        else:
            self._warned_level = None  # recovered: a new collapse warns again
        if scale < self.scale_floor and not self._below_floor:
            self._below_floor = True
            message = message or f"loss scale {scale:g} fell below the floor {self.scale_floor:g}"
        elif scale >= self.scale_floor:
            self._below_floor = False
        if message:
            warnings.warn(f"{message} at step {step}; {self.skipped} skipped steps so far; "
                          f"{self.most_overflowed_text()}", AmpGuardWarning, stacklevel=4)

    def most_overflowed(self, n: int = 5) -> List[tuple]:
        """The layers behind the most bad steps: [(layer, steps), ...]."""
        return self.layer_counts.most_common(n)

    def most_overflowed_text(self, n: int = 5) -> str:
        top = self.most_overflowed(n)
        if not top:
            return "no gradient was non-finite (the loss was, or the gradients were cleared before the guard looked)"
        return "layers that overflowed most often: " + ", ".join(f"{name} ({k} steps)" for name, k in top)

    def _fail(self, step, loss, batch, outputs) -> None:
        n = len(self.bad_steps)
        reason = f"{n} non-finite steps in the last {min(self.window, step + 1)} (limit {self.max_bad_steps})"
        path = None
        try:
            if self.dump_dir is None:
                raise OSError("dump_dir=None")
            path = self.dump(reason, loss=loss, batch=batch, outputs=outputs)
        except Exception as e:  # the error must still be raised, with what went wrong
            log.error("amp guard: could not write the dump: %s", e)
            where = f"; the dump could not be written: {e}"
        else:
            where = f"; evidence saved to {path} (torch.load it)"
        scale = f"; loss scale {self._scale:g}" if self._scale is not None else ""
        raise AmpGuardError(f"{reason} at step {step}{scale}; {self.most_overflowed_text()}{where}", path)

    def dump(self, reason: str = "requested", *, loss=None, batch=None, outputs=None) -> str:
        """Save the evidence now (the batch, outputs and loss given, the batches of the last bad
        steps, model / optimizer / scaler state, the history); returns the file's path."""
        payload: Dict[str, Any] = {
            "format": DUMP_FORMAT, "reason": reason, "step": self.step_index - 1, "time": time.time(),
            "torch": str(torch.__version__), "rank": _rank(),
            "loss": to_plain(loss), "batch": to_plain(batch), "outputs": to_plain(outputs),
            "bad_batches": list(self.bad_batches),
            "model": to_plain(self.model.state_dict()),
            "optimizer": to_plain(self.optimizer.state_dict()) if self.optimizer is not None else None,
            "scaler": to_plain(self.scaler.state_dict()) if self.scaler is not None else None,
            "history": [to_plain(r) for r in self.history],
            "layer_counts": dict(self.layer_counts), "skipped": self.skipped,
            "nonfinite_losses": self.nonfinite_losses, "bad_steps": list(self.bad_steps),
            "settings": {"max_bad_steps": self.max_bad_steps, "window": self.window,
                         "scale_drop": self.scale_drop, "scale_floor": self.scale_floor},
        }
        payload, _ = bound(payload, self.max_dump_bytes)
        if self.dump_dir is None:
            raise ValueError("AmpGuard(dump_dir=None) writes no dump")
        rank = _rank()
        name = f"amp_guard_step{self.step_index - 1}" + (f"_rank{rank}" if rank is not None else "") + ".pt"
        self.last_dump = save_atomic(payload, os.path.join(self.dump_dir, name))
        return self.last_dump


class GuardedStep:
    """One training step under ``with guard.watch(batch) as s``."""

    def __init__(self, guard: AmpGuard, batch) -> None:
        self.guard = guard
        self.batch = batch
        self.loss = None
        self.outputs = None
        self.bad: Optional[bool] = None

    def record(self, loss=None, outputs=None) -> None:
        if loss is not None:
            self.loss = loss
        if outputs is not None:
            self.outputs = outputs

    def __enter__(self) -> "GuardedStep":
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        guard = self.guard
        if exc is None:
            self.bad = guard.end_step(self.loss, batch=self.batch, outputs=self.outputs)
            return False
        if isinstance(exc, AmpGuardError) or not isinstance(exc, Exception):
            return False
        finite_grads = guard.check.all_finite()
        if guard._finite(self.loss) is not False and finite_grads is not False:
            return False  # a real error, not a non-finite step
        guard._scaled_at_exit = guard._grads_scaled()
        if not guard._scaled_at_exit and guard.scaler is not None and guard._scaler_state() is not None:
            guard.scaler.update()  # the step was abandoned after unscale_: back off as a skip would
        guard._skipped_by_guard = True
        try:
            self.bad = guard.end_step(self.loss, batch=self.batch, outputs=self.outputs)
        except AmpGuardError as error:
            raise error from exc
        log.info("amp guard: %s: %s (counted as a skipped step)", type(exc).__name__, exc)
        return True
