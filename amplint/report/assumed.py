"""Which precision amplint assumed for a project, and why: every output format says it, so that
"All checks passed!" on code amplint took for float32 is not a silent pass.

``assumed_precision`` is the one place that reads the regime for this; when precision is decided
per training entry point, this function is what changes."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional

from ..findings import Location


@dataclass(frozen=True)
class AssumedPrecision:
    root: str  # the project's root directory, as shown
    mode: str  # fp16 | fp16-mixed | bf16 | fp32
    why: str
    evidence: Optional[Location] = None

    def text(self) -> str:
        where = f" at {self.evidence.path}:{self.evidence.line}" if self.evidence is not None and self.evidence.line > 0 else ""
        return f"{self.mode}: {self.why}{where} (project {self.root})"

    def as_dict(self) -> dict:
        return {"root": self.root, "precision": self.mode, "why": self.why,
                "evidence": None if self.evidence is None else
                {"filename": self.evidence.path, "row": self.evidence.line or None, "what": self.evidence.what}}


_WHY = {
    "fp16": ("half_optimizer", "parameters are float16: {what}"),
    "fp16-mixed": ("fp16_autocast", "float16 mixed precision: {what}"),
    "fp16-master": ("half_params", "float16 model, float32 master weights: {what}"),
    "bf16": ("bf16", "bfloat16: {what}"),
}


def assumed_precision(project, files=None) -> AssumedPrecision:
    """What ``project`` was judged under. With ``files`` (the files checked) and a project that
    decides precision per training entry point: the precision used for how many files, and which
    files no entry point reaches (amplint.precision_report)."""
    regime = project.regime
    if files and hasattr(project, "regime_for") and not regime.override:
        from ..precision_report import REFUSED, file_label, precision_parts
        labels = [file_label(project, f)[0] for f in files]
        if len(set(labels)) > 1 and set(labels) - {"not run", REFUSED}:
            # (the headline is a precision some files run in: files no training run reaches are counted, not named)
            mode = max(set(labels) - {"not run", REFUSED}, key=labels.count)
            root = project.display(project.root) or "."
            why = "per training entry point (--show-settings): " + precision_parts([(project, f) for f in files])
            main = files[labels.index(mode)]
            r = project.regime_for(main)
            ev = r.half_params or r.fp16_autocast or r.fp16 or r.bf16
            return AssumedPrecision(root, mode, why, Location.of(ev) if ev is not None else None)
        if set(labels) <= {"not run", REFUSED} and REFUSED in labels:
            root = project.display(project.root) or "."
            n = len(files)
            return AssumedPrecision(root, "fp32", f"the project refuses float16 tensors ({project.refuses_half()}): "
                                    f"{'these' if n != 1 else 'this'} {n} file{'s' if n != 1 else ''} not judged in "
                                    f"float16 (docs/precision.md); `assume-precision` sets one")
        if labels[0] == "not run":
            root = project.display(project.root) or "."
            n = len(files)
            return AssumedPrecision(root, "fp32", f"no training run of the project reaches {'these' if n != 1 else 'this'} "
                                    f"{n} file{'s' if n != 1 else ''}, and its own trainings say their precision: not "
                                    f"judged in float16 (docs/precision.md); `assume-precision` sets one")
        if labels[0] == "library" and (_has_entry_points(project) or any(
                "nothing in the project trains" in project.regime_for(f).scope for f in files)):
            from ..project import who_reaches
            root = project.display(project.root) or "."
            n = len(files)
            whos = {who_reaches(project.regime_for(f).scope) for f in files}
            who = whos.pop() if len(whos) == 1 else "no training entry point reaches"
            return AssumedPrecision(root, "library", f"{who} {'these' if n != 1 else 'this'} "
                                    f"{n} file{'s' if n != 1 else ''}; the library policy applies (docs/precision.md), "
                                    f"`assume-precision` sets one")
        regime = project.regime_for(files[0])
    mode = regime.mode
    root = project.display(project.root) if hasattr(project, "display") else str(project.root)
    if regime.override:
        return AssumedPrecision(root or ".", mode, f'precision = "{mode}" set by the configuration or --precision')
    if mode in _WHY:
        prop, template = _WHY[mode]
        ev = getattr(regime, prop) or (regime.fp16 if mode == "fp16-mixed" else None)
        if ev is not None:
            return AssumedPrecision(root or ".", mode, template.format(what=ev.what), Location.of(ev))
    if mode != "fp32":
        return AssumedPrecision(root or ".", mode, "from the project's precision evidence")
    launcher = regime.launcher
    if launcher is None and files and hasattr(project, "regime_for") and not regime.override:
        launcher = next((r.launcher for r in map(project.regime_for, files) if r.launcher is not None), None)
    if launcher is not None:
        # Accelerator() / a pytorch_accelerated trainer: `accelerate launch` picks fp32, fp16 or bf16.
        return AssumedPrecision(root or ".", "fp32", f"set by the launcher or the caller ({launcher.what}): fp32, fp16 or bf16 autocast, "
                                                     "so only what fails under any autocast or any float16 use is reported (AMP202; AMP102, "
                                                     "AMP103, AMP201 as under fp16 autocast; docs/precision.md); "
                                                     "`--precision` overrides", Location.of(launcher))
    n = len(project.files())
    library = hasattr(project, "entry_points") and not _has_entry_points(project)
    return AssumedPrecision(root or ".", "fp32", f"no autocast, GradScaler, half parameters or precision flag in the project's "
                                                 f"{n} Python file{'s' if n != 1 else ''}, so float32"
                                                 + (" (no training entry point: library policy, docs/precision.md)" if library else "")
                                                 + "; `--precision` overrides")


def _has_entry_points(project) -> bool:
    """Whether the project has training entry points. A Project's regime names them and is
    cached: a one-file run answered from the cache does not compute them (which reads every
    file's summary) only to say whether there are any."""
    from ..project import Project

    if isinstance(project, Project):  # also `amplint fix`'s project (amplint.fixes._FixedProject)
        return bool(project.regime.entry_points)
    return bool(project.entry_points())


def summary_lines(assumed: List[AssumedPrecision]) -> List[str]:
    return [f"Assumed precision: {a.text()}" for a in assumed]
