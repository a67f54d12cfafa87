"""``amplint fix``: apply the fixes rules attach to their violations.

The model is ruff's. Each fix is safe or unsafe; ``fix`` applies the safe ones, ``--unsafe-fixes``
the others too. In one pass over a file the fixes whose edits do not overlap are applied together
(one libcst transform, then the imports they need, added with libcst's ``AddImportsVisitor``); the
result must parse, is parsed again and checked again, and the loop goes on until no fix applies
(at most ``MAX_ITERATIONS`` passes; a file that does not settle is reported). Because whether code
runs in float16 is a project-wide fact, the files are then checked once more against the project as
fixed (the fixed contents stand in for the files on disk), until a round changes nothing.

Writing is the careful part: the fixed bytes keep the file's encoding, BOM and line endings (libcst
round-trips them); they go to a temporary file in the same directory which replaces the original
atomically, with the original's mode; a file that changed on disk since it was read is left alone
and reported, as is a file that cannot be written, and the others are still fixed. Only the files
named (or found under the directories named) are ever written; the project-wide scan only reads.
"""
from __future__ import annotations

import difflib
import os
import stat
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Set, TextIO, Tuple

import libcst as cst

from .config import RuleSelection, Settings
from .discovery import Discovery, project_root
from .engine import analyse, build_context, lint_file, lint_python, reportable, to_findings
from .findings import Applicability, Finding, Fix, Violation
from .notebook import Notebook, NotebookError, is_notebook
from .notebook import from_bytes as read_notebook
from .overlay import OverlayProject
from .parsing import DEFAULT_LIMITS, TooComplex, parse_module
from .cache import ProjectCache, default_dir
from .project import Project

MAX_ITERATIONS = 10  # passes over one file before it is reported as not converging
MAX_ROUNDS = 4  # project-wide rounds (a fix in one file may change what another file's rules see)

PARSE_ERRORS = (cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError, ValueError, LookupError, RecursionError)


class FixError(Exception):
    """A fix that cannot be applied as given (for instance an insertion next to a node that is not
    a statement). The fix is skipped; its finding stays."""


