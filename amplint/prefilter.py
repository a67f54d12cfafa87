"""The cheap test before the rules (issue 7): can this file hold a finding of the enabled rules at all?

Each rule states what a finding of it needs in the file that holds it (``Rule.needs``, beside its
logic): the words of the operation it reports or starts from (``backward``, ``clamp``, an optimizer's
class name, the ``@`` operator). A finding is always a node of the file being linted, and the
operation it is reported at, or the call it starts from, is written in that file: its name appears
in the file's text, in the call or in the import that binds it (``ctx.qualname`` resolves names
through this file's imports only). What the operation's operands are (a float16 tensor from
another file, a guard constant imported from a constants module, the regime) is asked only when the
operation is there. So a file whose text matches none of the enabled rules' needs cannot hold a
finding, whatever the other files say: it skips the libcst parse, the walk and the rules. It still
contributes its summary to the project's facts (that is computed apart, from every file).

``needs`` is None (the rule may report anywhere), a regular expression (searched in the source
bytes), or a tuple of groups that must all match, each a regular expression or a tuple of
alternatives; the alternative ``MATMUL`` stands for the ``@`` operator (``matmul_operator``).
Bytes are searched as they are: a file with an encoding declaration that is not ASCII-compatible
is never skipped.
"""
from __future__ import annotations

import os
import re
from typing import Callable, Dict, Iterable, Tuple

MATMUL = "@"  # the matrix multiplication operator (not a decorator): see matmul_operator

# Off with AMPLINT_NO_PREFILTER=1 (to check that findings are the same with and without it).
# AMPLINT_AUDIT_NEEDS=<file> (the test suite sets it): every file goes through the rules, and a
# finding in a file whose text does not match its rule's needs is written to <file> (``audit``).
AUDIT_LOG = os.environ.get("AMPLINT_AUDIT_NEEDS", "")
ENABLED = os.environ.get("AMPLINT_NO_PREFILTER", "") in ("", "0") and not AUDIT_LOG

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.M)
_ASCII_COMPATIBLE = re.compile(r"(utf[-_]?8|latin[-_]?1|iso[-_]?8859[-_]?\d+|(us[-_])?ascii|cp125\d|"
                               r"windows[-_]125\d)([-_].*)?$", re.I)


def plain_bytes(source: bytes) -> bool:
    """Is the text of ``source`` its bytes for ASCII (UTF-8 unless a coding cookie in the first two
    lines names another ASCII-compatible encoding)?"""
    if source.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    head = b"\n".join(source.split(b"\n", 2)[:2])
    m = _COOKIE.search(head)
    return m is None or bool(_ASCII_COMPATIBLE.match(m.group(1).decode("ascii", "replace")))


_DECORATOR = re.compile(rb"[ \t]*@[A-Za-z_][\w.]*[ \t]*(\(.*)?(#.*)?\r?$")
_FOLLOWS_DECORATOR = re.compile(rb"[ \t]*(@|def\b|class\b|async\b)")


def matmul_operator(source: bytes) -> bool:
    """Might ``source`` use the ``@`` operator? Every ``@`` counts (in strings and comments too)
    except a decorator's: a line ``@name`` / ``@name(...)`` with balanced brackets, not continuing
    the line before it (no ``\\`` there), followed by its definition or another decorator (blank
    lines and comments between). A continuation line of a bracketed expression starting with
    ``@ name`` is followed by more of the expression, or leaves a bracket open: it counts."""
    if b"@" not in source:
        return False
    lines = source.split(b"\n")
    for i, line in enumerate(lines):
        if b"@" not in line:
            continue
        if not _DECORATOR.match(line) or line.count(b"@") != 1 or not _balanced(line):
            return True
        if i > 0 and lines[i - 1].rstrip().endswith(b"\\"):
            return True
        j = i + 1
        while j < len(lines) and (not lines[j].strip() or lines[j].lstrip().startswith(b"#")):
            j += 1
        if j >= len(lines) or not _FOLLOWS_DECORATOR.match(lines[j]):
            return True
    return False


def _balanced(line: bytes) -> bool:
    code = line.split(b"#", 1)[0]
    return all(code.count(o) == code.count(c) for o, c in ((b"(", b")"), (b"[", b"]"), (b"{", b"}")))


_Test = Callable[[bytes], bool]

