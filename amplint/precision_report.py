"""What amplint assumed about precision, for people: ``check --show-settings`` and the summary line.

The data comes from ``amplint.project.Project`` (entry points, their evidence with roles, the
precision of each file); this module only words it. Output formats that want the same facts call
``precision_counts`` / ``precision_line``.
"""
from __future__ import annotations

import re
from collections import Counter, OrderedDict
from pathlib import Path
from typing import Dict, Iterable, List, Tuple

MODE_WORDS = {
    "fp16": "pure fp16 (half parameters and optimizer)",
    "fp16-master": "fp16 model with fp32 master weights",
    "fp16-mixed": "fp16 mixed precision (autocast)",
    "bf16": "bf16",
    "fp32": "fp32",
}


# the label of library code in a project that refuses float16 tensors itself (Project.refuses_half)
REFUSED = "float16 refused"


def file_label(project, path: Path) -> Tuple[str, str]:
    """(precision label, whose) for one file: ``("fp16-mixed", "entry point train.py:40 (main)")``,
    ``("library", ...)`` for code no entry point reaches, ``("test", ...)`` for test files."""
    regime = project.regime_for(path)
    if regime.override:
        return regime.mode, "configured"
    if regime.scope.startswith("test"):
        return "test", regime.scope
    from .project import NOT_RUN, REFUSES_FLOAT16
    if regime.scope.startswith(REFUSES_FLOAT16):
        return REFUSED, regime.scope
    if regime.scope.startswith(NOT_RUN):
        return "not run", regime.scope
    if regime.scope.startswith("library") or (not regime.signals and "no training entry point" in regime.scope):
        return "library", regime.scope
    return regime.mode, regime.scope


def precision_counts(files_by_project: Iterable[Tuple[object, Path]]) -> Dict[str, int]:
    """How many files were judged under each precision label."""
    return dict(Counter(file_label(project, f)[0] for project, f in files_by_project))


def precision_line(files_by_project: List[Tuple[object, Path]]) -> str:
    """One summary line: ``Precision: fp16-mixed for 40 files, no training entry point reaches 3
    files (library policy), 5 files are tests (no precision assumed) (--show-settings ...).``"""
    if not files_by_project:
        return ""
    return "Precision: " + precision_parts(files_by_project) + " (--show-settings for the evidence)."


def precision_parts(files_by_project: List[Tuple[object, Path]]) -> str:
    """``fp16-mixed for 40 files, no training entry point reaches 3 files (library policy)``."""
    from .project import who_reaches
    labels = []
    for project, f in files_by_project:
        label, scope = file_label(project, f)
        labels.append("library:" + who_reaches(scope) if label == "library" else label)
    counts = OrderedDict(sorted(Counter(labels).items(), key=lambda kv: (-kv[1], kv[0])))
    parts = []
    for label, n in counts.items():
        files = f"{n} file{'s' if n != 1 else ''}"
        if label.startswith("library:"):
            parts.append(f"{label[len('library:'):]} {files} (library policy)")
        elif label == "not run":
            parts.append(f"no training run of the project reaches {files} (not judged in float16)")
        elif label == REFUSED:
            parts.append(f"{files} not judged in float16 (the project refuses float16 tensors)")
        elif label == "test":
            parts.append(f"{files} {'are tests' if n != 1 else 'is a test'} (no precision assumed)")
        else:
            parts.append(f"{label} for {files}")
    return ", ".join(parts)


