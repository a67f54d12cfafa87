"""One formatter per output format. Formatters only format findings."""
from __future__ import annotations

import io
import json
import os
import re
import tokenize
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO, Tuple
from urllib.parse import quote

from ..findings import Finding
from .assumed import summary_lines

FORMATS = ("full", "concise", "json", "sarif", "github", "gitlab")


def _abs(path: str) -> str:
    return os.path.abspath(path)


def concise(findings: Sequence[Finding], out: TextIO, **_) -> None:
    for f in findings:
        out.write(f"{f.location}: {f.code} {f.message}\n")


_NEWLINE = re.compile(r"\r\n|\r|\n")  # Python's line ends only (str.splitlines also splits on \f, \x1c, ...)


def _source_lines(path: str, cell: Optional[int] = None) -> List[str]:
    """The lines of a file as the linter numbered them: decoded with its coding cookie or BOM (of
    a notebook's cell when ``cell`` is given)."""
    try:
        data = Path(path).read_bytes()
    except OSError:
        return []
    if cell is not None:
        from ..notebook import NotebookError, from_bytes
        try:
            return from_bytes(data).cell_lines(cell)
        except NotebookError:
            return []
    return split_lines(data)


def split_lines(data: bytes) -> List[str]:
    """A file's lines as Python numbers them: decoded with its coding cookie or BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        encoding = "utf-8"
    try:
        text = data.decode(encoding, errors="replace")
    except LookupError:
        text = data.decode("utf-8", errors="replace")
    return _NEWLINE.split(text.lstrip("\ufeff"))


class _Paint:
    """ANSI colour for the ``full`` format on a terminal (``--color``); a no-op when off."""

    CODES = {"bold": "1", "red": "31", "yellow": "33", "cyan": "36", "blue": "34", "green": "32", "dim": "2"}

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, *styles: str) -> str:
        if not self.on or not text:
            return text
        return "".join(f"\x1b[{self.CODES[s]}m" for s in styles) + text + "\x1b[0m"


# A longer source line is quoted as a window of this many characters around the marked part (a
# minified or generated line of 400,000 characters is not written out whole).
SNIPPET_WIDTH = 120


def _window(shown: str, pad: int, mark: int) -> Tuple[str, int, int]:
    """(the quoted text, the carets' offset, their count) for a line of ``shown`` whose marked part
    starts at ``pad`` and is ``mark`` long: the whole line when it fits, else a window from a little
    before the mark, with an ellipsis where text is left out."""
    if len(shown) <= SNIPPET_WIDTH:
        return shown, pad, mark
    start = max(0, min(pad - 20, len(shown) - SNIPPET_WIDTH))
    prefix = "…" if start > 0 else ""
    suffix = "…" if start + SNIPPET_WIDTH < len(shown) else ""
    pad = pad - start + len(prefix)
    return prefix + shown[start:start + SNIPPET_WIDTH] + suffix, pad, max(1, min(mark, SNIPPET_WIDTH + len(prefix) - pad))


def full(findings: Sequence[Finding], out: TextIO, sources: Optional[Dict[str, List[str]]] = None,
         color: bool = False, **_) -> None:
    sources = sources if sources is not None else {}
    paint = _Paint(color)
    for f in findings:
        tone = "red" if f.severity == "error" else "yellow"
        out.write(f"{paint(f'{f.location}:', 'bold')} {paint(f.code, 'bold', tone)} {f.message}\n")
        key = f.path if f.cell is None else f"{f.path}:cell {f.cell}"
        lines = sources.get(key)
        if lines is None:
            lines = sources[key] = _source_lines(f.path, f.cell)
        if 0 < f.line <= len(lines):
            text = lines[f.line - 1]
            width = len(str(f.line))
            end = f.end_column if f.end_line == f.line else len(text) + 1
            # Tabs are shown as spaces so the carets line up under the code.
            before = text[: f.column - 1].expandtabs(4)
            marked = text[f.column - 1: max(end, f.column) - 1].expandtabs(4)
            shown, pad, mark = _window(text.expandtabs(4), len(before), max(1, len(marked)))
            carets = paint("^" * mark, tone)
            gutter = paint(f"{' ' * width} |", "blue")
            out.write(f"{gutter}\n{paint(f'{f.line} |', 'blue')} {shown}\n{gutter} {' ' * pad}{carets}\n")
        for label, locations in (("evidence", f.evidence), ("related", f.related)):
            for loc in locations:
                out.write(f"  {paint('= ' + label + ':', 'cyan')} {loc}\n")
        if f.help and (f.fix is None or f.help != f.fix.message):
            out.write(f"  {paint('= help:', 'cyan')} {f.help}\n")
        if f.fix is not None:
            tag = " (safe)" if f.fix.applicability == "safe" else " (unsafe: needs --unsafe-fixes)"
            out.write(f"  {paint('= fix:', 'green')} {f.fix.message}{tag}\n")
        out.write("\n")


def _json_locations(locations) -> List[dict]:
    """``[{filename, row, what}]``; a place that is not a line of a file (the configuration's
    ``precision``) has ``row: null`` and its ``filename`` as given."""
    return [{"filename": _abs(loc.path) if loc.line > 0 else loc.path, "row": loc.line if loc.line > 0 else None,
             "what": loc.what, **({"cell": loc.cell} if loc.cell is not None else {})} for loc in locations]


def to_json(findings: Sequence[Finding], out: TextIO, **_) -> None:
    data = [
        {
            "code": f.code,
            "name": f.name,
            "message": f.message,
            "help": f.help or None,
            "filename": _abs(f.path),
            "location": {"row": f.line, "column": f.column},
            "end_location": {"row": f.end_line, "column": f.end_column},
            "fix": None if f.fix is None else {"message": f.fix.message, "applicability": f.fix.applicability},
            "severity": f.severity,
            "confidence": f.confidence,
            "evidence": _json_locations(f.evidence),
            "related": _json_locations(f.related),
            "cell": f.cell,
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


def github(findings: Sequence[Finding], out: TextIO, assumed=(), **_) -> None:
    for line in summary_lines(assumed):  # shown in the job's log and summary
        out.write(f"::notice title=amplint precision::{_gh_escape(line)}\n")
    for f in findings:
        title = _gh_escape(f"amplint ({f.code})", prop=True)
        # In a notebook the line is within a cell: the message says which (ruff's way).
        where = f"cell {f.cell}:{f.line}:{f.column}: " if f.cell is not None else ""
        out.write(
            f"::{f.severity} file={_gh_escape(f.path, True)},line={f.line},col={f.column},"
            f"endLine={f.end_line},endColumn={f.end_column},title={title}::{_gh_escape(f'{where}{f.code} {_with_help(f)}')}\n"
        )


def sarif(findings: Sequence[Finding], out: TextIO, rules=None, assumed=(), **_) -> None:
    from .. import HOMEPAGE, __version__, rule_page_url
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
            "helpUri": rule_page_url(code),
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
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": f.severity,
            "message": {"text": _with_help(f)},
            "locations": [{"physicalLocation": {
                "artifactLocation": _sarif_artifact(f.path, cwd),
                "region": {"startLine": f.line, "startColumn": f.column,
                           "endLine": f.end_line, "endColumn": f.end_column},
            }}],
            "properties": {"confidence": f.confidence},
        }
        related = [loc for loc in (*f.evidence, *f.related) if loc.line > 0]
        if related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": loc.what}, "physicalLocation": {
                    "artifactLocation": _sarif_artifact(loc.path, cwd), "region": {"startLine": loc.line}}}
                for i, loc in enumerate(related)]
        results.append(result)
    doc = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "amplint", "version": __version__, "semanticVersion": __version__,
                                "informationUri": HOMEPAGE, "rules": sarif_rules}},
            "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": [
                {"level": "note", "message": {"text": line}} for line in summary_lines(assumed)]}],
            "properties": {"assumedPrecision": [a.as_dict() for a in assumed]},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": cwd.as_uri() + "/"}},
            "results": results,
        }],
    }
    json.dump(doc, out, indent=2)
    out.write("\n")


def _with_help(f: Finding) -> str:
    """The message and its help as one text, for formats with one message field."""
    return f"{f.message}; {f.help}" if f.help else f.message


def _sarif_artifact(path: str, cwd: Path) -> dict:
    """A path relative to the working directory (the checkout, in CI) as a percent-encoded URI
    reference against %SRCROOT%; any other path as a file: URI."""
    p = Path(path).resolve()
    try:
        return {"uri": quote(p.relative_to(cwd).as_posix(), safe="/"), "uriBaseId": "%SRCROOT%"}
    except ValueError:
        return {"uri": p.as_uri()}


def _sarif_help(code: str) -> dict:
    """The rule's page (what code scanning shows as the rule's help), or a pointer to it."""
    from ..docs import read_page

    page = read_page(code)
    if page is None:
        return {"text": f"Run `amplint rule {code}` for the full explanation."}
    return {"text": page, "markdown": page}


def gitlab(findings: Sequence[Finding], out: TextIO, **_) -> None:
    """GitLab Code Quality: a list of issues with a stable fingerprint (rule, path, message and
    the how-many-th such finding in the file: moving code does not make an issue new)."""
    import hashlib

    seen: Counter = Counter()
    cwd = Path.cwd().resolve()
    issues = []
    for f in findings:
        p = Path(f.path).resolve()
        try:
            path = p.relative_to(cwd).as_posix()
        except ValueError:
            path = p.as_posix()
        key = (f.code, path, f.message)
        seen[key] += 1
        fingerprint = hashlib.sha256("\0".join((*key, str(seen[key]))).encode("utf-8")).hexdigest()[:32]
        issues.append({
            "description": f"{f.code} {_with_help(f)}",
            "check_name": f.code,
            "fingerprint": fingerprint,
            "severity": "major" if f.severity == "error" else "minor",
            "location": {"path": path, "positions": {"begin": {"line": f.line, "column": f.column},
                                                      "end": {"line": f.end_line, "column": f.end_column}}},
        })
    json.dump(issues, out, indent=2)
    out.write("\n")


WRITERS = {"full": full, "concise": concise, "json": to_json, "sarif": sarif, "github": github, "gitlab": gitlab}


def statistics(findings: Sequence[Finding], out: TextIO) -> None:
    from ..rules import all_rules
    rules = all_rules()
    counts = Counter(f.code for f in findings)
    fixable = Counter(f.code for f in findings if f.fix is not None)
    for code, n in counts.most_common():
        name = rules[code].name if code in rules else "syntax-error"
        mark = "[*]" if fixable[code] else "   "
        out.write(f"{n:>5}\t{code}\t{mark} {name}\n")
