"""Lint one file: read, parse once, build the context, run the rules, attach positions, apply
suppressions. Per-file work is pure (a function of the file's bytes, the project facts and the
selected codes), so it can run in worker processes and be cached."""
from __future__ import annotations

import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Set, Tuple

import libcst as cst

from .context.file_context import FileContext
from .findings import SYNTAX_ERROR, TOO_COMPLEX, Confidence, FileResult, Finding, Location, Violation, severity_of  # noqa: F401
from .noqa import is_suppressed, suppressed_at_uses, suppressions
from .notebook import NotebookError, is_notebook
from .notebook import from_bytes as read_notebook
from .overlay import OverlayProject
from .project import LIBRARY_SCOPE, Regime
from .parsing import DEFAULT_LIMITS, TooComplex, parse_module, python_ast, screen
from . import prefilter
from .rules import all_rules
from .torch_api.frameworks import other_framework


@dataclass
class Analysis:
    """A parsed file and the violations of the selected rules (what ``fix`` works on)."""
    ctx: FileContext
    violations: List[Violation]
    errors: List[str]


def parse(source: bytes, settings=None, filename: str = "<unknown>") -> cst.Module:
    """Every parse goes through amplint.parsing (screened: CPython first, within the limits)."""
    limits = getattr(settings, "limits", None) or DEFAULT_LIMITS
    return parse_module(source, limits, filename)


def too_complex_finding(path: str, exc: TooComplex) -> Finding:
    return Finding(TOO_COMPLEX, "too-complex-to-lint", str(exc), path, exc.line, 1, exc.line, 1)


def syntax_error_finding(path: str, exc: Exception, source: Optional[bytes] = None) -> Finding:
    """E999 for a file that does not parse (or decode). CPython's own parser gives the familiar
    message and position (``'(' was never closed``, ``unexpected indent``, the codec error of
    undecodable bytes); libcst's is used when only libcst rejects the file."""
    line, col, message = 1, 1, str(exc)
    python_error = _python_syntax_error(source) if source is not None and not isinstance(exc, SyntaxError) else None
    if python_error is not None:
        exc = python_error
    if isinstance(exc, cst.ParserSyntaxError):
        line, col = exc.editor_line, exc.editor_column
        message = f"SyntaxError: {exc.message}"
    elif isinstance(exc, SyntaxError):
        line, col = exc.lineno or 1, exc.offset or 1
        if exc.lineno is None and source is not None and b"\0" in source:
            line = source[: source.index(b"\0")].count(b"\n") + 1
        message = f"{type(exc).__name__}: {exc.msg}"
    elif isinstance(exc, UnicodeDecodeError):
        message = f"SyntaxError: {exc}"
    line, col = max(int(line), 1), max(int(col), 1)
    return Finding(SYNTAX_ERROR, "syntax-error", message, path, line, col, line, col)


def _python_syntax_error(source: bytes) -> Optional[SyntaxError]:
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # invalid escape sequences and the like
            python_ast(source)
    except TooComplex:
        return None
    except SyntaxError as e:  # includes IndentationError and undecodable source
        return e
    except (ValueError, UnicodeDecodeError) as e:  # null bytes on older Pythons, odd codecs
        return SyntaxError(str(e))
    except (RecursionError, MemoryError):
        return None
    return None


def analyse(ctx: FileContext, codes: Set[str]) -> Tuple[List[Violation], List[str]]:
    violations: List[Violation] = []
    errors: List[str] = []
    for code, rule in prefilter.rules_that_may_fire(ctx.source, ((c, r) for c, r in all_rules().items() if c in codes)):
        try:
            for v in rule.check(ctx):
                v.code = code
                violations.append(v)
        except Exception:  # a bug in one rule must not stop the others or the other files
            tb = traceback.format_exc(limit=-3)
            errors.append(f"{ctx.path}: internal error in rule {code}: {tb.strip().splitlines()[-1]}\n{tb}")
    violations, unbuilt = _set_aside_classes_built_nowhere(ctx, violations)
    violations.extend(_library_policy(ctx, codes, violations, errors))
    if unbuilt and _users_pick_precision(ctx):
        never_built = Regime([], None, f"{LIBRARY_SCOPE}: {NEVER_BUILT}").assuming_any_fp16_use()
        violations.extend(_library_look(ctx, codes, violations, errors, never_built, f"library code: {NEVER_BUILT}",
                                        within=unbuilt))
    # Rules that judge the other rules' results (AMP100: suppressions that suppress nothing).
    for code, rule in all_rules().items():
        after = getattr(rule, "check_results", None)
        if code in codes and after is not None:
            for v in after(ctx, list(violations), codes):
                v.code = code
                violations.append(v)
    if prefilter.AUDIT_LOG:
        rules = all_rules()
        prefilter.audit(ctx.path, ctx.source, [(v.code, rules[v.code]) for v in violations])
    return violations, errors