# ---- planning one pass ---------------------------------------------------------------------------
def _statement_anchor(ctx, stmt: cst.CSTNode) -> cst.CSTNode:
    """Where an insertion next to ``stmt`` goes: ``stmt`` itself when it sits in a statement
    list; the line of a small statement alone on its line (so the new code gets lines of its
    own); an ``elif`` branch is not in a list, so its whole ``if`` statement is used."""
    cur = stmt
    parent = ctx.parent(cur)
    while isinstance(parent, cst.If) and parent.orelse is cur:
        cur, parent = parent, ctx.parent(parent)
    if isinstance(parent, cst.SimpleStatementLine) and len(parent.body) == 1:
        cur, parent = parent, ctx.parent(parent)
    if isinstance(cur, cst.BaseSmallStatement):
        if isinstance(parent, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return cur
    elif isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        if isinstance(parent, (cst.Module, cst.IndentedBlock)):
            return cur
    raise FixError(f"cannot insert statements next to a {type(stmt).__name__}")


def _statements_for(anchor: cst.CSTNode, new: Sequence[cst.CSTNode]) -> List[cst.CSTNode]:
    """The new statements in the form the anchor's list holds: small statements beside a small
    statement (``if ok: a(); new()``), statement lines beside a statement."""
    out: List[cst.CSTNode] = []
    small = isinstance(anchor, cst.BaseSmallStatement)
    for s in new:
        if small:
            if isinstance(s, cst.SimpleStatementLine):
                out.extend(s.body)
            elif isinstance(s, cst.BaseSmallStatement):
                out.append(s)
            else:
                raise FixError("a compound statement cannot be inserted beside a statement sharing its line")
        else:
            if isinstance(s, cst.BaseSmallStatement):
                out.append(cst.SimpleStatementLine(body=[s]))
            elif isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
                out.append(s)
            else:
                raise FixError(f"not a statement: {type(s).__name__}")
    return out


_EMPTY = cst.Module(body=[])


def _code(node: cst.CSTNode) -> str:
    return _EMPTY.code_for_node(node)


def _import_requests(text: str) -> List[Tuple[str, Optional[str], Optional[str]]]:
    """``import a.b as c`` / ``from a import b as c`` -> AddImportsVisitor's (module, obj, asname)."""
    stmt = cst.parse_statement(text)
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
        raise FixError(f"not one import statement: {text!r}")
    node = stmt.body[0]
    out = []
    if isinstance(node, cst.Import):
        for alias in node.names:
            out.append((_code(alias.name), None, alias.evaluated_alias))
    elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None \
            and not isinstance(node.names, cst.ImportStar):
        for alias in node.names:
            out.append((_code(node.module), _code(alias.name), alias.evaluated_alias))
    else:
        raise FixError(f"unsupported import: {text!r}")
    return out


class Plan:
    """The edits of the fixes chosen for one pass: fixes whose edits overlap an already chosen
    fix's (a node replaced inside another replaced node, an insertion inside a replaced node) wait
    for the next pass, when they are recomputed on the fixed code."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.replace: Dict[cst.CSTNode, object] = {}
        self.before: Dict[cst.CSTNode, List[cst.CSTNode]] = {}
        self.after: Dict[cst.CSTNode, List[cst.CSTNode]] = {}
        self.imports: List[str] = []
        self.fixes: List[Fix] = []
        self._replaced: Set[cst.CSTNode] = set()
        self._enclosing: Set[cst.CSTNode] = set()  # strict ancestors of every edited node

    def _inside_replaced(self, node: cst.CSTNode) -> bool:
        return any(a in self._replaced for a in self.ctx.ancestors(node))

    def add(self, fix: Fix) -> bool:
        """Take ``fix`` into this pass unless it overlaps what is taken; False when it waits."""
        if any(f is fix for f in self.fixes):
            return True
        olds = [old for old, _ in fix.replacements]
        for old in olds:
            if old in self._replaced or old in self._enclosing or self._inside_replaced(old):
                return False
        inserts = []
        for which, pairs in (("before", fix.insert_before), ("after", fix.insert_after)):
            for stmt, new in pairs:
                anchor = _statement_anchor(self.ctx, stmt)
                if self._inside_replaced(anchor):
                    return False
                inserts.append((which, anchor, _statements_for(anchor, list(new))))
        for text in fix.imports:
            _import_requests(text)  # raises FixError for what AddImportsVisitor cannot add
        self.fixes.append(fix)
        for old, new in fix.replacements:
            self.replace[old] = new
            self._replaced.add(old)
        for which, anchor, stmts in inserts:
            target = self.before if which == "before" else self.after
            pending = target.setdefault(anchor, [])
            seen = {_code(s) for s in pending}
            for s in stmts:
                if _code(s) not in seen:  # two findings asking for the same line get it once
                    pending.append(s)
                    seen.add(_code(s))
        for node in [*olds, *(a for _, a, _ in inserts)]:
            self._enclosing.update(self.ctx.ancestors(node))
        self.imports.extend(i for i in fix.imports if i not in self.imports)
        return True

    def apply(self) -> cst.Module:
        module = self.ctx.module.visit(_Apply(self))
        if self.imports:
            # libcst's codemod package (and its matchers) costs ~0.3 s to import: only for fixes that add imports
            from libcst.codemod import CodemodContext
            from libcst.codemod.visitors import AddImportsVisitor

            context = CodemodContext()
            for text in self.imports:
                for mod, obj, asname in _import_requests(text):
                    AddImportsVisitor.add_needed_import(context, mod, obj, asname)
            module = AddImportsVisitor(context).transform_module(module)
        return module


def _split_blank_lines(stmt: cst.CSTNode) -> Tuple[list, cst.CSTNode]:
    """Blank lines above ``stmt`` (up to its first comment line), and ``stmt`` without them: code
    inserted before a statement goes below the blank lines that separate it from what precedes,
    and above the comments that belong to it."""
    lines = list(getattr(stmt, "leading_lines", ()))
    k = 0
    while k < len(lines) and lines[k].comment is None:
        k += 1
    if k == 0:
        return [], stmt
    return lines[:k], stmt.with_changes(leading_lines=lines[k:])


class _Apply(cst.CSTTransformer):
    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def on_leave(self, original_node, updated_node):
        plan = self.plan
        new = plan.replace.get(original_node, updated_node)
        if callable(new):  # built from the node as updated by the edits inside it
            new = new(updated_node)
        before = plan.before.get(original_node)
        after = plan.after.get(original_node)
        if not before and not after:
            return new
        if isinstance(new, cst.FlattenSentinel):
            middle = list(new.nodes)
        elif isinstance(new, cst.RemovalSentinel):
            middle = []
        else:
            middle = [new]
        before = list(before or [])
        if before and middle and hasattr(middle[0], "leading_lines") and hasattr(before[0], "leading_lines"):
            blank, middle[0] = _split_blank_lines(middle[0])
            if blank:
                before[0] = before[0].with_changes(leading_lines=[*blank, *before[0].leading_lines])
        return cst.FlattenSentinel([*before, *middle, *(after or [])])


# ---- one file ------------------------------------------------------------------------------------
def applicable(fix: Optional[Fix], unsafe: bool) -> bool:
    return fix is not None and (unsafe or fix.applicability is Applicability.SAFE)


@dataclass
class FileState:
    """A file being fixed: what was read, what it is now, what was fixed and what remains."""
    path: Path
    display: str
    original: Optional[bytes] = None
    mtime_ns: Optional[int] = None
    source: Optional[bytes] = None
    encoding: str = "utf-8"
    fixed: int = 0
    applied: List[str] = field(default_factory=list)  # the code of each fix applied (--show-fixes)
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)
    stuck: bool = False  # stop fixing this file (unparseable output, no convergence)
    notebook: Optional[Notebook] = None  # a notebook: ``source`` is its code cells as one module

    def load(self, data: bytes) -> None:
        """Start from the file's contents ``data`` (a notebook's code cells for a notebook)."""
        self.original = data
        if is_notebook(self.path):
            try:
                self.notebook = read_notebook(data)
            except NotebookError as e:
                self.errors.append(f"{self.display}: cannot read notebook: {e}")
                self.stuck = True
                return
            self.source = self.notebook.python.encode("utf-8")
        else:
            self.source = data

    @property
    def changed(self) -> bool:
        if self.source is None:
            return False
        if self.notebook is not None:
            return self.source != self.notebook.python.encode("utf-8")
        return self.source != self.original

    def output(self) -> bytes:
        """The fixed contents of the file: the notebook's JSON for a notebook."""
        if self.notebook is not None:
            return self.notebook.render(self.source.decode("utf-8")).encode("utf-8")
        return self.source


