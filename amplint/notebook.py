"""Jupyter notebooks: their code cells as one Python source, and back.

The code cells are joined into one module (cells run in order in one namespace, so a hazard can
span cells: ``model.half()`` in one, the optimizer in the next), with a map from each line of the
module back to its cell. IPython syntax that is not Python (line magics ``%time``, shell escapes
``!pip install``, ``x = !ls``, help ``obj?``, and the first line of a Python cell magic such as
``%%capture``) is masked, one placeholder statement per line, so it does not stop the parse; cells
whose cell magic makes them another language (``%%bash``, ``%%writefile``) are left out, as ruff
does. Positions are reported relative to their cell (``nb.ipynb:cell 2:3:5``; cells counted from 1
among all cells, as Jupyter shows them).

``fix`` edits the joined module; ``Notebook.render`` splits the fixed module back into the cells it
came from (lines inserted by a fix go to the cell of the line they were inserted before), puts the
masked lines back, and writes the notebook JSON with the original's indentation, key order,
escaping and trailing newline, leaving outputs, metadata and the other cells as they were.
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

SUFFIX = ".ipynb"

# Cell magics whose body is Python (ruff's list): the first line is masked, the rest is linted.
PYTHON_CELL_MAGICS = frozenset({"capture", "debug", "prun", "pypy", "python", "python3", "time", "timeit"})

_PLACEHOLDER = "pass  # <amplint-masked-{}>"
_PLACEHOLDER_RE = re.compile(r"^([ \t]*)pass  # <amplint-masked-(\d+)>$")
_ASSIGN_ESCAPE = re.compile(r"^[A-Za-z_][\w.]*(\s*,\s*[A-Za-z_][\w.]*)*\s*=\s*[!%]")


class NotebookError(ValueError):
    """The file is not a notebook amplint can read (not JSON, not nbformat 4's shape)."""


def is_notebook(path) -> bool:
    return str(path).endswith(SUFFIX)


@dataclass
class CodeCell:
    index: int  # position among all cells, from 0
    lines: List[str]  # the Python lines (masked), each ending with "\n"
    first: int  # the cell's first line in the joined module, from 1
    ends_with_newline: bool
    as_list: bool  # the cell's "source" is a list of lines (nbformat's way), not one string
    indent: str = ""  # the indentation of the cell's first line, taken off every line (as IPython does)


class Notebook:
    def __init__(self, raw: str) -> None:
        self.raw = raw
        try:
            self.data = json.loads(raw)
        except json.JSONDecodeError as e:
            raise NotebookError(f"not valid JSON: {e}") from None
        cells = self.data.get("cells") if isinstance(self.data, dict) else None
        if not isinstance(cells, list):
            raise NotebookError("no `cells` list (only nbformat 4 notebooks are read)")
        self.cells: List[CodeCell] = []
        self.masked: Dict[int, str] = {}  # placeholder number -> the original line (without "\n")
        line = 1
        for i, cell in enumerate(cells):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            if isinstance(source, list):
                if not all(isinstance(s, str) for s in source):
                    raise NotebookError(f"cell {i + 1}: `source` is not text")
                text, as_list = "".join(source), True
            elif isinstance(source, str):
                text, as_list = source, False
            else:
                raise NotebookError(f"cell {i + 1}: `source` is not text")
            first = text.split("\n", 1)[0]
            indent = first[: len(first) - len(first.lstrip(" \t"))] if first.strip() else ""
            lines = self._python_lines(text, indent)
            if lines is None:
                continue  # another language (%%bash, %%writefile, ...)
            self.cells.append(CodeCell(i, lines, line, text.endswith("\n") or not text, as_list, indent))
            line += len(lines)

    # ---- reading ---------------------------------------------------------------------------------
    def _mask(self, line: str, indent: Optional[str] = None, original: Optional[str] = None) -> str:
        """A placeholder statement for ``line``, indented as ``line`` or as ``indent`` (the
        continuation lines of a shell command take its first line's indentation: IPython joins
        them into one command, and their own indentation would be an IndentationError)."""
        n = len(self.masked)
        self.masked[n] = line if original is None else original
        if indent is None:
            indent = line[: len(line) - len(line.lstrip(" \t"))]
        return indent + _PLACEHOLDER.format(n) + "\n"

    def _python_lines(self, text: str, indent: str = "") -> Optional[List[str]]:
        """The cell as Python lines, IPython escapes masked. ``indent``: the first line's
        indentation, which IPython takes off every line that starts with it before running a cell
        (`` !tts --text ... \\`` then deeper continuation lines)."""
        original = text.splitlines()
        raw = [line[len(indent):] if line.startswith(indent) else line for line in original]
        if raw and raw[0].startswith("%%"):
            name = raw[0][2:].split(None, 1)[0] if raw[0][2:].strip() else ""
            if name not in PYTHON_CELL_MAGICS:
                return None
        out: List[str] = []
        starts = _logical_line_starts(raw)
        continued = False  # the line before was an escape ending with a backslash
        escape_indent = ""  # the indentation of the escape being continued
        for k, line in enumerate(raw):
            if continued or (starts[k] and _is_ipython_escape(line)):
                if not continued:
                    escape_indent = line[: len(line) - len(line.lstrip(" \t"))]
                out.append(self._mask(line, escape_indent, original[k]))
                continued = line.rstrip().endswith("\\")
            else:
                out.append(line + "\n")
                continued = False
        return out

    @property
    def python(self) -> str:
        """The code cells as one module."""
        return "".join(line for cell in self.cells for line in cell.lines)

    def cell_of(self, line: int) -> Tuple[int, int]:
        """(cell number from 1 among all cells, line within the cell from 1) of a module line."""
        owner = self.cells[0] if self.cells else None
        for cell in self.cells:
            if cell.first <= line:
                owner = cell
            else:
                break
        if owner is None:
            return 1, line
        return owner.index + 1, max(1, line - owner.first + 1)

    def cell_source(self, index: int) -> str:
        """The source of cell ``index`` (from 0) as it is in the file."""
        return _joined(self.data["cells"][index].get("source", ""))

    def cell_lines(self, number: int) -> List[str]:
        """The lines of cell ``number`` (from 1) as the user wrote them (magics unmasked)."""
        cells = self.data["cells"]
        if not 0 < number <= len(cells):
            return []
        source = cells[number - 1].get("source", "")
        return ("".join(source) if isinstance(source, list) else str(source)).splitlines()

    def locate(self, finding):
        """``finding`` (positions in the joined module) with cell-relative positions."""
        cell, line = self.cell_of(finding.line)
        end_cell, end_line = self.cell_of(finding.end_line)
        end_column = finding.end_column
        if end_cell != cell:  # a span never crosses cells in practice; clamp to the line
            end_line, end_column = line, finding.column
        here = _same_file(finding.path)
        evidence = tuple(self._locate_place(loc, here) for loc in getattr(finding, "evidence", ()))
        related = tuple(self._locate_place(loc, here) for loc in getattr(finding, "related", ()))
        return replace(finding, line=line, end_line=end_line, end_column=end_column, cell=cell,
                       **({"evidence": evidence, "related": related} if hasattr(finding, "evidence") else {}))

    def _locate_place(self, loc, here):
        """An evidence or related ``Location`` in this notebook, placed in its cell."""
        if loc.line <= 0 or getattr(loc, "cell", None) is not None or _same_file(loc.path) != here:
            return loc
        cell, line = self.cell_of(loc.line)
        return replace(loc, line=line, cell=cell)

    # ---- writing ---------------------------------------------------------------------------------
    def cell_sources(self, python: str) -> Dict[int, str]:
        """Split a (fixed) joined module back into the code cells' sources: cell index -> text."""
        old = [line for cell in self.cells for line in cell.lines]
        owner = [cell.index for cell in self.cells for _ in cell.lines]
        new = python.splitlines(keepends=True)
        if new and not new[-1].endswith("\n"):
            new[-1] += "\n"
        assigned: Dict[int, List[str]] = {cell.index: [] for cell in self.cells}
        if not self.cells:
            return {}
        last = self.cells[-1].index
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            for k, j in enumerate(range(j1, j2)):
                if tag in ("equal", "replace") and i2 > i1:
                    i = min(i1 + k, i2 - 1)
                else:  # inserted: goes with the line it was inserted before
                    i = i1
                assigned[owner[i] if i < len(owner) else last].append(new[j])
        out: Dict[int, str] = {}
        for cell in self.cells:
            lines = [self._unmask(line, cell.indent) for line in assigned[cell.index]]
            text = "".join(lines)
            if not cell.ends_with_newline and text.endswith("\n"):
                text = text[:-1]
            out[cell.index] = text
        return out

    def _unmask(self, line: str, indent: str = "") -> str:
        m = _PLACEHOLDER_RE.match(line.rstrip("\r\n"))
        if m and int(m.group(2)) in self.masked:
            return self.masked[int(m.group(2))] + "\n"
        return indent + line if line.strip() else line

    def render(self, python: str) -> str:
        """The notebook's JSON text with its code cells replaced by the split of ``python``;
        unchanged cells, outputs and metadata as they were, formatted as the original was."""
        data = json.loads(self.raw)  # a fresh copy: render leaves this Notebook as it was
        cells = data["cells"]
        sources = self.cell_sources(python) if python != self.python else {}
        for cell in self.cells:
            text = sources.get(cell.index)
            if text is None or text == _joined(cells[cell.index].get("source", "")):
                continue
            cells[cell.index]["source"] = text.splitlines(keepends=True) if cell.as_list else text
        indent = _indent(self.raw)
        compact = indent is None and '": ' not in self.raw
        out = json.dumps(data, indent=indent, ensure_ascii=_ensure_ascii(self.raw),
                         separators=(",", ":") if compact else (", " if indent is None else ",", ": "))
        return out + ("\n" if self.raw.endswith("\n") else "")


def _same_file(path: str):
    try:
        return Path(path).resolve()
    except (OSError, RuntimeError, ValueError):
        return path


def _joined(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source)


def _indent(raw: str):
    """The indentation of the original JSON (nbformat writes 1 space; some tools 2 or a tab)."""
    m = re.search(r"^\{\s*?\n([ \t]+)\"", raw)
    if not m:
        return None  # all on one line
    indent = m.group(1)
    return indent if "\t" in indent else len(indent)


def _ensure_ascii(raw: str) -> bool:
    """Whether the original escapes non-ASCII characters (nbformat does not)."""
    return raw.isascii() and re.search(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])", raw) is not None