def _library_policy(ctx: FileContext, codes: Set[str], found: List[Violation], errors: List[str]) -> List[Violation]:
    """Library code (no training entry point reaches it; docs/precision.md): its users pick the
    precision, so it is looked at again as under fp16 autocast by the rules that report hazards
    under any float16 use (``any_fp16_use = True``: a guard that is 0 in float16, the log of a float16
    sigmoid). Those rules yield only such hazards under this look; each is marked as such."""
    regime = ctx.regime
    if regime is None:
        return []
    launcher = _launcher_only(regime)
    # an assumed float16 precision (``assume-precision = "fp16-mixed"``, the library author's full
    # check) reports at least what the library policy would
    assumed = getattr(regime, "override", None) in ("fp16", "fp16-mixed", "fp16-master")
    if not (getattr(regime, "library", False) or launcher is not None or assumed):
        return []
    if launcher is not None:
        # ``accelerate launch --mixed_precision fp16`` is one of the runs the launcher may make
        whose = f"its precision is the launcher's ({launcher.what} at {launcher.path}:{launcher.line}), fp16 included"
    elif assumed:
        whose = f'precision = "{regime.override}" assumed by the configuration'
    else:
        from .project import who_reaches
        words = who_reaches(regime.scope)
        whose = f"library code {words}" if words.startswith("no ") else f"library code that {words}"
    return _library_look(ctx, codes, found, errors, regime.assuming_any_fp16_use(launched=launcher is not None), whose)


# A module-level class nothing in the project builds or names (``instances.built_nowhere``): its code
# runs in none of the project's trainings, so it is judged as library code, whatever its file's precision.
NEVER_BUILT = "a class nothing in the project builds"
PRECISION_FREE = {"AMP501"}  # rules whose findings do not depend on the precision


def _users_pick_precision(ctx: FileContext) -> bool:
    """Is code that none of the project's trainings runs its users' to run in the precision they pick
    (``Project.users_pick_precision``)? A lone file (no project) is."""
    project = getattr(ctx, "project", None)
    pick = getattr(project, "users_pick_precision", None)
    return True if pick is None else pick()


def _module_level_class(ctx: FileContext, node: cst.CSTNode) -> Optional[cst.ClassDef]:
    for outer in ctx.ancestors(node):
        if isinstance(outer, cst.ClassDef) and ctx.parent(outer) is ctx.module:
            return outer
    return None


def _set_aside_classes_built_nowhere(ctx: FileContext, found: List[Violation]) -> Tuple[List[Violation], set]:
    """``found`` less the findings inside module-level classes nothing in the project builds, and
    those classes. Only where a precision is inferred for the file: a configured one (``--precision``,
    ``assume-precision``) judges all its code, and library code is judged as such already."""
    regime = ctx.regime
    if regime is None or getattr(regime, "override", None) or getattr(regime, "library", False) or not found:
        return found, set()
    from .context.instances import built_nowhere, built_only_when_off  # noqa: PLC0415 (asked of a few findings' classes)
    from .context.import_fallbacks import fallback_definition, float16_runs_need  # noqa: PLC0415 (likewise)
    holders: Dict[cst.ClassDef, bool] = {}
    fallbacks: Dict[cst.CSTNode, bool] = {}
    kept: List[Violation] = []
    for v in found:
        fallback = None if v.code in PRECISION_FREE else fallback_definition(ctx, v.node)
        if fallback is not None:
            # the fallback of a library's class (``except ImportError: class BertLayerNorm``) in a project whose
            # float16 runs all import that library: it runs only in float32 (T17-4)
            if fallback[0] not in fallbacks:
                fallbacks[fallback[0]] = float16_runs_need(ctx, fallback[1])
            if fallbacks[fallback[0]] and not _evidence_inside(ctx, v, fallback[0]):
                continue
        cls = None if v.code in PRECISION_FREE else _module_level_class(ctx, v.node)
        if cls is not None and cls not in holders:
            holders[cls] = built_nowhere(ctx, cls) or built_only_when_off(ctx, cls)
        # (a finding resting on the class's own autocast stays, whoever builds it; asked last: it needs
        # the file's positions)
        if cls is None or not holders[cls] or _evidence_inside(ctx, v, cls):
            kept.append(v)
    return kept, {cls for cls, nowhere in holders.items() if nowhere}


