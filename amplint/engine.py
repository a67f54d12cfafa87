"""Lint one file: read, parse once, build the context, run the rules, attach positions, apply
suppressions. Per-file work is pure (a function of the file's bytes, the project facts and the
selected codes), so it can run in worker processes and be cached."""
from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Optional, Set, Tuple

import libcst as cst

from .context.file_context import FileContext
from .findings import INTERNAL_ERROR, SYNTAX_ERROR, Finding, Violation
from .noqa import is_suppressed, suppressions
from .rules import all_rules


@dataclass
class FileResult:
    path: str
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # internal errors (rule crashes, unreadable files)


@dataclass
class Analysis:
    """A parsed file and the violations of the selected rules (what ``fix`` works on)."""
    ctx: FileContext
    violations: List[Violation]
    errors: List[str]


def parse(source: bytes) -> cst.Module:
    return cst.parse_module(source)


def syntax_error_finding(path: str, exc: Exception) -> Finding:
    if isinstance(exc, cst.ParserSyntaxError):
        line, col = exc.raw_line, exc.raw_column + 1
        message = exc.message
    elif isinstance(exc, SyntaxError):
        line, col = exc.lineno or 1, (exc.offset or 1)
        message = exc.msg
    else:  # UnicodeDecodeError and the like
        line, col = 1, 1
        message = str(exc)
    return Finding(SYNTAX_ERROR, "syntax-error", f"SyntaxError: {message}", path, line, col, line, col)


def analyse(ctx: FileContext, codes: Set[str]) -> Tuple[List[Violation], List[str]]:
    violations: List[Violation] = []
    errors: List[str] = []
    for code, rule in all_rules().items():
        if code not in codes:
            continue
        try:
            for v in rule.check(ctx):
                v.code = code
                violations.append(v)
        except Exception:  # a bug in one rule must not stop the others or the other files
            tb = traceback.format_exc(limit=-3)
            errors.append(f"{ctx.path}: internal error in rule {code}: {tb.strip().splitlines()[-1]}\n{tb}")
    return violations, errors


def build_context(path: Path, display: str, source: bytes, project, settings=None) -> FileContext:
    module = parse(source)
    module_name = project.module_name(path) if project is not None else None
    return FileContext(display, module, source, project, module_name, settings)


def reportable(ctx: FileContext, violations: Iterable[Violation]) -> List[Tuple[Violation, Tuple[int, int, int, int]]]:
    """The violations that are reported (not suppressed by a comment, not duplicates), each with
    its position. ``fix`` applies the fixes of exactly these."""
    table = suppressions(ctx.source)
    out = []
    seen = set()
    for v in violations:
        pos = ctx.position(v.node)
        line = pos[0]
        if table:
            stmt_line = ctx.line_of(ctx.statement_of(v.node))
            if is_suppressed(v.code, (line, stmt_line), table):
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
                           v.confidence.value, v.fix.summary() if v.fix else None))
    out.sort(key=Finding.sort_key)
    return out


def lint_file(path: Path, display: str, project, codes: Set[str], settings=None) -> FileResult:
    result = FileResult(display)
    try:
        source = path.read_bytes()
    except OSError as e:
        result.errors.append(f"{display}: cannot read file: {e.strerror or e}")
        return result
    try:
        ctx = build_context(path, display, source, project, settings)
    except (cst.ParserSyntaxError, SyntaxError, UnicodeDecodeError, ValueError) as e:
        # A file that does not parse is always reported, whatever is selected.
        result.findings.append(syntax_error_finding(display, e))
        return result
    except RecursionError:
        result.findings.append(Finding(SYNTAX_ERROR, "syntax-error", "file is nested too deeply to parse",
                                       display, 1, 1, 1, 1))
        return result
    violations, errors = analyse(ctx, codes)
    result.errors.extend(errors)
    try:
        result.findings = to_findings(ctx, violations)
    except Exception:
        result.errors.append(f"{display}: internal error while reporting: {traceback.format_exc()}")
    return result