def keep_final_line_end(before: bytes, after: bytes) -> bytes:
    """libcst's round trip drops the last line end of a file whose lines end in a lone CR; put back
    what the file had."""
    if before.endswith(b"\r") and not after.endswith((b"\r", b"\n")):
        return after + b"\r"
    return after


def _parses(source: bytes, settings: Optional[Settings] = None) -> Optional[str]:
    """None when ``source`` parses (screened by CPython within the limits, then libcst: the
    original passed the same), else the error."""
    try:
        parse_module(source, getattr(settings, "limits", None) or DEFAULT_LIMITS, "<fixed>")
    except (*PARSE_ERRORS, TooComplex) as e:
        return str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return None


def fix_file(state: FileState, project, codes: Set[str], settings: Settings, unsafe: bool) -> None:
    """Fix ``state.source`` in memory until no applicable fix is left; ``state.findings`` are then
    the findings of the result, as ``check`` would report them."""
    for iteration in range(MAX_ITERATIONS + 1):
        try:
            ctx = build_context(state.path, state.display, state.source, project, settings)
        except (*PARSE_ERRORS, TooComplex):
            # Only the file as read can fail here (fixed text is checked before it is kept): report
            # it as check does.
            result = lint_python(state.path, state.display, state.source, project, codes, settings)
            state.findings = _located(state, result.findings)
            state.errors.extend(result.errors)
            state.stuck = True
            return
        state.encoding = ctx.module.encoding
        violations, errors = analyse(ctx, codes)
        for e in errors:
            if e not in state.errors:
                state.errors.append(e)
        kept = reportable(ctx, violations)
        todo = sorted(((pos, v) for v, pos in kept if applicable(v.fix, unsafe)), key=lambda t: (t[0], t[1].code))
        if todo and iteration < MAX_ITERATIONS and not state.stuck:
            new_source, taken = _one_pass(ctx, todo, state)
            if new_source is not None:
                new_source = keep_final_line_end(state.source, new_source)
            if new_source is not None and new_source != state.source:
                problem = _parses(new_source, settings)
                if problem is None:
                    state.source = new_source
                    state.fixed += len(taken)
                    state.applied.extend(taken)
                    continue
                codes_tried = ", ".join(sorted({v.code for _, v in todo}))
                state.errors.append(f"{state.display}: the fixes of {codes_tried} produced code that does not "
                                    f"parse ({problem}); they were not applied. Please report this as a bug.")
                state.stuck = True
        elif todo and iteration == MAX_ITERATIONS:
            state.errors.append(f"{state.display}: fixes did not converge after {MAX_ITERATIONS} passes "
                                f"(still fixable: {', '.join(sorted({v.code for _, v in todo}))}); "
                                f"the last result that parses is kept. Please report this as a bug.")
            state.stuck = True
        state.findings = _located(state, to_findings(ctx, violations))
        return