def _evidence_inside(ctx: FileContext, v: Violation, cls: cst.ClassDef) -> bool:
    """Is some evidence of ``v`` written inside ``cls`` (a ``@torch.autocast`` of its own forward)?"""
    first, _, last, _ = ctx.position(cls)
    return any(getattr(ev, "path", None) == ctx.path and first <= (getattr(ev, "line", 0) or 0) <= last
               for ev in v.evidence)


def _library_look(ctx: FileContext, codes: Set[str], found: List[Violation], errors: List[str], regime, whose: str,
                  within: Optional[set] = None) -> List[Violation]:
    """The rules that report hazards under any float16 use, run again with the file judged under
    ``regime`` (a library look at it); ``within``: only what they find inside those classes."""
    rules = prefilter.rules_that_may_fire(ctx.source, ((code, rule) for code, rule in all_rules().items()
                                                       if code in codes and getattr(rule, "any_fp16_use", False)))
    seen = {(v.code, id(v.node)) for v in found}
    out: List[Violation] = []
    with ctx.assuming(regime):
        for code, rule in rules:
            try:
                for v in rule.check(ctx):
                    v.code = code
                    if (code, id(v.node)) in seen:
                        continue
                    if within is not None and _module_level_class(ctx, v.node) not in within:
                        continue
                    v.message += f" (a hazard under any float16 use of this code: {whose}, judged as under fp16 autocast)"
                    if v.confidence == Confidence.CERTAIN:
                        v.confidence = Confidence.LIKELY
                    out.append(v)
            except Exception:  # a bug in one rule must not stop the others or the other files
                tb = traceback.format_exc(limit=-3)
                errors.append(f"{ctx.path}: internal error in rule {code}: {tb.strip().splitlines()[-1]}\n{tb}")
    return out


def _launcher_only(regime):
    """The launcher evidence when the launcher alone decides the precision (``Accelerator()`` with
    no mixed_precision, nothing else saying float16 or bfloat16): fp16 autocast is one of its runs,
    so what is a hazard under any float16 use is one there too."""
    launcher = getattr(regime, "launcher", None)
    if launcher is None or getattr(regime, "mode", None) != "fp32":
        return None
    return launcher


def build_context(path: Path, display: str, source: bytes, project, settings=None) -> FileContext:
    module = _parsed_for_another(project, path, source, settings)
    if module is None:
        module = parse(source, settings, display)
    module_name = project.module_name(path) if project is not None else None
    ctx = FileContext(display, module, source, project, module_name, settings)
    ctx.file = path
    if project is not None:
        ctx.open_other = lambda other: project_context(project, other)
    return ctx


_CONTEXTS = 24  # other files' contexts kept per project (least recently used dropped)


def project_context(project, path: Path) -> Optional[FileContext]:
    """Another project file's FileContext, for a question one file's analysis asks of another
    (what a caller passes, the autocast a helper opens): parsed once per project and worker, a
    few kept; None for a file that does not read or parse."""
    cache = project.memo("caller_contexts")
    key = str(path)
    if key in cache:
        ctx = cache.pop(key)
        cache[key] = ctx  # most recently used last
        return ctx
    try:
        source = project.read(path)
        display = project.display(path) if hasattr(project, "display") else str(path)
        ctx = build_context(path, display, source, project)
    except Exception:  # a file that does not parse (or read) has nothing to offer
        ctx = None
    cache[key] = ctx
    while len(cache) > _CONTEXTS:
        cache.pop(next(iter(cache)))
    return ctx


