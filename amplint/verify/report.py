"""The verifier's report: the data (documented in docs/verify.md, schema docs/verify-schema.json),
the text table and the JSON. The HTML page is amplint.verify.html."""
from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from typing import List, Optional

SCHEMA_VERSION = 1


@dataclass
class Event:
    """One op at one source line (summed over its calls and steps) that float16 made notable."""
    phase: str  # forward | backward | optimizer
    op: str  # aten operator, "masked_fill.Scalar"
    file: str
    line: int
    function: str
    module: str
    dtype: str  # output dtype in the float16 run
    calls: int
    numel: int
    nan: int
    inf: int
    amax: float  # largest finite magnitude in the float16 run
    role: str  # producer | propagator | mask | error | scaler-overflow | "" (large or underflowing values only)
    error: str
    underflow: int  # values zero in float16 where the float32 reference is not
    first_step: int
    fp32_amax: Optional[float]
    fp32_nonfinite: Optional[int]
    float16_only: bool  # the float32 reference ran the same op at the same line without a non-finite

    @property
    def is_producer(self) -> bool:
        """A float16-only producer of a non-finite value (or an op that raised only in float16)."""
        return self.role in ("producer", "error") and self.float16_only


@dataclass
class GradientEvent:
    name: str
    amax: float  # largest finite magnitude of the (scaled) gradient
    finite: bool
    nonfinite: int
    headroom: float  # 65504 / amax: how far the scaled gradient is from float16's largest value
    loss_scale: float


@dataclass
class ParameterEvent:
    name: str
    step: int
    dtype: str
    nonfinite: int
    numel: int
    optimizer: str
    site: object = None  # record.Site where the optimizer was built, if known


@dataclass
class StepRecord:
    index: int
    loss_fp32: Optional[float] = None
    loss_fp16: Optional[float] = None
    loss_scale: Optional[float] = None
    loss_scale_after: Optional[float] = None
    skipped: bool = False
    overflowed: List[str] = field(default_factory=list)  # parameters whose gradient was non-finite
    gradients: List[GradientEvent] = field(default_factory=list)


@dataclass
class FindingMatch:
    status: str  # confirmed | not-triggered | not-reached
    code: str
    path: str
    line: int
    end_line: int
    message: str
    evidence: List[str] = field(default_factory=list)


