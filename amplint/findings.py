"""What a check produces. Formatters only format these."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import List, Optional

import libcst as cst


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


@dataclass
class Violation:
    """What a rule reports: a node of the file's tree and a message. The engine turns it into a
    ``Finding`` with positions (computed only when something is reported)."""
    node: cst.CSTNode
    message: str
    confidence: Confidence = Confidence.CERTAIN
    fix: Optional[Fix] = None
    code: str = ""  # filled in by the engine from the rule


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
    severity: str = "error"

    def sort_key(self):
        return (self.path, self.line, self.column, self.code)


# The code of the finding the engine itself produces for a file it cannot parse.
SYNTAX_ERROR = "E999"