def settings_report(projects) -> str:
    """``--show-settings``: per project, each training entry point, its precision and the evidence
    (file:line and role), and the precision of the files no entry point reaches."""
    from .project import REFUSES_FLOAT16
    out: List[str] = []
    for project in projects:
        out.append(f"Project {project.display(project.root) or '.'}")
        eps = project.entry_points()
        if project.regime.override:
            out.append(f"  precision configured: {project.regime.override} (every file)")
        if not eps:
            out.append("  no training entry point (nothing runs backward, steps an optimizer or hands a model to a trainer)")
            files = [f for f in project.files() if not project.is_test(f)] if hasattr(project, "is_test") else []
            scopes = {project.regime_for(f).scope for f in files}
            if files and all(project.regime_for(f).scope.startswith(REFUSES_FLOAT16) for f in files) and len(scopes) == 1:
                out.append(f"  precision for its files: none assumed, not judged in float16 ({scopes.pop()})")
            elif files and all(project.regime_for(f).library for f in files) and len(scopes) == 1:
                out.append(f"  precision for its files: none assumed, library policy ({scopes.pop()})")
            else:
                out.append(f"  precision for its files: {project.regime.mode} ({project.regime.scope})")
        for ep in eps:
            from .project import Regime
            regime = Regime(ep.signals)
            mode = regime.mode
            words = MODE_WORDS.get(mode, mode)
            if mode == "fp32" and regime.launcher is not None:
                words = "set by the launcher or the caller: fp32, fp16 or bf16 autocast; only what fails under any autocast or any float16 use is judged"
            elif project.vendored_hook(ep) and project._fallback_hook(ep):
                words = "the fallback of a library's own hook, for a library that lacks it (the library's runs): no " \
                        "run of this project, its evidence is not counted"
            elif project.vendored_hook(ep):
                words = "a copy of a third-party library's hook that nothing in the project builds: no run of this " \
                        "project, its evidence is not counted"
            elif not ep.signals and hasattr(project, "_library_loop") and project._library_loop(ep):
                words = "no precision evidence; a loop of the package its users call, so the package files it reaches " \
                        "are judged by the library policy"
            out.append(f"  entry point {ep.name()}: {mode} ({words})")
            for f in ep.functions:
                out.append(f"    trains in {f['function']} (line {f['line']}): {', '.join(f['why'])}")
            out.append(f"    reaches {len(ep.reach)} file{'s' if len(ep.reach) != 1 else ''} of the project")
            for role, where, why in ep.roles:
                note = f" ({why})" if why else ""
                counted = "" if role == "training" else " (not counted)"
                out.append(f"    evidence: {where} [{role}]{note}{counted}")
        from .project import who_reaches
        refused = [f for f in project.files() if project.regime_for(f).scope.startswith(REFUSES_FLOAT16)]
        if refused and eps:
            out.append(f"  library code not judged in float16: {len(refused)} (the project refuses float16 tensors: "
                       f"{project.refuses_half()})")
        reached_library = Counter(who_reaches(project.regime_for(f).scope) for f in project.files()
                                  if project.regime_for(f).library and any(f.resolve() == ep.path or f.resolve() in ep.reach
                                                                           for ep in eps))
        for words, n in sorted(reached_library.items()):
            out.append(f"  package files {words}: {n} (library policy)")
        own = [ep for ep in eps if not project.vendored_hook(ep)]
        unreached = [f for f in project.files() if not any(f.resolve() == ep.path or f.resolve() in ep.reach for ep in own)]
        if eps and unreached:
            labels = Counter(file_label(project, f)[0] for f in unreached)
            words = ", ".join(f"{label}: {n}" for label, n in sorted(labels.items()))
            out.append(f"  files no entry point reaches: {len(unreached)} ({words})")
            if labels.get("not run"):
                out.append(f"    {labels['not run']} of them: not run by the project's trainings, whose own runs say their "
                           f"precision: not judged in float16 (no library policy; `assume-precision` judges them)")
            from .project import ONLY_OTHER_PROGRAMS
            found = [m.group(1) for m in (re.search(re.escape(ONLY_OTHER_PROGRAMS) + r" \(([^()]*)\)",
                                                    project.regime_for(f).scope) for f in unreached) if m]
            if found:
                programs = sorted({name for names in found for name in names.split(", ") if not name.endswith(" more")})
                shown = ", ".join(programs[:5]) + (f", {len(programs) - 5} more" if len(programs) > 5 else "")
                judged = "library policy" if any(project.regime_for(f).library for f in unreached
                                                 if ONLY_OTHER_PROGRAMS in project.regime_for(f).scope) else "not run"
                out.append(f"    {len(found)} of them: programs that do not train, or files only such programs "
                           f"import ({judged}): {shown}")
    return "\n".join(out) + "\n"
