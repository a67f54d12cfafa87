"""Running the user's step as a float32 reference and in float16, step by step, and building the Report."""
from __future__ import annotations

import contextlib
import math
import traceback
from typing import Callable, Dict, List, Optional, Sequence

import torch

from .record import FLOAT16_MAX, ModuleTracker, Recorder, Site
from .report import (Event, GradientEvent, ParameterEvent, Report, StepRecord)


class UserCodeError(Exception):
    """An exception raised by the user's code where float16 is not the cause (the float32 reference,
    or the target's factory); carries the user's traceback."""

    def __init__(self, where: str, error: BaseException) -> None:
        self.where = where
        self.error = error
        self.traceback = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        super().__init__(f"{where}: {type(error).__name__}: {error}")


# Optimizers built while a target's factory runs -> where (amplint.verify.target records them).
OPTIMIZER_SITES: Dict[int, Site] = {}


def _autocast_fp16(device: str):
    if device == "cuda":
        return torch.autocast("cuda", dtype=torch.float16)
    from .emulation import CudaAutocastOnCpu
    return CudaAutocastOnCpu()


def _kernels(device: str, mixed: bool):
    """The emulation's kernels, registered once for the whole run on CPU."""
    if device == "cpu" and mixed:
        from .emulation import CudaPolicyKernels
        return CudaPolicyKernels()
    return contextlib.nullcontext()