def _parsed_for_another(project, path: Path, source: bytes, settings) -> Optional[cst.Module]:
    """The tree of this file when another file's question parsed it already (``project_context``)
    from the same bytes and under the same limits: the file is then not parsed twice (a file many
    others ask about, a base model or a helpers module, was parsed for them before its own turn).
    Only the tree is shared (it is immutable): the context is built afresh, so its analysis reads
    the project facts itself (what a cached result depends on)."""
    if project is None:
        return None
    contexts, linted = project.memo("caller_contexts"), project.memo("linted_trees")
    if not (contexts or linted) or (getattr(settings, "limits", None) or DEFAULT_LIMITS) != DEFAULT_LIMITS:
        return None
    key = _resolved_key(project, path)
    if key is None:
        return None
    other = contexts.get(str(path)) or contexts.get(key)
    if other is not None and other.__dict__.get("source") == source:
        return other.module
    found = linted.get(key)
    if found is not None and found[0] == source:
        return found[1]
    return None


def _resolved_key(project, path: Path) -> Optional[str]:
    """``str(path.resolve())``, through the project's memo of resolved paths when it has one (a
    file discovery found is resolved without a system call per directory of its path)."""
    try:
        resolved = getattr(project, "resolved", None)
        return str(resolved(path) if resolved is not None else Path(path).resolve())
    except OSError:
        return None


_LINTED_TREES = 6  # the trees of the files linted last, kept per project for the next files' questions


def _keep_tree(project, path: Path, source: bytes, module: cst.Module) -> None:
    """Keep the tree of a file just linted for a while: the files after it in the run's order
    (its directory's) ask about it (a model file about the conversion script that builds it)."""
    if project is None:
        return
    key = _resolved_key(project, path)
    if key is None:
        return
    trees = project.memo("linted_trees")
    trees.pop(key, None)
    trees[key] = (source, module)
    while len(trees) > _LINTED_TREES:
        trees.pop(next(iter(trees)))


def reportable(ctx: FileContext, violations: Iterable[Violation]) -> List[Tuple[Violation, Tuple[int, int, int, int]]]:
    """The violations that are reported (not suppressed by a comment, not duplicates), each with
    its position. ``fix`` applies the fixes of exactly these."""
    violations = list(violations)
    if not violations:
        return []  # (the suppression comments are read by tokenizing the file: not for nothing)
    table = suppressions(ctx.source)
    out = []
    seen = set()
    for v in violations:
        pos = ctx.report_position(v.node)
        line = pos[0]
        if table:
            stmt_line = ctx.line_of(ctx.statement_of(v.node))
            if is_suppressed(v.code, (line, stmt_line), table) or suppressed_at_uses(v.code, v.use_lines, table):
                continue
        key = (v.code, line, pos[1], v.message)
        if key in seen:
            continue
        seen.add(key)
        out.append((v, pos))
    return out


def to_findings(ctx: FileContext, violations: Iterable[Violation]) -> List[Finding]:
    rules = all_rules()
    out: List[Finding] = []
    for v, (line, col, end_line, end_col) in reportable(ctx, violations):
        out.append(Finding(v.code, rules[v.code].name, v.message, ctx.path, line, col, end_line, end_col,
                           v.confidence.value, v.fix.summary() if v.fix else None,
                           severity_of(v.confidence.value), v.help or (v.fix.description if v.fix else ""),
                           _locations(v.evidence), _locations(v.related)))
    out.sort(key=Finding.sort_key)
    return out


def _locations(items) -> tuple:
    out = []
    for item in items:
        loc = item if isinstance(item, Location) else Location.of(item)
        if loc not in out:
            out.append(loc)
    return tuple(out)


def lint_file(path: Path, display: str, project, codes: Set[str], settings=None) -> FileResult:
    result = FileResult(display)
    try:
        source = path.read_bytes()
    except OSError as e:
        result.errors.append(f"{display}: cannot read file: {e.strerror or e}")
        return result
    with _recursion_limit(_DEEP):
        if is_notebook(path):
            return _lint_notebook(path, display, source, project, codes, settings, result)
        return _lint_source(path, display, source, project, codes, settings, result)