# Searching a file's text is ~4 % of a cold run when each rule's needs is one regular expression:
# Python's ``re`` scans fast only for a pattern that starts with a literal, and ``\b(?:log|...)\b``,
# ``(?i:noqa|...)`` or ``\w*Args\b`` do not. ``searcher`` answers the same question (is there a
# match anywhere?) piece by piece: a literal by a substring test, a case-insensitive group of
# literals in the lower-cased text, a leading ``\b`` checked by hand after a search of the rest.
_WORD = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")  # ``\w`` of a bytes pattern
_SPECIAL = frozenset(".^$*+?{}[]|()")
_QUANTIFIER = frozenset("?*+{")


def searcher(pattern: str) -> _Test:
    """A test of ``re.search(pattern.encode(), source) is not None``, exact for every pattern."""
    parts = _alternatives(pattern)
    if len(parts) > 1:  # a match of ``a|b`` somewhere is a match of ``a`` or of ``b`` somewhere
        tests = [searcher(p) for p in parts]
        return lambda source: any(test(source) for test in tests)
    literal = _literal(pattern)
    if literal is not None:
        return lambda source: literal in source
    inner = _whole_group(pattern, "(?i:")
    if inner is not None:
        literals = [_literal(p) for p in _alternatives(inner)]
        if all(literals):  # (ASCII case: ``bytes.lower`` and a bytes pattern's IGNORECASE alike)
            lowered = [lit.lower() for lit in literals]

            def folded(source: bytes) -> bool:
                text = source.lower()
                return any(lit in text for lit in lowered)
            return folded
    for lead in ("", "\\b"):
        # ``(?:A|B)S`` matches where ``(?:A)S`` or ``(?:B)S`` does: searched apart, the choices
        # starting alike together (``re`` finds their common start once), each has a literal start
        if pattern.startswith(lead + "(?:"):
            end = len(lead) + _group_end(pattern[len(lead):])
            choices = _alternatives(pattern[len(lead) + 3:end]) if end >= len(lead) else []
            alike: dict = {}
            for c in choices:
                alike.setdefault(c[:1], []).append(c)
            if len(alike) > 1 and pattern[end + 1:end + 2] not in _QUANTIFIER:
                return searcher("|".join(f"{lead}(?:{'|'.join(cs)}){pattern[end + 1:]}" for cs in alike.values()))
    if pattern.startswith("\\w*") and len(pattern) > 3 and pattern[3] not in _QUANTIFIER:
        return searcher(pattern[3:])  # ``\w*`` may match nothing: ``\w*R`` matches where ``R`` does
    if pattern.startswith("\\b") and _starts_with_word_char(pattern[2:]):
        rest = re.compile(pattern[2:].encode())

        def bounded(source: bytes) -> bool:
            # the rest's match begins with a word character: ``\b`` there means none before it
            at = 0
            while True:
                m = rest.search(source, at)
                if m is None:
                    return False
                start = m.start()
                if start == 0 or source[start - 1] not in _WORD:
                    return True
                at = start + 1
        return bounded
    rx = re.compile(pattern.encode())
    return lambda source: rx.search(source) is not None


def _class_end(pattern: str, i: int) -> int:
    """The index of the ``]`` closing the character class opened at ``i`` (``len(pattern)`` if none):
    a ``]`` right after ``[`` or ``[^`` is a member, not its end."""
    n = len(pattern)
    i += 1
    if i < n and pattern[i] == "^":
        i += 1
    if i < n and pattern[i] == "]":
        i += 1
    while i < n and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i


def _structure(pattern: str):
    """(index, character, depth after it) of each ``(``, ``)`` and ``|`` of ``pattern`` that is
    not escaped and not in a character class."""
    depth, i, n = 0, 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "[":
            i = _class_end(pattern, i)
        elif ch in "()|":
            depth += 1 if ch == "(" else -1 if ch == ")" else 0
            yield i, ch, depth
        i += 1


def _alternatives(pattern: str) -> list:
    """``pattern`` split at its top-level ``|`` (outside groups and character classes)."""
    parts, start = [], 0
    for i, ch, depth in _structure(pattern):
        if ch == "|" and depth == 0:
            parts.append(pattern[start:i])
            start = i + 1
    parts.append(pattern[start:])
    return parts


def _literal(pattern: str):
    """The bytes ``pattern`` matches when it matches only them (letters, digits, escaped
    punctuation), else None."""
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            nxt = pattern[i + 1:i + 2]
            if not nxt or not nxt.isascii() or nxt.isalnum():
                return None  # ``\b``, ``\w``, ``\1``, ...
            out.append(nxt)
            i += 2
            continue
        if ch in _SPECIAL:
            return None
        out.append(ch)
        i += 1
    return "".join(out).encode() if out else None