class _Float32Reference(torch.utils._python_dispatch.TorchDispatchMode):
    """The float32 reference of a pure-half step: every float16 tensor an op receives is widened to
    float32 and a float16 dtype argument (``.half()``, ``dtype=torch.float16``) becomes float32."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        from torch.utils import _pytree as pytree

        def widen(x):
            if isinstance(x, torch.Tensor) and x.dtype == torch.float16:
                with torch._C._DisableTorchDispatch():  # the widening is not the user's op
                    return x.float()
            if x is torch.float16:
                return torch.float32
            return x
        args, kwargs = pytree.tree_map(widen, (args, kwargs or {}))
        return func(*args, **kwargs)


def _parameters(optimizer, modules: ModuleTracker) -> List[torch.Tensor]:
    if optimizer is not None:
        return [p for group in optimizer.param_groups for p in group["params"]]
    seen, out = set(), []
    for root in modules.roots:
        for p in root.parameters():
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


class _Buffers:
    """The modules' buffers (BatchNorm running statistics) as they were before the float32 reference,
    put back after it: the float16 run must start where a plain step would, not one batch later."""

    def __init__(self, modules: ModuleTracker) -> None:
        self.modules = modules
        self.saved: Dict[int, tuple] = {}

    def save(self, root) -> None:
        for b in root.buffers():
            if id(b) not in self.saved:
                self.saved[id(b)] = (b, b.detach().clone())

    def __enter__(self):
        for root in self.modules.roots:
            self.save(root)
        self.modules.on_root = self.save  # a root first met in this run: saved before its forward
        return self

    def __exit__(self, *exc):
        self.modules.on_root = None
        with torch.no_grad():
            for b, value in self.saved.values():
                b.copy_(value)
        self.saved.clear()
        return False


class BadStep(Exception):
    """step() returned something other than a scalar loss tensor: a bad target (exit 2)."""


def _scalar(loss) -> torch.Tensor:
    if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
        raise BadStep(f"step() must return a scalar loss tensor, got {type(loss).__name__}"
                        + (f" of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else ""))
    return loss


def verify(step: Callable[[], torch.Tensor], optimizer=None, scaler=None, *, device: str = "auto",
           precision: str = "auto", steps: int = 1, seed: int = 0, findings: Optional[Sequence] = None,
           project=None, target: str = "", optimizer_site: Optional[Site] = None) -> Report:
    """Run ``step`` (a callable running one forward pass and returning a scalar loss) as a float32
    reference and in float16, ``steps`` times with ``optimizer`` (and a GradScaler under fp16-mixed:
    ``scaler``, or a fresh one), and report what float16 did, op by op, forward and backward.

    precision: "fp16-mixed" runs the step under CUDA autocast (emulated on CPU); "fp16" runs it as it
    is (half parameters), with a reference that widens every float16 tensor to float32; "auto" is
    "fp16" when the optimizer's parameters are float16, else "fp16-mixed".
    findings: static findings (amplint.findings.Finding) to match the events to; or ``project``, a
    path whose findings ``amplint check`` computes. Raises UserCodeError when the user's code fails
    where float16 is not the cause.
    """
    if precision == "auto":
        half = optimizer is not None and any(p.dtype == torch.float16 for g in optimizer.param_groups for p in g["params"])
        precision = "fp16" if half else "fp16-mixed"
    if precision not in ("fp16-mixed", "fp16"):
        raise ValueError(f"precision must be 'auto', 'fp16-mixed' or 'fp16', not {precision!r}")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cuda", "cpu"):
        raise ValueError(f"device must be 'auto', 'cuda' or 'cpu', not {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: no CUDA device is available")
    steps = max(1, int(steps)) if optimizer is not None else 1
    mixed = precision == "fp16-mixed"
    if mixed and optimizer is not None and scaler is None:
        scaler = torch.amp.GradScaler(device)
    if optimizer_site is None and optimizer is not None:
        optimizer_site = OPTIMIZER_SITES.get(id(optimizer))

    optimizer_ran = None
    modules = ModuleTracker()
    reference = Recorder(modules)
    recorder = Recorder(modules)
    recorder.optimizer_site = optimizer_site
    report = Report(target=target, device=device, precision=precision,
                    emulated=device == "cpu" and mixed, steps_requested=steps)
    devices = [torch.cuda.current_device()] if device == "cuda" else []
    with torch.random.fork_rng(devices=devices), modules, _kernels(device, mixed):
        for i in range(steps):
            record = StepRecord(index=i)
            report.steps.append(record)
            reference.step = recorder.step = i
            params = _parameters(optimizer, modules)
            # 1. the float32 reference
            for p in params:
                p.grad = None
            torch.manual_seed(seed + i)
            try:
                with _Buffers(modules), reference:
                    if mixed:
                        with torch.autocast(device, enabled=False):
                            ref_loss = _scalar(step())
                        reference.begin_backward()
                        ref_loss.backward()
                    else:
                        with torch.no_grad(), _Float32Reference():
                            ref_loss = _scalar(step())
            except BadStep:
                raise
            except Exception as e:
                raise UserCodeError(f"the float32 reference run (step {i})", e) from e
            finally:
                reference.end_step()
            record.loss_fp32 = float(ref_loss.detach())
            # 2. the float16 run
            params = _parameters(optimizer, modules)
            for p in params:
                p.grad = None
            torch.manual_seed(seed + i)
            try:
                with recorder:
                    with (_autocast_fp16(device) if mixed else contextlib.nullcontext()):
                        loss = _scalar(step())
                    record.loss_fp16 = float(loss.detach())
                    recorder.begin_backward()
                    (scaler.scale(loss) if scaler is not None else loss).backward()
            except Exception as e:
                report.failed = f"float16 run, step {i}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                break
            finally:
                recorder.end_step()
            names = modules.parameter_names()
            scale = float(scaler.get_scale()) if scaler is not None else 1.0
            record.loss_scale = scale
            record.gradients = _gradients(params, names, scale)
            if optimizer is None:
                continue
            recorder.phase = "optimizer"
            try:
                with recorder:
                    if scaler is not None:
                        scaler.step(optimizer)
                        scaler.update()
                    else:
                        optimizer.step()
            except Exception as e:
                report.failed = f"optimizer step {i}: {type(e).__name__}: {e}"
                break
            finally:
                recorder.phase = "forward"
            if optimizer_site is not None:
                optimizer_ran = (optimizer_site.file, optimizer_site.line)
            if scaler is not None:
                record.loss_scale_after = float(scaler.get_scale())
                record.skipped = record.loss_scale_after < scale
            record.overflowed = [g.name for g in record.gradients if not g.finite]
            for index, p in enumerate(params):
                if p.is_floating_point() and not bool(torch.isfinite(p.detach()).all()):
                    name = names.get(id(p), f"param[{index}]")
                    if name not in {e.name for e in report.parameters}:
                        report.parameters.append(ParameterEvent(
                            name=name, step=i, dtype=str(p.dtype).replace("torch.", ""),
                            nonfinite=int((~torch.isfinite(p.detach())).sum()), numel=p.numel(),
                            optimizer=type(optimizer).__name__, site=optimizer_site))
    report.events = _events(reference, recorder, _calibration_skips(report.steps))
    report.sites_run = recorder.sites_run | reference.sites_run
    if optimizer_ran is not None:
        report.sites_run.add(optimizer_ran)  # the optimizer's line ran: its finding is at least not-triggered
    if findings is None and project is not None:
        from .match import project_findings
        findings = project_findings(project)
    if findings is not None:
        from .match import match
        report.findings = match(findings, report)
    return report


def _gradients(params, names, scale: float) -> List[GradientEvent]:
    out = []
    for index, p in enumerate(params):
        if p.grad is None:
            continue
        g = p.grad.detach()
        finite = bool(torch.isfinite(g).all())
        amax = float(g.abs().amax()) if finite else float(g[torch.isfinite(g)].abs().amax()) if bool(torch.isfinite(g).any()) else 0.0
        headroom = FLOAT16_MAX / amax if amax > 0 else math.inf
        out.append(GradientEvent(name=names.get(id(p), f"param[{index}]"), amax=amax, finite=finite,
                                 nonfinite=0 if finite else int((~torch.isfinite(g)).sum()),
                                 headroom=headroom, loss_scale=scale))
    return out


def _calibration_skips(steps) -> set:
    """The steps a GradScaler skipped before its first good step: it starts above what the gradients
    allow (65536 is above float16's largest value) and halves until they fit. Backward overflows on
    these steps are the scaler doing its job; a skip after a good step means something drove the
    scale down."""
    out = set()
    for record in steps:
        # A scale at or below 1 is no longer searched for: the unscaled gradients overflow.
        if not record.skipped or (record.loss_scale is not None and record.loss_scale <= 1):
            break
        out.add(record.index)
    return out


def _events(reference: Recorder, recorder: Recorder, calibration: set = frozenset()) -> List[Event]:
    events = []
    for key in sorted(recorder.stats, key=recorder.order.get):
        s = recorder.stats[key]
        ref = reference.stats.get(key)
        if s.phase == "backward" and s.role in ("producer", "propagator") and s.bad_steps and s.bad_steps <= calibration:
            s.role = "scaler-overflow"
        elif s.phase == "backward" and s.role == "producer" and calibration:
            s.first_step = min(s.bad_steps - calibration)
        ref_bad = ref is not None and (ref.nonfinite > 0 or ref.role == "error")
        underflow = 0
        if ref is not None and s.dtype == "float16" and ref.numel == s.numel:
            underflow = max(0, s.zeros - ref.zeros)
        if not s.role and not underflow and not (s.dtype == "float16" and s.amax > FLOAT16_MAX / 2):
            continue  # nothing to say about this op
        events.append(Event(
            phase=s.phase, op=s.op, file=s.site.file, line=s.site.line, function=s.site.function,
            module=s.site.module, dtype=s.dtype, calls=s.calls, numel=s.numel, nan=s.nan, inf=s.inf,
            amax=s.amax, role=s.role, error=s.error, underflow=underflow, first_step=s.first_step,
            fp32_amax=ref.amax if ref is not None else None,
            fp32_nonfinite=(ref.nonfinite if ref is not None else None),
            float16_only=not ref_bad))
    return events