def _located(state: FileState, findings: List[Finding]) -> List[Finding]:
    if state.notebook is None:
        return findings
    return sorted((state.notebook.locate(f) for f in findings), key=Finding.sort_key)


def _one_pass(ctx, todo, state: FileState) -> Tuple[Optional[bytes], List[str]]:
    """Apply the non-overlapping fixes of ``todo`` together: (new source, codes of the violations fixed)."""
    plan = Plan(ctx)
    taken: List[Violation] = []
    for _, v in todo:
        try:
            if plan.add(v.fix):
                taken.append(v)
        except FixError as e:
            msg = f"{state.display}: a fix of {v.code} was skipped: {e}"
            if msg not in state.errors:
                state.errors.append(msg)
    if not plan.fixes:
        return None, []
    try:
        module = plan.apply()
    except Exception as e:  # a rule built an edit libcst cannot render: keep the file as it is
        codes = ", ".join(sorted({v.code for v in taken}))
        state.errors.append(f"{state.display}: the fixes of {codes} could not be applied "
                            f"({type(e).__name__}: {e}). Please report this as a bug.")
        state.stuck = True
        return None, []
    return module.bytes, [v.code for v in taken]


# ---- the project ---------------------------------------------------------------------------------
class _FixedProject(Project):
    """A project whose facts read the fixed, not yet written, contents of the files being fixed."""

    def __init__(self, root: Path, discovery: Discovery, override: Optional[str], overlay: Dict[Path, bytes],
                 cache: Optional[ProjectCache] = None, limits=DEFAULT_LIMITS) -> None:
        super().__init__(root, discovery, override, cache=cache, overlay=overlay, limits=limits)


@dataclass
class FixRun:
    states: List[FileState]
    errors: List[str] = field(default_factory=list)
    projects: List[Project] = field(default_factory=list)  # as of the last round (the precision assumed)
    warnings: List[str] = field(default_factory=list)  # symlinks skipped while walking

    @property
    def fixed(self) -> int:
        return sum(s.fixed for s in self.states)

    @property
    def changed(self) -> List[FileState]:
        return [s for s in self.states if s.changed]


