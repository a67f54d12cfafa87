"""``amplint check --add-noqa``: a ``# noqa: CODE`` on the line of every finding, so that amplint can
be adopted on existing code and only new findings fail (ruff's ``--add-noqa``).

A line that already has ``# noqa: CODES`` gets the new codes merged in; other comments are kept (the
directive goes after them); a bare ``# noqa`` already suppresses everything. Only lines that can end
in a comment are edited (not the inside of a multi-line string, not a backslash continuation).
Files are rewritten atomically, keeping their bytes otherwise."""
from __future__ import annotations

import io
import os
import re
import tokenize
from collections import defaultdict
from pathlib import Path
from typing import Dict, List, Sequence, Set, TextIO, Tuple

from .findings import SYNTAX_ERROR
from .outcome import EXIT_CLEAN, EXIT_ERROR

_DIRECTIVE = re.compile(r"#\s*noqa(?P<colon>:\s*(?P<codes>[A-Za-z]+[0-9]+(?:\s*,?\s*[A-Za-z]+[0-9]+)*))?", re.IGNORECASE)


def _comment_lines(source: bytes) -> Tuple[Set[int], Dict[int, tokenize.TokenInfo]]:
    """Lines that may end in a comment, and the comment already on a line."""
    ends: Set[int] = set()
    comments: Dict[int, tokenize.TokenInfo] = {}
    for tok in tokenize.tokenize(io.BytesIO(source).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL):
            ends.add(tok.start[0])
        elif tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok
            ends.add(tok.start[0])
    return ends, comments


def add_noqa(source: bytes, codes_by_line: Dict[int, Set[str]]) -> Tuple[bytes, int, List[int]]:
    """``source`` with the directives added: (new source, directives added or extended, lines
    that cannot take a comment)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        ends, comments = _comment_lines(source)
    except (SyntaxError, tokenize.TokenError, UnicodeDecodeError):
        return source, 0, sorted(codes_by_line)
    lines = source.splitlines(keepends=True)
    added, skipped = 0, []
    for line_no, codes in sorted(codes_by_line.items()):
        if line_no not in ends or not 0 < line_no <= len(lines):
            skipped.append(line_no)
            continue
        raw = lines[line_no - 1]
        body = raw.rstrip(b"\r\n")
        ending = raw[len(body):]
        text = body.decode(encoding)
        comment = comments.get(line_no)
        m = _DIRECTIVE.search(comment.string) if comment is not None else None
        if m is not None and not m.group("codes"):
            continue  # a bare # noqa suppresses every rule already
        if m is not None:
            present = [c.upper() for c in re.split(r"[,\s]+", m.group("codes")) if c]
            merged = present + sorted(c for c in codes if c not in present)
            if merged == present:
                continue
            start = comment.start[1] + m.start()
            end = comment.start[1] + m.end()
            # tokenize's columns count characters of the decoded line
            text = f"{text[:start]}# noqa: {', '.join(merged)}{text[end:]}"
        else:
            text = f"{text.rstrip()}  # noqa: {', '.join(sorted(codes))}"
        lines[line_no - 1] = text.encode(encoding) + ending
        added += 1
    return b"".join(lines), added, skipped


def run_add_noqa(args, settings, selection, paths: Sequence[Path], out: TextIO, err: TextIO) -> int:
    from .fixes import FileState, write_atomically
    from .runner import Runner

    findings, errors = Runner(settings, selection).check(paths)
    by_file: Dict[str, Dict[int, Set[str]]] = defaultdict(lambda: defaultdict(set))
    for f in findings:
        if f.code != SYNTAX_ERROR and getattr(f, "cell", None) is None and f.path.endswith(".py"):
            by_file[f.path][f.line].add(f.code)
    total = 0
    for display, codes_by_line in sorted(by_file.items()):
        path = Path(display)
        try:
            mtime_ns = os.stat(path).st_mtime_ns
            source = path.read_bytes()
        except OSError as e:
            errors.append(f"{display}: cannot read file: {e.strerror or e}")
            continue
        new, added, skipped = add_noqa(source, codes_by_line)
        for line in skipped:
            err.write(f"warning: {display}:{line}: a comment cannot go at the end of this line; no noqa added\n")
        if added:
            # fix's writer: owner, mode and hard links kept, read-only files and links out of the
            # project root refused, a file changed meanwhile not overwritten
            problem = write_atomically(FileState(path, display, original=source, mtime_ns=mtime_ns, source=new))
            if problem is not None:
                errors.append(problem)
                continue
            total += added
    if not args.quiet:
        out.write(f"Added {total} noqa directive{'s' if total != 1 else ''}.\n")
    for e in errors:
        err.write(f"amplint: error: {e}\n")
    return EXIT_ERROR if errors else EXIT_CLEAN