def _whole_group(pattern: str, opening: str):
    """The inside of ``pattern`` when all of it is one group opened by ``opening`` (``(?:``, ``(?i:``)."""
    if not pattern.startswith(opening):
        return None
    end = _group_end(pattern)
    return pattern[len(opening):-1] if end == len(pattern) - 1 else None


def _group_end(pattern: str) -> int:
    """The index of the ``)`` closing the group that opens ``pattern`` (-1 if none)."""
    return next((i for i, ch, depth in _structure(pattern) if ch == ")" and depth == 0), -1)


def _starts_with_word_char(pattern: str) -> bool:
    """Does every match of ``pattern`` (one alternative) begin with an ASCII word character? Yes
    for a letter, digit or ``_`` that no quantifier makes optional, and for a group ``(?:...)``
    (not optional) each of whose alternatives does; no otherwise (the answer may be a cautious no)."""
    if not pattern:
        return False
    if pattern[0] in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_":
        return len(pattern) == 1 or pattern[1] not in "?*{"
    if pattern.startswith("(?:"):
        end = _group_end(pattern)
        if end < 0 or pattern[end + 1:end + 2] in ("?", "*", "{"):
            return False
        return all(_starts_with_word_char(p) for p in _alternatives(pattern[3:end]))
    return False
_COMPILED: Dict[object, _Test] = {}


def _test(needs) -> _Test:
    """The test for one rule's ``needs`` (compiled once per distinct value)."""
    key = needs
    found = _COMPILED.get(key)
    if found is not None:
        return found
    groups = (needs,) if isinstance(needs, str) else tuple(needs)
    tests = []
    for group in groups:
        alternatives = (group,) if isinstance(group, str) else tuple(group)
        searches = [searcher(a) for a in alternatives if a != MATMUL]
        tests.append((searches, MATMUL in alternatives))

    def test(source: bytes) -> bool:
        for searches, matmul in tests:
            if not (any(search(source) for search in searches) or (matmul and matmul_operator(source))):
                return False
        return True

    _COMPILED[key] = test
    return test


# The text last tested and the answer for each ``needs`` value: a file's text is tested by the
# whole-file screen, by the rules' selection and again by the library policy's (one search of a
# file per rule, not three).
_LAST: list = [None, {}]


def may_fire(rule, source: bytes) -> bool:
    """Can ``rule`` report a finding in a file of this text? (True when it states no needs.)"""
    needs = getattr(rule, "needs", None)
    if needs is None:
        return True
    if _LAST[0] is not source:
        _LAST[0], _LAST[1] = source, {}
    answers = _LAST[1]
    found = answers.get(needs)
    if found is None:
        found = answers[needs] = _test(needs)(source)
    return found


def may_hold_findings(source: bytes, rules: Iterable) -> bool:
    """Can a file of this text hold a finding of any of ``rules``?"""
    if not plain_bytes(source):
        return True
    return any(may_fire(rule, source) for rule in rules)


def rules_that_may_fire(source, rules: Iterable) -> list:
    """The ``(code, rule)`` pairs of ``rules`` that can report a finding in a file of this text: all
    of them when the prefilter is off or the text is not plain bytes. A rule whose needs the text
    does not match is not run on it (its findings would need them: the premise the whole-file test
    rests on, and that the audit checks rule by rule)."""
    rules = list(rules)
    if not ENABLED or not isinstance(source, bytes) or not plain_bytes(source):
        return rules
    return [(code, rule) for code, rule in rules if may_fire(rule, source)]


def audit(path: str, source: bytes, findings: Iterable[Tuple[str, object]]) -> None:
    """Under AMPLINT_AUDIT_NEEDS: note each (code, rule) found in a file its needs say cannot hold
    it (a rule whose needs would hide a finding)."""
    wrong = [code for code, rule in findings if plain_bytes(source) and not may_fire(rule, source)]
    if wrong and AUDIT_LOG:
        with open(AUDIT_LOG, "a", encoding="utf-8") as log:
            for code in sorted(set(wrong)):
                log.write(f"{path}: a {code} finding, but the file does not match {code}'s needs\n")


def words(names: Iterable[str]) -> str:
    """A ``needs`` pattern for any of ``names`` (the last part of dotted names) written as a whole
    identifier (a name in code always is one, in a call, an attribute or an import)."""
    return r"\b(?:" + "|".join(sorted({re.escape(n.rsplit(".", 1)[-1]) for n in names})) + r")\b"


__all__: Tuple[str, ...] = ("MATMUL", "ENABLED", "may_fire", "may_hold_findings", "matmul_operator", "words")