def lint_buffer(path: Path, display: str, data: bytes, project, codes: Set[str], settings=None) -> FileResult:
    """Lint ``data`` as the contents of the file at ``path``, which need not exist or hold them
    (stdin, an editor's unsaved buffer): ``data`` stands in for the file in the project's facts.
    A notebook (``.ipynb``) is linted as its code cells, positions relative to the cells."""
    result = FileResult(display)
    with _recursion_limit(_DEEP):
        if is_notebook(path):
            return _lint_notebook(path, display, data, project, codes, settings, result)
        if project is not None:
            project = OverlayProject(project, path, data)
        return _lint_source(path, display, data, project, codes, settings, result)


def lint_python(path: Path, display: str, source: bytes, project, codes: Set[str], settings=None) -> FileResult:
    """Lint Python ``source`` against ``project`` as it is (positions in ``source``)."""
    with _recursion_limit(_DEEP):
        return _lint_source(path, display, source, project, codes, settings, FileResult(display))


def _lint_notebook(path: Path, display: str, data: bytes, project, codes: Set[str], settings,
                   result: FileResult) -> FileResult:
    try:
        notebook = read_notebook(data)
    except NotebookError as e:
        result.errors.append(f"{display}: cannot read notebook: {e}")
        return result
    python = notebook.python.encode("utf-8")
    if project is not None:  # the notebook's own autocast / .half() count for its code
        project = OverlayProject(project, path, python)
    _lint_source(path, display, python, project, codes, settings, result)
    result.findings = sorted((notebook.locate(f) for f in result.findings), key=Finding.sort_key)
    return result


# libcst's visitors recurse a few frames per tree level: a valid file nested ~150 levels deep (a long
# literal list of lists) exceeds Python's default limit of 1000 frames.
_DEEP = 10000


@contextmanager
def _recursion_limit(limit: int):
    old = sys.getrecursionlimit()
    if old < limit:
        sys.setrecursionlimit(limit)
    try:
        yield
    finally:
        sys.setrecursionlimit(old)


def _cannot_hold_findings(source: bytes, codes: Set[str], settings, display: str) -> bool:
    """The prefilter (amplint.prefilter): no enabled rule can report in a file of this text, and
    the file parses (one that does not is reported whatever is selected: it goes the long way)."""
    if not prefilter.ENABLED or prefilter.may_hold_findings(source, [r for c, r in all_rules().items() if c in codes]):
        return False
    try:
        screen(source, getattr(settings, "limits", None) or DEFAULT_LIMITS, display)
    except Exception:  # SyntaxError, TooComplex, ...: reported by the parse below
        return False
    return True


def _lint_source(path: Path, display: str, source: bytes, project, codes: Set[str], settings,
                 result: FileResult) -> FileResult:
    if _cannot_hold_findings(source, codes, settings, display):
        return result
    try:
        ctx = build_context(path, display, source, project, settings)
    except (cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError, ValueError) as e:
        # A file that does not parse is always reported, whatever is selected.
        result.findings.append(syntax_error_finding(display, e, source))
        return result
    except TooComplex as e:
        result.findings.append(too_complex_finding(display, e))
        return result
    except RecursionError:
        result.findings.append(Finding(SYNTAX_ERROR, "syntax-error", "file is nested too deeply for amplint to parse",
                                       display, 1, 1, 1, 1))
        return result
    except Exception:  # a bug while building the context: report it, go on with the other files
        result.errors.append(f"{display}: internal error while parsing: {traceback.format_exc()}")
        return result
    if project is not None and (getattr(settings, "limits", None) or DEFAULT_LIMITS) == DEFAULT_LIMITS:
        _keep_tree(project, path, source, ctx.module)  # (screened under the limits other files' questions use)
    if other_framework(target for _, target in ctx.imports.items()) is not None:
        return result  # Paddle / OneFlow / ... code: torch's rules say nothing true about it
    violations, errors = analyse(ctx, codes)
    result.errors.extend(errors)
    try:
        result.findings = to_findings(ctx, violations)
    except Exception:
        result.errors.append(f"{display}: internal error while reporting: {traceback.format_exc()}")
    if RELEASE_CONTEXTS:
        del violations
        ctx.release()
    return result


# A command-line run drops each file's analysis once its findings are made (amplint.gc_policy), so
# that it is freed at once, not by the garbage collector (which that run calls less often).
RELEASE_CONTEXTS = False