def fix_in_memory(paths: Sequence[Path], settings: Settings, selection: RuleSelection, unsafe: bool = False,
                  cache: bool = False, cache_dir: Optional[Path] = None) -> FixRun:
    """Fix the files under ``paths`` in memory (nothing is written): rounds over all files until
    the project reaches a fixed point. With ``cache``, the summaries of the project's other files
    come from the on-disk cache (the files being fixed are summarised from their fixed text)."""
    caches: Dict[Path, ProjectCache] = {}
    discovery = Discovery(settings.exclude, settings.extend_exclude)
    states: List[FileState] = []
    for f in discovery.files(paths):
        state = FileState(f, f.as_posix())
        try:
            state.mtime_ns = os.stat(f).st_mtime_ns
            state.load(f.read_bytes())
        except OSError as e:
            state.errors.append(f"{state.display}: cannot read file: {e.strerror or e}")
            state.stuck = True
        states.append(state)
    run = FixRun(states)
    override = settings.precision if settings.precision != "auto" else None
    for _ in range(MAX_ROUNDS):
        overlay = {s.path.resolve(): s.source for s in states if s.changed}
        projects: Dict[Path, Project] = {}
        changed: List[FileState] = []
        for s in states:
            if s.source is None:
                continue
            root = project_root(s.path)
            if root not in projects:
                if cache and root not in caches:
                    caches[root] = ProjectCache(cache_dir or default_dir(root), root.resolve())
                projects[root] = _FixedProject(root, discovery, override, overlay, caches.get(root), settings.limits)
            before = s.source
            project = projects[root]
            if s.notebook is not None:  # the notebook's own evidence counts for its code
                project = OverlayProject(project, s.path, s.source)
            fix_file(s, project, selection.for_file(s.path), settings, unsafe)
            if s.source != before:
                changed.append(s)
        if not changed:
            break
    else:
        for s in changed:
            s.errors.append(f"{s.display}: fixes did not reach a project-wide fixed point after "
                            f"{MAX_ROUNDS} rounds. Please report this as a bug.")
    for project in projects.values():
        project.save_cache()
    run.projects = list(projects.values())
    run.warnings = list(discovery.warnings)
    return run


def fix_buffer(path: Path, display: str, data: bytes, project: Project, codes: Set[str], settings: Settings,
               unsafe: bool = False) -> FileState:
    """Fix ``data`` as the contents of the file at ``path`` (stdin, an editor's buffer) against
    ``project``, in which the text stands for the file; nothing is written. ``state.output()`` is
    the fixed text."""
    state = FileState(path, display)
    state.load(data)
    for _ in range(MAX_ROUNDS):  # the text's own evidence may change as it is fixed
        if state.source is None or state.stuck:
            break
        before = state.source
        fix_file(state, OverlayProject(project, path, state.source), codes, settings, unsafe)
        if state.source == before:
            break
    return state


# ---- writing -------------------------------------------------------------------------------------
TMP_SUFFIX = ".amplint-tmp"
LEFTOVER_AGE_S = 60  # a temporary file older than this is a leftover of an interrupted run, not a concurrent one


def remove_leftovers(paths: Sequence[Path]) -> List[str]:
    """Remove the temporary files (``.NAME.py.XXXX.amplint-tmp``) an interrupted ``fix`` left beside
    the files it was writing, for the files about to be fixed; the names removed."""
    removed = []
    now = time.time()
    for directory in sorted({Path(os.path.realpath(p)).parent for p in paths}):
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        names = {e.name for e in entries}
        for e in entries:
            if not (e.name.startswith(".") and e.name.endswith(TMP_SUFFIX)):
                continue
            base = e.name[1:].rsplit(".", 2)[0]  # ".train.py.k3j2.amplint-tmp" -> "train.py"
            try:
                st = e.stat(follow_symlinks=False)
                if base in names and stat.S_ISREG(st.st_mode) and now - st.st_mtime > LEFTOVER_AGE_S:
                    os.unlink(e.path)
                    removed.append(e.path)
            except OSError:
                pass
    return removed


def _write_problem(state: FileState, target: Path, st: os.stat_result) -> Optional[str]:
    """Why ``fix`` must not write ``target`` (the file ``state.path`` names), or None."""
    if not stat.S_ISREG(st.st_mode):
        return f"{state.display}: not a regular file; not written"
    if not st.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) or not os.access(target, os.W_OK):
        return f"{state.display}: read-only; not written (make it writable to fix it)"
    root = os.path.realpath(project_root(Path(os.path.abspath(state.path)).parent))
    if os.path.commonpath([str(target), root]) != root:
        return f"{state.display}: a symlink to {target}, outside the project root {root}; not written"
    return None