def _is_ipython_escape(line: str) -> bool:
    s = line.lstrip(" \t")
    if not s or s.startswith("#"):
        return False
    if s.startswith(("%", "!")):
        return True  # %magic, %%cellmagic (first line), !shell
    if s.startswith("?") or (s.rstrip().endswith("?") and not any(c in s for c in "#'\"")):
        return True  # ?obj, obj?, obj?? (a "?" at the end of a string's first line is text)
    return bool(_ASSIGN_ESCAPE.match(s))  # x = !ls, x = %timeit -o f()


def _logical_line_starts(lines: Sequence[str]) -> List[bool]:
    """For each line: does a new statement start here (not inside a string, brackets or after a
    backslash)? Only such lines can be IPython escapes; a line in a docstring that ends with "?"
    is text."""
    starts: List[bool] = []
    depth = 0
    quote: Optional[str] = None  # the open triple quote carried over lines
    continued = False
    for line in lines:
        starts.append(depth == 0 and quote is None and not continued)
        if starts[-1] and _is_ipython_escape(line):
            continued = line.rstrip().endswith("\\")
            continue
        i, n = 0, len(line)
        while i < n:
            c = line[i]
            if quote is not None:
                if c == "\\":
                    i += 2
                    continue
                if line.startswith(quote, i):
                    i += len(quote)
                    quote = None
                    continue
                i += 1
                continue
            if c == "#":
                break
            if c in "\"'":
                triple = line[i:i + 3]
                if triple in ('"""', "'''"):
                    quote = triple
                    i += 3
                    continue
                # a one-line string: skip to its end
                j = i + 1
                while j < n and line[j] != c:
                    j += 2 if line[j] == "\\" else 1
                i = j + 1
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(0, depth - 1)
            i += 1
        continued = quote is None and line.rstrip().endswith("\\") and not line.lstrip().startswith("#")
    return starts


def not_linted(paths: Sequence[Path]) -> List[str]:
    """Why a notebook named on the command line has nothing to lint (no code cells, or only cells
    in another language): said, so that a skipped file never reads as a clean one."""
    out = []
    for path in paths:
        if not is_notebook(path) or not path.is_file():
            continue
        try:
            nb = from_bytes(path.read_bytes())
        except (OSError, NotebookError):
            continue  # reported as an error by the run itself
        if not nb.cells:
            out.append(f"{path.as_posix()}: no Python code cells; nothing was linted")
    return out


def from_bytes(data: bytes) -> Notebook:
    try:
        return Notebook(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        raise NotebookError(f"not UTF-8 text: {e}") from None