@dataclass
class Report:
    target: str
    device: str
    precision: str
    emulated: bool
    steps_requested: int
    steps: List[StepRecord] = field(default_factory=list)
    events: List[Event] = field(default_factory=list)
    parameters: List[ParameterEvent] = field(default_factory=list)
    findings: Optional[List[FindingMatch]] = None
    failed: str = ""  # the float16 run stopped: why
    sites_run: set = field(default_factory=set)

    @property
    def producers(self) -> List[Event]:
        return [e for e in self.events if e.is_producer]

    @property
    def underflows(self) -> List[Event]:
        return [e for e in self.events if e.underflow > 0]

    @property
    def masks(self) -> List[Event]:
        return [e for e in self.events if e.role == "mask"]

    @property
    def runtime_only(self) -> List[Event]:
        """float16-only producers at a line no static finding points at."""
        if self.findings is None:
            return []
        lines = [(os.path.realpath(f.path), f.line, f.end_line) for f in self.findings]
        out = []
        for e in self.producers:
            if not e.file:
                continue  # no user line to point a rule at
            real = os.path.realpath(e.file)
            if not any(real == path and lo <= e.line <= hi for path, lo, hi in lines):
                out.append(e)
        return out

    @property
    def confirmed(self) -> List[FindingMatch]:
        return [f for f in (self.findings or []) if f.status == "confirmed"]

    @property
    def gradients(self) -> List[GradientEvent]:
        """Parameters whose gradient is non-finite or within a factor of 2 of float16's range, on the
        last step that computed gradients."""
        for record in reversed(self.steps):
            if record.gradients:
                return [g for g in record.gradients if not g.finite or g.headroom < 2]
        return []

    @property
    def exit_code(self) -> int:
        return 1 if self.confirmed or self.runtime_only else 0

    def to_dict(self) -> dict:
        def site(s):
            return None if s is None else {"file": s.file, "line": s.line, "function": s.function}

        def finite(x):
            return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x
        return {
            "schema_version": SCHEMA_VERSION,
            "target": self.target, "device": self.device, "precision": self.precision,
            "emulated": self.emulated, "failed": self.failed or None,
            "steps": [{"index": s.index, "loss_fp32": finite(s.loss_fp32), "loss_fp16": finite(s.loss_fp16),
                       "loss_scale": s.loss_scale, "loss_scale_after": s.loss_scale_after, "skipped": s.skipped,
                       "overflowed": s.overflowed,
                       "gradients": [{**asdict(g), "headroom": finite(g.headroom)} for g in s.gradients]}
                      for s in self.steps],
            "events": [{**asdict(e), "producer": e.is_producer} for e in self.events],
            "parameters": [{**{k: v for k, v in asdict(p).items() if k != "site"}, "optimizer_site": site(p.site)}
                           for p in self.parameters],
            "findings": None if self.findings is None else [asdict(f) for f in self.findings],
            "runtime_only": [{"file": e.file, "line": e.line, "op": e.op, "phase": e.phase, "module": e.module}
                             for e in self.runtime_only],
            "exit_code": self.exit_code,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    def to_text(self, relative_to: Optional[str] = None) -> str:
        return format_text(self, relative_to)


def _where(file: str, line: int, root: Optional[str]) -> str:
    if not file:
        return "<no user frame>"
    path = file
    if root:
        try:
            path = os.path.relpath(file, root)
        except ValueError:
            pass
    return f"{path}:{line}"


def _num(x: Optional[float]) -> str:
    if x is None:
        return "-"
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return f"{x:.4g}"


def format_text(report: Report, root: Optional[str] = None) -> str:
    root = root or os.getcwd()
    mode = ("CUDA autocast emulated on CPU" if report.emulated else
            "CUDA autocast" if report.precision == "fp16-mixed" else "half parameters as given")
    lines = [f"amplint verify {report.target or '<step>'}: {report.device}, {report.precision} ({mode}), "
             f"{len(report.steps)} step{'s' if len(report.steps) != 1 else ''}"]
    if report.failed:
        lines.append(f"float16 run stopped: {report.failed}")

    def event_line(e: Event, what: str) -> str:
        module = f" [{e.module}]" if e.module else ""
        return f"  {_where(e.file, e.line, root)}  {e.phase:<9} {e.op}{module}  {what}"

    producers = report.producers
    if producers:
        lines.append("")
        lines.append("Non-finite values produced in float16 (the float32 reference is finite there):")
        for e in producers:
            if e.role == "error":
                what = e.error
            else:
                what = (f"{e.nan} nan, {e.inf} inf of {e.numel} ({e.dtype}); largest finite {_num(e.amax)}, "
                        f"float32 largest {_num(e.fp32_amax)}")
            lines.append(event_line(e, what + (f"; from step {e.first_step}" if e.first_step > 0 else "")))
    underflows = report.underflows
    if underflows:
        lines.append("")
        lines.append("Underflow (zero in float16, non-zero in the float32 reference):")
        for e in underflows:
            lines.append(event_line(e, f"{e.underflow} of {e.numel} values"))
    large = [e for e in report.events if not e.role and not e.underflow and e.dtype == "float16" and e.amax > 65504 / 2]
    if large:
        lines.append("")
        lines.append("Within a factor of 2 of float16's largest value (65504):")
        for e in large:
            lines.append(event_line(e, f"largest {_num(e.amax)} ({e.dtype})"))
    scaler = [e for e in report.events if e.role == "scaler-overflow"]
    if scaler:
        lines.append("")
        lines.append(f"Backward overflows on the steps the GradScaler skipped while finding its scale ({len(scaler)} ops; "
                     "expected, not producers)")
    if report.masks:
        lines.append("")
        lines.append("Intentional infinite masks (not producers): " +
                     ", ".join(f"{_where(e.file, e.line, root)} {e.op}" for e in report.masks))
    grads = report.gradients
    if grads:
        lines.append("")
        lines.append(f"Gradients non-finite or within 2x of float16's range (loss scale {_num(grads[0].loss_scale)}):")
        for g in grads:
            lines.append(f"  {g.name}: " + ("non-finite" if not g.finite else f"largest {_num(g.amax)}, headroom x{g.headroom:.2f}"))
    if len(report.steps) > 1 or any(s.loss_scale_after is not None for s in report.steps):
        scales = [s.loss_scale for s in report.steps if s.loss_scale is not None]
        if report.steps and report.steps[-1].loss_scale_after is not None:
            scales.append(report.steps[-1].loss_scale_after)
        lines.append("")
        lines.append("Loss scale: " + " -> ".join(_num(s) for s in scales))
        calibrating = True
        for s in report.steps:
            calibrating = calibrating and s.skipped
            if s.skipped:
                why = "the scaler finding its scale" if calibrating else "after a good step: the scale is being driven down"
                lines.append(f"  step {s.index} skipped ({why}); non-finite gradients: {', '.join(s.overflowed) or '-'}")
    for p in report.parameters:
        where = f" (optimizer built at {_where(p.site.file, p.site.line, root)})" if p.site is not None else ""
        lines.append(f"Parameter {p.name} ({p.dtype}) became non-finite at step {p.step}: "
                     f"{p.nonfinite} of {p.numel} values after {p.optimizer}.step(){where}")
    if report.findings is not None:
        lines.append("")
        lines.append("Static findings:")
        if not report.findings:
            lines.append("  (none)")
        for f in report.findings:
            if f.status == "not-reached":
                continue
            lines.append(f"  {f.status:<13} {f.code} {_where(os.path.abspath(f.path), f.line, root)}  {f.message}")
            for ev in f.evidence:
                lines.append(f"                {ev}")
        unreached = [f for f in report.findings if f.status == "not-reached"]
        if unreached:  # their messages are `amplint check`'s; here only where they are
            lines.append(f"  {'not-reached':<13} " + ", ".join(
                f"{f.code} {_where(os.path.abspath(f.path), f.line, root)}" for f in unreached))
        for e in report.runtime_only:
            lines.append(f"  {'runtime-only':<13} {_where(e.file, e.line, root)}  {e.phase} {e.op}"
                         + (f" [{e.module}]" if e.module else "") + " (no static finding here: a lead for a rule)")
    if len(lines) == 1:
        lines.append("Nothing to report: float16 produced no non-finite value, no underflow and no gradient near its range.")
    return "\n".join(lines) + "\n"
