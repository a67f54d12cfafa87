"""``amplint check -`` and ``amplint fix -``: the text on stdin, linted or fixed as the file named
by ``--stdin-filename`` (its configuration, per-file ignores and project regime; the output names
it), as ruff does. ``fix -`` writes the fixed text to stdout and the report of what remains to
stderr, so that an editor can replace its buffer with stdout."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, TextIO

from .config import RuleSelection, Settings
from .discovery import Discovery, project_root
from .outcome import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, cache_options, report

STDIN = "-"


def wants_stdin(args) -> bool:
    """``-`` as the only path, or ``--stdin-filename`` with no path (ruff's rule)."""
    paths = [str(p) for p in (args.paths or [])]
    return paths == [STDIN] or (not paths and getattr(args, "stdin_filename", None) is not None)


def mixes_stdin(args) -> bool:
    return STDIN in [str(p) for p in (args.paths or [])] and len(args.paths) > 1


def excluded(path: Path, settings: Settings) -> bool:
    """Whether discovery would skip ``path`` (an exclude pattern matches it or a directory above
    it, up to its project root)."""
    discovery = Discovery(settings.exclude, settings.extend_exclude)
    root = project_root(path)
    target = path.resolve()
    for p in [target, *target.parents]:
        if p == root or root not in p.parents:
            break
        if discovery.excluded(p, root):
            return True
    return False


def _source_lines(data: bytes, path: Path, result_findings) -> dict:
    """The lines ``full`` output quotes, keyed as it looks them up (the text is not on disk)."""
    from .notebook import NotebookError, from_bytes, is_notebook

    display = result_findings[0].path if result_findings else ""
    if is_notebook(path):
        try:
            nb = from_bytes(data)
        except NotebookError:
            return {}
        return {f"{display}:cell {f.cell}": nb.cell_lines(f.cell) for f in result_findings if f.cell}
    from .report import split_lines
    return {display: split_lines(data)}


def _write_bytes(out: TextIO, data: bytes) -> None:
    buffer = getattr(out, "buffer", None)
    if buffer is not None:
        out.flush()
        buffer.write(data)
        buffer.flush()
    else:  # a text stream (tests run the CLI in-process)
        out.write(data.decode("utf-8", "surrogateescape"))


def run_stdin(args, settings: Settings, selection: RuleSelection, out: TextIO, err: TextIO) -> int:
    from .api import project_for_path

    data = sys.stdin.buffer.read()
    name = getattr(args, "stdin_filename", None)
    path = Path(name) if name is not None else Path(STDIN)
    display = path.as_posix()
    fixing = bool(getattr(args, "fix", False))
    diffing = bool(getattr(args, "diff", False))
    if getattr(args, "force_exclude", False) and name is not None and excluded(path, settings):
        # Excluded: nothing to report; ``fix -`` gives the text back unchanged.
        if fixing and not diffing:
            _write_bytes(out, data)
        if not args.quiet:
            err.write(f"warning: {display} is excluded by the configuration; not linted\n")
        return EXIT_CLEAN
    project = project_for_path(path, settings, **cache_options(args))
    try:
        return _run(args, settings, selection, out, err, data, name, path, display, project)
    finally:
        project.save_cache()  # what was summarised for the project's facts, as a run over files keeps


def _run(args, settings, selection, out, err, data, name, path, display, project) -> int:
    from .api import fix_text
    from .engine import lint_buffer
    from .fixes import unified_diff

    fixing = bool(getattr(args, "fix", False))
    diffing = bool(getattr(args, "diff", False))
    codes = selection.for_file(path)
    if not fixing and not diffing:
        result = lint_buffer(path, display, data, project, codes, settings)
        sources = _source_lines(data, path, result.findings)
        return report(args, result.findings, result.errors, out, err, sources=sources,
                      assumed=_assumed(project, path, data))
    state = fix_text(data, path, settings, unsafe=bool(getattr(args, "unsafe_fixes", False)), display=display,
                     project=project, selection=selection)
    errors: List[str] = list(state.errors)
    if diffing:
        if state.changed:
            out.write(unified_diff(state))
        if not args.quiet:
            n = state.fixed
            err.write(f"Would fix {n} error{'s' if n != 1 else ''}.\n" if n else "No errors would be fixed.\n")
        for e in errors:
            err.write(f"amplint: error: {e}\n")
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if state.changed else EXIT_CLEAN
    _write_bytes(out, state.output() if state.changed else data)
    fixed_data = state.output() if state.changed else data
    sources = _source_lines(fixed_data, path, state.findings)
    return report(args, state.findings, errors, err, err, fixed=state.fixed, sources=sources,
                  assumed=_assumed(project, path, fixed_data))


def _assumed(project, path: Path, data: bytes) -> list:
    """The precision assumed for the project, with the text standing in for the file."""
    from .notebook import is_notebook
    from .overlay import OverlayProject
    from .report.assumed import assumed_precision

    if is_notebook(path):
        return [assumed_precision(project)]
    return [assumed_precision(OverlayProject(project, path, data))]
