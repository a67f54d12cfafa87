"""What a check produces. Formatters only format these."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import List, Optional, Tuple

from ._lazy import cst


class Confidence(str, Enum):
    CERTAIN = "certain"
    LIKELY = "likely"

    @classmethod
    def of(cls, fact) -> "Confidence":
        """The confidence of a model fact (a DTypeFact, AutocastState or Fp16Status)."""
        return cls.CERTAIN if fact.confidence == "certain" else cls.LIKELY


class Applicability(str, Enum):
    """ruff's model: a safe fix keeps the program's meaning except for removing the hazard; an
    unsafe fix changes behaviour beyond that or needs a human's judgement."""
    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass
class Fix:
    """A libcst edit attached to a violation.

    ``replacements`` maps nodes of the parsed module (by identity) to their new nodes, or to a
    function of the node as updated by the fix's other edits inside it (so that nested edits of one
    fix compose); ``insert_before`` / ``insert_after`` map statements (a statement line, a compound
    statement, or a small statement sharing its line: see ``amplint.edits.statement_anchor``) to
    statements to add around them; ``imports`` are ``import x`` / ``from x import y`` lines the
    fixed code needs (added by amplint.fixes unless already there).
    """
    description: str
    applicability: Applicability = Applicability.SAFE
    replacements: List[tuple] = field(default_factory=list)  # (old_node, new_node)
    insert_before: List[tuple] = field(default_factory=list)  # (statement, [new statements])
    insert_after: List[tuple] = field(default_factory=list)
    imports: List[str] = field(default_factory=list)  # e.g. "import math", "from torch import nn"

    def summary(self) -> "FixSummary":
        return FixSummary(self.description, self.applicability.value)


@dataclass(frozen=True)
class FixSummary:
    """The picklable part of a fix, for reports."""
    message: str
    applicability: str


@dataclass(frozen=True)
class Location:
    """A place a finding points to besides its own span, with what is there: evidence for it (why
    the code is taken to run in float16) or a related site (the backward a clip comes after).
    ``line`` is 0 when the place is not a line of a file (a ``--precision`` option)."""
    path: str
    line: int
    what: str
    cell: Optional[int] = None  # in a notebook: the cell (from 1) that ``line`` is in

    @classmethod
    def of(cls, evidence, why: str = "") -> "Location":
        """From a context ``Evidence`` (or anything with ``what`` / ``path`` / ``line``), with an
        optional reason put before what is there: ``why: what``."""
        what = f"{why}: {evidence.what}" if why else evidence.what
        return cls(evidence.path, int(evidence.line or 0), what)

    def __str__(self) -> str:
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}: {self.what}" if self.line > 0 else f"{self.what} ({self.path})"


@dataclass
class Violation:
    """What a rule reports: a node of the file's tree and a message. The engine turns it into a
    ``Finding`` with positions (computed only when something is reported).

    ``message`` is one line: what is wrong and why, in numbers. ``help`` says what to write instead.
    ``evidence`` says why the code is taken to run in float16 (``Location`` items, or context
    ``Evidence`` which the engine turns into them); ``related`` are other sites the finding involves.
    The rule's page has the rest."""
    node: cst.CSTNode
    message: str
    confidence: Confidence = Confidence.CERTAIN
    fix: Optional[Fix] = None
    code: str = ""  # filled in by the engine from the rule
    help: str = ""
    evidence: List = field(default_factory=list)
    related: List = field(default_factory=list)
    # Lines of this file where a value reported at its definition is used (``EPS = 1e-8`` reported
    # where it is written): a suppression on every one of them suppresses the finding too, so a
    # ``# noqa`` written where the value used to be reported keeps working.
    use_lines: List[int] = field(default_factory=list)


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    path: str  # as given / discovered (relative where the user passed a relative path)
    line: int  # 1-based
    column: int  # 1-based
    end_line: int
    end_column: int
    confidence: str = "certain"
    fix: Optional[FixSummary] = None
    severity: str = "error"  # "error" for certain findings, "warning" for likely ones (severity_of)
    help: str = ""
    evidence: Tuple[Location, ...] = ()
    related: Tuple[Location, ...] = ()
    cell: Optional[int] = None  # a notebook's cell (from 1); line and columns are then within it

    def explained(self) -> str:
        """The message, its help and its evidence as one text (for the API and logs)."""
        text = f"{self.message}; {self.help}" if self.help else self.message
        cites = [str(loc) for loc in (*self.evidence, *self.related)]
        return f"{text} [{'; '.join(cites)}]" if cites else text

    def sort_key(self):
        return (self.path, self.cell or 0, self.line, self.column, self.code)

    @property
    def location(self) -> str:
        """``path:line:column``, or ruff's ``nb.ipynb:cell 2:3:5`` in a notebook."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.line}:{self.column}"


def severity_of(confidence: str) -> str:
    """A finding amplint is certain of is an error; a likely one is a warning (SARIF ``level``,
    GitHub ``::warning``). Exit codes do not depend on it."""
    return "error" if confidence == Confidence.CERTAIN.value else "warning"


# The code of the finding the engine itself produces for a file it cannot parse.
SYNTAX_ERROR = "E999"
TOO_COMPLEX = "E998"  # a file over a limit of amplint.parsing: not parsed, not linted


@dataclass
class FileResult:
    """What linting one file gave (``amplint.engine``), or its cached result."""
    path: str
    findings: List[Finding] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)  # internal errors (rule crashes, unreadable files)
