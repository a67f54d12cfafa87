"""One formatter per output format. Formatters only format findings."""
from __future__ import annotations

import io
import json
import os
import re
import tokenize
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO

from ..findings import Finding

FORMATS = ("full", "concise", "json", "sarif", "github")


def _abs(path: str) -> str:
    return os.path.abspath(path)


def concise(findings: Sequence[Finding], out: TextIO, **_) -> None:
    for f in findings:
        out.write(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}\n")


_NEWLINE = re.compile(r"\r\n|\r|\n")  # Python's line ends only (str.splitlines also splits on \f, \x1c, ...)


def _source_lines(path: str) -> List[str]:
    """The lines of a file as the linter numbered them: decoded with its coding cookie or BOM."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        text = data.decode(encoding, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    return _NEWLINE.split(text.lstrip("\ufeff"))


def full(findings: Sequence[Finding], out: TextIO, sources: Optional[Dict[str, List[str]]] = None, **_) -> None:
    sources = sources if sources is not None else {}
    for f in findings:
        out.write(f"{f.path}:{f.line}:{f.column}: {f.code} {f.message}\n")
        lines = sources.get(f.path)
        if lines is None:
            lines = sources[f.path] = _source_lines(f.path)
        if 0 < f.line <= len(lines):
            text = lines[f.line - 1]
            width = len(str(f.line))
            end = f.end_column if f.end_line == f.line else len(text) + 1
            # Tabs are shown as spaces so the carets line up under the code.
            before = text[: f.column - 1].expandtabs(4)
            marked = text[f.column - 1: max(end, f.column) - 1].expandtabs(4)
            shown = text.expandtabs(4)
            carets = "^" * max(1, len(marked))
            out.write(f"{' ' * width} |\n{f.line} | {shown}\n{' ' * width} | {' ' * len(before)}{carets}\n")
        if f.fix is not None:
            tag = "" if f.fix.applicability == "safe" else " (unsafe: needs --unsafe-fixes)"
            out.write(f"  = help: {f.fix.message}{tag}\n")
        out.write("\n")


def to_json(findings: Sequence[Finding], out: TextIO, **_) -> None:
    data = [
        {
            "code": f.code,
            "name": f.name,
            "message": f.message,
            "filename": _abs(f.path),
            "location": {"row": f.line, "column": f.column},
            "end_location": {"row": f.end_line, "column": f.end_column},
            "fix": None if f.fix is None else {"message": f.fix.message, "applicability": f.fix.applicability},
            "severity": f.severity,
            "confidence": f.confidence,
        }
        for f in findings
    ]
    json.dump(data, out, indent=2)
    out.write("\n")


def _gh_escape(s: str, prop: bool = False) -> str:
    s = s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        s = s.replace(":", "%3A").replace(",", "%2C")
    return s


def github(findings: Sequence[Finding], out: TextIO, **_) -> None:
    for f in findings:
        title = _gh_escape(f"amplint ({f.code})", prop=True)
        out.write(
            f"::error file={_gh_escape(f.path, True)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={title}::{_gh_escape(f'{f.code} {f.message}')}\n"
        )


def sarif(findings: Sequence[Finding], out: TextIO, rules=None, **_) -> None:
    from .. import __version__
    from ..rules import all_rules

    registry = rules if rules is not None else all_rules()
    rule_ids = sorted(registry)
    extra = sorted({f.code for f in findings} - set(rule_ids))
    sarif_rules = [
        {
            "id": code,
            "name": registry[code].name,
            "shortDescription": {"text": registry[code].summary},
            "fullDescription": {"text": registry[code].summary},
            "help": _sarif_help(code),
            "defaultConfiguration": {"level": "error"},
            "properties": {"fix": registry[code].fix_safety},
        }
        for code in rule_ids
    ] + [{"id": code, "name": "syntax-error" if code == "E999" else code,
          "shortDescription": {"text": "The file could not be parsed"}} for code in extra]
    index = {r["id"]: i for i, r in enumerate(sarif_rules)}
    cwd = Path.cwd().resolve()
    results = []
    for f in findings:
        p = Path(f.path).resolve()
        try:
            uri = p.relative_to(cwd).as_posix()
            loc = {"uri": uri, "uriBaseId": "%SRCROOT%"}
        except ValueError:
            loc = {"uri": p.as_uri()}
        results.append({
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error",
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": loc,
                "region": {"startLine": f.line, "startColumn": f.column,
                           "endLine": f.end_line, "endColumn": f.end_column},
            }}],
            "properties": {"confidence": f.confidence},
        })
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "amplint", "version": __version__, "semanticVersion": __version__,
                                "rules": sarif_rules}},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd.as_uri() + "/"}},
            "results": results,
        }],
    }
    json.dump(doc, out, indent=2)
    out.write("\n")


def _sarif_help(code: str) -> dict:
    """The rule's page (what code scanning shows as the rule's help), or a pointer to it."""
    from ..docs import read_page

    page = read_page(code)
    if page is None:
        return {"text": f"Run `amplint rule {code}` for the full explanation."}
    return {"text": page, "markdown": page}


WRITERS = {"full": full, "concise": concise, "json": to_json, "sarif": sarif, "github": github}


def statistics(findings: Sequence[Finding], out: TextIO) -> None:
    from ..rules import all_rules
    rules = all_rules()
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None)
    for code, n in counts.most_common():
        name = rules[code].name if code in rules else "syntax-error"
        mark = "[*]" if fixable[code] else "   "
        out.write(f"{n:>5}\t{code}\t{mark} {name}\n")