def write_atomically(state: FileState) -> Optional[str]:
    """Write ``state.output()`` to the file unless it changed since it was read. None on success,
    else the reason it was not written (the run goes on with the other files).

    The file keeps its owner, group and mode. It is replaced atomically (a temporary file beside
    it, flushed to disk, renamed over it: a kill at any moment leaves the old or the new content)
    unless it has other hard links or its owner cannot be given back (another user's file in a
    directory we may write): then it is written in place, as black and ruff always do, which keeps
    the links and the owner but is not atomic. A read-only file, a symlink leading out of the
    project root, and anything but a regular file are refused."""
    target = Path(os.path.realpath(state.path))  # a symlink keeps pointing at the fixed file
    data = state.output()
    tmp = None
    try:
        st = os.stat(target)
        problem = _write_problem(state, target, st)
        if problem is not None:
            return problem
        in_place = st.st_nlink > 1 or (st.st_uid != os.geteuid() and os.geteuid() != 0)
        if not in_place:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=TMP_SUFFIX)
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            if (st.st_uid, st.st_gid) != (os.geteuid(), os.getegid()):
                try:
                    os.chown(tmp, st.st_uid, st.st_gid)
                except OSError:  # a group we are not in: keep the owner by writing in place
                    os.unlink(tmp)
                    tmp, in_place = None, True
            if tmp is not None:
                os.chmod(tmp, stat.S_IMODE(st.st_mode))
        if _changed_on_disk(state, target):
            return (f"{state.display}: changed on disk while amplint was fixing it; not overwritten "
                    f"(run `amplint fix` again)")
        if in_place:
            with open(target, "r+b") as fh:
                fh.write(data)
                fh.truncate()
                fh.flush()
                os.fsync(fh.fileno())
        else:
            os.replace(tmp, target)
            tmp = None
    except OSError as e:
        return f"{state.display}: cannot write the fixed file: {e.strerror or e}"
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return None


def _changed_on_disk(state: FileState, target: Path) -> bool:
    # The last look, as close to the write as it can be.
    return os.stat(target).st_mtime_ns != state.mtime_ns or target.read_bytes() != state.original


def unified_diff(state: FileState) -> str:
    if state.notebook is not None:  # one diff per changed cell, as ruff shows them
        fixed = state.notebook.cell_sources(state.source.decode("utf-8"))
        return "".join(_diff(state.notebook.cell_source(index), text, f"{state.display}:cell {index + 1}")
                       for index, text in fixed.items())
    return _diff(state.original.decode(state.encoding, "replace"), state.source.decode(state.encoding, "replace"),
                 state.display)


def _diff(before: str, after: str, name: str) -> str:
    out = []
    a, b = before.splitlines(keepends=True), after.splitlines(keepends=True)
    for line in difflib.unified_diff(a, b, fromfile=name, tofile=name):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def findings_on_disk(state: "FileState", settings: Settings, selection: RuleSelection) -> List[Finding]:
    """The findings of a file as it is on disk (after its fixed text could not be written)."""
    project = Project(project_root(state.path), Discovery(settings.exclude, settings.extend_exclude), settings.precision,
                      limits=settings.limits)
    return lint_file(state.path, state.display, project, selection.for_file(state.path), settings).findings


def show_fixes(states: Sequence[FileState], out: TextIO) -> None:
    """What ``--show-fixes`` prints: the fixes applied, per file and rule (ruff's layout)."""
    from .rules import all_rules

    rules = all_rules()
    total = sum(len(s.applied) for s in states)
    if not total:
        out.write("No errors fixed.\n")
        return
    out.write(f"Fixed {total} error{'s' if total != 1 else ''}:\n")
    for s in sorted(states, key=lambda s: s.display):
        out.write(f"- {s.display}:\n")
        for code, n in sorted(Counter(s.applied).items()):
            name = rules[code].name if code in rules else code
            out.write(f"    {n} × {code} ({name})\n")
    out.write("\n")


# ---- programmatic use (tests, editor integrations) -------------------------------------------------
def fix_paths(paths: Sequence[Path], settings: Optional[Settings] = None, unsafe: bool = False,
              write: bool = True) -> FixRun:
    """Fix the files under ``paths`` (written unless ``write`` is False); errors are in
    ``FixRun.errors`` and in each state's ``errors``."""
    from .rules import rule_codes
    settings = settings or Settings()
    run = fix_in_memory(paths, settings, RuleSelection(settings, rule_codes()), unsafe)
    for s in run.states:
        run.errors.extend(s.errors)
        if write and s.changed:
            problem = write_atomically(s)
            if problem is not None:
                run.errors.append(problem)
    return run
