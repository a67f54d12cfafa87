"""Command line: argument parsing and exit codes (0 clean, 1 findings, 2 usage/config/internal error)."""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import List, Optional, Sequence

from . import __version__
from .config import PRECISIONS, ConfigError, RuleSelection, Settings, find_config, load
from .outcome import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, cache_options, report
from .report import FORMATS


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own exit code is 2 as well; keep ruff's wording
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"amplint: error: {message}\n")


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", type=Path, help="files or directories (default: .)")
    p.add_argument("--select", type=_codes, help="comma-separated rule codes or prefixes to enable (replaces config)")
    p.add_argument("--ignore", type=_codes, help="comma-separated rule codes or prefixes to disable")
    p.add_argument("--extend-select", type=_codes, help="rule codes or prefixes to enable in addition")
    p.add_argument("--config", type=Path, help="path to a pyproject.toml with [tool.amplint]")
    p.add_argument("--precision", choices=PRECISIONS, help="override the inferred precision regime")
    p.add_argument("--output-format", choices=FORMATS, default="full")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--statistics", action="store_true", help="print counts per rule instead of findings")
    p.add_argument("-q", "--quiet", action="store_true", help="print findings only, no summary")
    p.add_argument("-o", "--output-file", type=Path, metavar="FILE",
                   help="write the output to FILE instead of stdout")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour in `full` output (auto: on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print the files linted, the precision assumed per project and timings on stderr")
    p.add_argument("--show-settings", action="store_true",
                   help="print each training entry point, its precision and the evidence, then exit")
    p.add_argument("--force-exclude", action="store_true",
                   help="apply exclude / extend-exclude to paths named on the command line too (for pre-commit)")
    p.add_argument("--stdin-filename", metavar="PATH",
                   help="lint the text on stdin (path `-`) as this file: its config, excludes and project")
    p.add_argument("--no-cache", action="store_true",
                   help="read and analyse every file afresh; neither read nor write the cache (env: AMPLINT_NO_CACHE)")
    p.add_argument("--cache-dir", type=Path,
                   help="where the cache lives (default: .amplint_cache at the project root; env: AMPLINT_CACHE_DIR)")
    p.add_argument("--jobs", "-j", type=_jobs, help="worker processes (default: from the CPUs and the number of files)")


def _jobs(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number of jobs: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"the number of jobs must be at least 1, not {n}")
    return n


def _codes(text: str) -> List[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="amplint", description="Find mixed-precision (fp16 / AMP) hazards in PyTorch code.")
    parser.add_argument("--version", action="version", version=f"amplint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    check = sub.add_parser("check", help="lint files and directories")
    _common(check)
    check.add_argument("--add-noqa", action="store_true",
                       help="add a `# noqa: CODE` to the line of every finding (adopting amplint on existing code)")
    add_fix_arguments(check)
    fix = sub.add_parser("fix", help="apply the fixes (safe ones; --unsafe-fixes for all), then report what remains")
    _common(fix)
    add_fix_arguments(fix)
    clean = sub.add_parser("clean", help="remove the cache (.amplint_cache) of the projects under the paths")
    clean.add_argument("paths", nargs="*", type=Path, help="files or directories (default: .)")
    clean.add_argument("--cache-dir", type=Path, help="remove this cache folder instead")
    rule = sub.add_parser("rule", help="explain a rule")
    rule.add_argument("code", nargs="?")
    rule.add_argument("--all", action="store_true", help="list every rule")
    sub.add_parser("server", help="run the language server for editors (LSP over stdio; needs the `lsp` extra)")
    add_verify_command(sub)
    return parser


def add_verify_command(sub) -> None:
    """``amplint verify TARGET``: amplint.verify.command runs it (and only it imports torch)."""
    verify = sub.add_parser("verify", help="run a training step in float32 and float16 and confirm the findings")
    verify.add_argument("target", help="path/to/file.py:function returning step, (step, optimizer) or (step, optimizer, scaler)")
    verify.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="cuda: real CUDA autocast; cpu: CUDA's autocast policy emulated (default: cuda if available)")
    verify.add_argument("--precision", choices=("auto", "fp16-mixed", "fp16"), default="auto",
                        help="fp16-mixed: autocast; fp16: half parameters as given (default: fp16 when the parameters are half)")
    verify.add_argument("--steps", type=int, default=1, help="optimizer steps to run (needs an optimizer)")
    verify.add_argument("--output-format", choices=("text", "json"), default="text")
    verify.add_argument("--report", type=Path, metavar="FILE.html", help="also write a self-contained HTML report")


def add_fix_arguments(p: argparse.ArgumentParser) -> None:
    """The fix options (``amplint fix`` / ``check --fix``); the fixing itself is amplint.fixes."""
    p.add_argument("--fix", action="store_true", help="apply fixes (the same as `amplint fix`)")
    p.add_argument("--unsafe-fixes", action="store_true",
                   help="also apply fixes that change behaviour beyond the hazard or need review")
    p.add_argument("--diff", action="store_true",
                   help="print the fixes as a unified diff and write nothing (exit 1 when there is something to fix)")
    p.add_argument("--show-fixes", action="store_true", help="list the fixes applied, per file and rule")


def path_problem(path: Path) -> Optional[str]:
    """Why a path named on the command line cannot be linted (without opening it: a FIFO would
    block the run), or None."""
    import errno
    import os
    import stat

    try:
        st = os.stat(path)
    except OSError as e:
        if e.errno == errno.ELOOP:
            return f"{path}: symlink loop"
        if isinstance(e, FileNotFoundError):
            return f"{path}: No such file or directory"
        return f"{path}: {e.strerror or e}"
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
        return f"{path}: not a regular file or directory"
    return None


def settings_for(args) -> Settings:
    if args.config is not None:
        if not args.config.is_file():
            raise ConfigError(f"config file not found: {args.config}")
        settings = load(args.config)
    else:
        start = args.paths[0] if args.paths else Path.cwd()
        if getattr(args, "stdin_filename", None) is not None:
            start = Path(args.stdin_filename)  # need not exist: an editor's new file
            settings = load(find_config(start))
        else:
            settings = load(find_config(start if start.exists() else Path.cwd()))
    from .config import validate_selectors
    from .rules import rule_codes

    for option in ("select", "ignore", "extend_select"):
        given = getattr(args, option)
        if given:
            validate_selectors(given, rule_codes(), f"--{option.replace('_', '-')}")
    if args.select is not None:
        settings.select = args.select
    if args.ignore:
        settings.ignore = [*settings.ignore, *args.ignore]
    if args.extend_select:
        settings.extend_select = [*settings.extend_select, *args.extend_select]
    if args.precision:
        settings.precision = args.precision
    return settings


def run_check(args, out=None, err=None) -> int:
    out = out if out is not None else sys.stdout  # looked up now: callers may redirect sys.stdout
    err = err if err is not None else sys.stderr
    target = getattr(args, "output_file", None)
    if target is None:
        return _run_check(args, out, err)
    buffer = io.StringIO()
    rc = _run_check(args, buffer, err)
    problem = write_text_atomically(target, buffer.getvalue())
    if problem is not None:
        err.write(f"amplint: error: cannot write {target}: {problem}\n")
        return EXIT_ERROR
    return rc


def write_text_atomically(path: Path, text: str) -> Optional[str]:
    """Write ``text`` to ``path`` through a temporary file beside it (a reader never sees half a
    report); None on success, else the reason. A path that is not a regular file (``/dev/stdout``,
    a FIFO, ``/dev/full``) is written to, never replaced; a symlink's target is replaced."""
    import os
    import stat

    from .atomic import write_atomic

    try:
        st = os.stat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        return e.strerror or str(e)
    if st is not None and not stat.S_ISREG(st.st_mode):
        try:
            with open(path, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)
        except OSError as e:
            return e.strerror or str(e)
        return None
    try:
        write_atomic(os.path.realpath(path), text.encode("utf-8"))
    except OSError as e:
        return e.strerror or str(e)
    return None


def _run_check(args, out, err) -> int:
    import time

    from .runner import Runner
    from .rules import rule_codes

    started = time.perf_counter()

    try:
        settings = settings_for(args)
        selection = RuleSelection(settings, rule_codes())
    except ConfigError as e:
        err.write(f"amplint: error: {e}\n")
        return EXIT_ERROR
    from .stdin import mixes_stdin, run_stdin, wants_stdin
    if mixes_stdin(args):
        err.write("amplint: error: `-` (stdin) cannot be combined with other paths\n")
        return EXIT_ERROR
    if wants_stdin(args):
        return run_stdin(args, settings, selection, out, err)
    paths = args.paths or [Path(".")]
    bad = [problem for problem in map(path_problem, paths) if problem]
    if bad:
        for problem in bad:
            err.write(f"amplint: error: {problem}\n")
        return EXIT_ERROR
    from .discovery import name_roots
    name_roots(paths)
    if getattr(args, "force_exclude", False):
        from .stdin import excluded
        kept = [p for p in paths if not excluded(p, settings)]
        if args.verbose:
            for p in paths:
                if p not in kept:
                    err.write(f"amplint: {p}: excluded (--force-exclude)\n")
        if not kept:
            return report(args, [], [], out, err)
        paths = kept
    from .notebook import not_linted
    for warning in not_linted(paths):
        err.write(f"warning: {warning}\n")
    if getattr(args, "add_noqa", False):
        from .noqa_add import run_add_noqa
        return run_add_noqa(args, settings, selection, paths, out, err)
    if getattr(args, "fix", False) or getattr(args, "diff", False):
        return run_fix(args, settings, selection, paths, out, err)
    runner = Runner(settings, selection, jobs=getattr(args, "jobs", None), **cache_options(args))
    runner.tune_gc = True  # the command line's process is amplint's (amplint.gc_policy)
    from .progress import for_run
    runner.progress = for_run(args, err)
    if getattr(args, "show_settings", False):
        from .precision_report import settings_report
        for f in runner.files(paths):
            runner.project_for(f)
        out.write(settings_report(runner.projects()))
        return EXIT_CLEAN
    findings, errors = runner.check(paths)
    for warning in runner.discovery.warnings:
        err.write(f"amplint: warning: {warning}\n")
    from .report.assumed import assumed_precision
    assumed = [assumed_precision(p, [f for q, f in runner.checked_files if q is p]) for p in runner.projects()]
    runner.save_caches()  # what the summary line asked of the projects is cached too
    if args.verbose:
        for name in runner.checked:
            err.write(f"amplint: checked {name}\n")
        for a in assumed:
            err.write(f"amplint: precision {a.text()}\n")
        err.write(f"amplint: {len(runner.checked)} file{'s' if len(runner.checked) != 1 else ''} in "
                  f"{time.perf_counter() - started:.2f} s ({runner.workers} worker{'s' if runner.workers != 1 else ''})\n")
    return report(args, findings, errors, out, err, assumed=assumed)


def run_fix(args, settings: Settings, selection: RuleSelection, paths: Sequence[Path], out, err) -> int:
    """``amplint fix`` / ``check --fix`` / ``--diff``: fix in memory, then write or print a diff."""
    from .findings import Finding
    from .fixes import findings_on_disk, fix_in_memory, remove_leftovers, show_fixes, unified_diff, write_atomically

    import time

    from .report.assumed import assumed_precision

    started = time.perf_counter()
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    run = fix_in_memory(paths, settings, selection, unsafe, **cache_options(args))
    errors = [e for s in run.states for e in s.errors]
    assumed = [assumed_precision(p) for p in run.projects]
    for p in run.projects:
        p.save_cache()  # what the summary line asked of the project (its regime) is cached too
    if getattr(args, "verbose", False):
        for s in run.states:
            err.write(f"amplint: {'fixed' if s.changed else 'checked'} {s.display}"
                      f"{f' ({s.fixed} fix' + ('es' if s.fixed != 1 else '') + ')' if s.changed else ''}\n")
        for a in assumed:
            err.write(f"amplint: precision {a.text()}\n")
        n = len(run.states)
        err.write(f"amplint: {n} file{'s' if n != 1 else ''} in {time.perf_counter() - started:.2f} s\n")
    for warning in run.warnings:
        err.write(f"amplint: warning: {warning}\n")
    if getattr(args, "diff", False):
        for s in run.changed:
            out.write(unified_diff(s))
        if not args.quiet:
            n = run.fixed
            err.write(f"Would fix {n} error{'s' if n != 1 else ''}.\n" if n else "No errors would be fixed.\n")
        for e in errors:
            err.write(f"amplint: error: {e}\n")
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if run.changed else EXIT_CLEAN
    findings = []
    fixed = 0
    shown = []
    remove_leftovers([s.path for s in run.states])  # of an interrupted run
    for s in run.states:
        if s.changed:
            problem = write_atomically(s)
            if problem is not None:
                errors.append(problem)
                findings.extend(findings_on_disk(s, settings, selection))  # what is on disk is what remains
                continue
        fixed += s.fixed
        findings.extend(s.findings)
        if s.applied and s.changed:
            shown.append(s)
    findings.sort(key=Finding.sort_key)
    if getattr(args, "show_fixes", False) and not args.quiet and args.output_format in ("full", "concise"):
        show_fixes(shown, out)
    return report(args, findings, errors, out, err, fixed=fixed, assumed=assumed)


def run_clean(args, out=None, err=None) -> int:
    """``amplint clean``: remove the cache folder of the projects the paths belong to."""
    from .cache import clean, default_dir
    from .discovery import project_root

    err = err if err is not None else sys.stderr
    options = cache_options(args)
    folders = {options["cache_dir"]} if options["cache_dir"] else {default_dir(project_root(p)) for p in (args.paths or [Path(".")])}
    for folder in sorted(folders):
        if clean(folder):
            err.write(f"Removing cache at: {folder}\n")
    return EXIT_CLEAN


def run_rule(args, out=None, err=None) -> int:
    from .docs import read_page
    from .rules import all_rules

    out = out if out is not None else sys.stdout
    err = err if err is not None else sys.stderr

    rules = all_rules()
    if args.all:
        for code, rule in rules.items():
            out.write(f"{code}  {rule.name:<36} fix: {rule.fix_safety:<6}  {rule.summary}\n")
        return EXIT_CLEAN
    if not args.code:
        err.write("amplint: error: give a rule code (e.g. `amplint rule AMP101`) or --all\n")
        return EXIT_ERROR
    code = args.code.upper()
    if code not in rules:
        err.write(f"amplint: error: unknown rule code {args.code!r}\n")
        return EXIT_ERROR
    page = read_page(code)
    if page is None:
        err.write(f"amplint: error: the page of {code} is missing from this installation\n")
        return EXIT_ERROR
    out.write(page)
    return EXIT_CLEAN


def run_server() -> int:
    try:
        from .server import main as serve
    except ImportError as e:
        sys.stderr.write(f"amplint: error: the language server needs pygls ({e}); "
                         f"install it with `pip install 'amplint[lsp]'`\n")
        return EXIT_ERROR
    return serve()


class _GuardedOutput(io.TextIOBase):
    """stdout as the commands see it: a broken pipe (``amplint check | head -1``) silences the rest
    of the output and the run still exits with the code its findings imply; any other failure to
    write (stdout closed, a full disk: ``> /dev/full``) is remembered and ends the run with one line
    and exit 2, never a traceback."""

    def __init__(self, stream) -> None:
        super().__init__()
        self.stream = stream
        self.broken = False
        self.error: Optional[OSError] = None

    def writable(self) -> bool:
        return True

    def _guard(self, op, *a):
        if self.broken or self.error is not None:
            return None
        if self.stream is None:
            import errno
            self.error = OSError(errno.EBADF, "stdout is closed")
            return None
        try:
            return op(*a)
        except BrokenPipeError:
            self.broken = True
        except OSError as e:
            self.error = e
        return None

    def write(self, text: str) -> int:
        self._guard(lambda: self.stream.write(text))
        return len(text)

    def flush(self) -> None:
        self._guard(lambda: self.stream.flush())

    def silence(self) -> None:
        """After a broken pipe or failed write, point fd 1 at /dev/null so that Python's own flush
        at exit cannot fail again."""
        import os
        try:
            fd = self.stream.fileno()
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, fd)
            os.close(devnull)
        except (AttributeError, OSError, ValueError):
            pass


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    if args.command not in ("check", "fix", "rule", "clean"):
        return _dispatch(parser, args)
    real = sys.stdout
    out = sys.stdout = _GuardedOutput(real)
    try:
        rc = _dispatch(parser, args)
        out.flush()
    finally:
        sys.stdout = real
    if out.error is not None:
        out.silence()
        sys.stderr.write(f"amplint: error: cannot write the output: {out.error.strerror or out.error}\n")
        return EXIT_ERROR
    if out.broken:
        out.silence()
    return rc


def _dispatch(parser, args) -> int:
    try:
        if args.command == "check":
            return run_check(args)
        if args.command == "rule":
            return run_rule(args)
        if args.command == "verify":
            from .verify.command import run_verify
            return run_verify(args)
        if args.command == "clean":
            return run_clean(args)
        if args.command == "fix":
            args.fix = True  # ``amplint fix``: ``amplint check --fix`` by another name
            return run_check(args)
        if args.command == "server":
            return run_server()
        parser.print_help(sys.stderr)  # no command: a usage error (ruff prints help and exits 2)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # stderr, or a command writing outside the guarded stdout
        return EXIT_ERROR
