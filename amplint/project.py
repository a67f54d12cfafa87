"""Project-wide facts: the precision regime, and constants other modules import.

Pre-commit passes only the changed files, yet whether ``AdamW(eps=1e-8)`` is a hazard depends on
whether *some* file of the project calls ``model.half()``. So the regime is inferred from every
Python file under the project root, read with the stdlib ``ast`` (much cheaper than libcst) and
only for files whose text mentions a precision word at all.
"""
from __future__ import annotations

import ast
import io
import math
import re
import tokenize
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .context.evidence import Signal, ast_call_facts, classify
from .context.file_context import Evidence
from .context.imports import ImportTable
from .discovery import TEST_PATH, Discovery

PRECISION_WORDS = re.compile(
    rb"autocast|GradScaler|\.half\b|float16|bfloat16|\bfp16\b|\bbf16\b|mixed_precision|precision\s*=|opt_level|set_default_dtype"
)
# A file that trains: calls backward, builds a torch optimizer or steps one. (Not "optimizer" in
# any word: yolov5's export.py imports torch.utils.mobile_optimizer.)
TRAINING_WORDS = re.compile(rb"\.backward\(|\boptim\.[A-Z]|torch\.optim\b|\boptimi[sz]er\.step\(|\.zero_grad\(")

REGIMES = ("auto", "fp16-mixed", "fp16", "bf16", "fp32")


@dataclass
class Regime:
    """The precision evidence of a project, and what it adds up to.

    ``signals`` holds every piece of evidence found; the properties answer the questions rules
    ask. ``override`` is the configured ``precision`` when it is not "auto".
    """
    signals: List[Tuple[Signal, Evidence]] = field(default_factory=list)
    override: Optional[str] = None

    def _first(self, pred) -> Optional[Evidence]:
        for sig, ev in self.signals:
            if pred(sig):
                return ev
        return None

    def _configured(self) -> Evidence:
        return Evidence(f'precision = "{self.override}" in configuration', "config", 0)

    @property
    def half_params(self) -> Optional[Evidence]:
        """Parameters themselves are float16 (pure half training)."""
        if self.override:
            return self._configured() if self.override == "fp16" else None
        return self._first(lambda s: s.pure and s.dtype == "float16" and s.enabled and s.note != "inference")

    @property
    def fp16(self) -> Optional[Evidence]:
        """Activations run in float16 somewhere: fp16 autocast, a GradScaler, a trainer flag or
        half parameters."""
        if self.override:
            return self._configured() if self.override in ("fp16", "fp16-mixed") else None
        return self._first(lambda s: s.dtype == "float16" and s.enabled and s.note != "inference")

    @property
    def fp16_autocast(self) -> Optional[Evidence]:
        if self.override:
            return self._configured() if self.override == "fp16-mixed" else None
        found = self._first(lambda s: s.kind in ("autocast", "flag") and s.dtype == "float16" and not s.pure and s.enabled)
        # A GradScaler exists only for float16 autocast (loss scaling is pointless otherwise), so
        # it stands for the autocast when that is out of sight (timm builds its scaler in utils/).
        return found or self._first(lambda s: s.kind == "grad_scaler" and s.enabled)

    @property
    def grad_scaler(self) -> Optional[Evidence]:
        return self._first(lambda s: s.kind == "grad_scaler" and s.enabled)

    @property
    def bf16(self) -> Optional[Evidence]:
        if self.override:
            return self._configured() if self.override == "bf16" else None
        return self._first(lambda s: s.dtype == "bfloat16" and s.enabled)

    @property
    def mode(self) -> str:
        if self.override:
            return self.override
        if self.half_params:
            return "fp16"
        if self.fp16:
            return "fp16-mixed"
        if self.bf16:
            return "bf16"
        return "fp32"


def module_name_for(path: Path, root: Path) -> Optional[str]:
    try:
        rel = path.resolve().relative_to(root.resolve())
    except ValueError:
        return None
    parts = list(rel.with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if parts and parts[0] == "src":
        parts.pop(0)
    return ".".join(parts) if parts else None


def _ast_imports(nodes, module_name: Optional[str]) -> ImportTable:
    table = ImportTable(module_name)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                table.add_import(a.name, a.asname)
        elif isinstance(node, ast.ImportFrom):
            table.add_from_import(node.module or "", [(a.name, a.asname) for a in node.names], node.level)
    return table


_LINE_END = re.compile(r"\r\n|\r|\n")


def _text_lines(source: bytes) -> List[str]:
    """The file's lines as Python numbers them, decoded with its coding cookie / BOM."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(source).readline)
        text = source.decode(encoding, "replace")
    except (SyntaxError, LookupError):
        text = source.decode("utf-8", "replace")
    return _LINE_END.split(text.lstrip("\ufeff"))


def _segment(lines: List[str], node: ast.AST) -> str:
    """The source text of ``node`` (what ``ast.get_source_segment`` gives, without re-splitting the
    whole file on every call: that made the scan quadratic in the file's length)."""
    first, last = node.lineno - 1, (getattr(node, "end_lineno", None) or node.lineno) - 1
    if not 0 <= first <= last < len(lines):
        return ""
    start, end = node.col_offset, getattr(node, "end_col_offset", None)
    if end is None:
        return lines[first].strip()
    # ast columns are UTF-8 byte offsets
    chunk = [line.encode("utf-8") for line in lines[first:last + 1]]
    if len(chunk) == 1:
        return chunk[0][start:end].decode("utf-8", "replace")
    chunk[0], chunk[-1] = chunk[0][start:], chunk[-1][:end]
    return b"\n".join(chunk).decode("utf-8", "replace")


def _saved_directly(call: ast.Call) -> set:
    """Names passed to a call as themselves, or as values of a dict or list argument: the object
    is saved (``torch.save({"model": model}, f)``), not something computed from it
    (``torch.save(model.state_dict(), f)`` saves the trained model's weights)."""
    names = set()
    for a in (*call.args, *(k.value for k in call.keywords)):
        values = a.values if isinstance(a, ast.Dict) else a.elts if isinstance(a, (ast.List, ast.Tuple)) else [a]
        names.update(v.id for v in values if isinstance(v, ast.Name))
    return names


def _saved_names(nodes) -> Dict[int, set]:
    """For each assignment inside a function: the names that the function later passes to a
    ``*save*`` call (``torch.save``, ``torch_save``, ``save_checkpoint``), directly or in a dict."""
    out: Dict[int, set] = {}
    for fn in nodes:
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        saves = []
        for call in ast.walk(fn):
            if isinstance(call, ast.Call):
                f = call.func
                name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
                if "save" in name.lower():
                    saves.append((call.lineno, _saved_directly(call)))
        if not saves:
            continue
        for stmt in ast.walk(fn):
            if isinstance(stmt, ast.Assign):
                out[id(stmt)] = set().union(*(names for line, names in saves if line > stmt.lineno))
    return out


def facts_method_cast(call: ast.Call) -> bool:
    """``x.half()`` / ``x.to(...)`` / ``x.bfloat16()``: a cast of an object, not a keyword flag."""
    return isinstance(call.func, ast.Attribute) and call.func.attr in ("half", "to", "bfloat16")


def scan_source(source: bytes, display_path: str, module_name: Optional[str] = None) -> List[Tuple[Signal, Evidence]]:
    """Precision evidence in one file's source (stdlib ast)."""
    if not PRECISION_WORDS.search(source):
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    trains = bool(TRAINING_WORDS.search(source))
    nodes = list(ast.walk(tree))  # one walk; the passes below iterate this list
    imports = _ast_imports(nodes, module_name)
    out: List[Tuple[Signal, Evidence]] = []
    lines = _text_lines(source)
    targets = {}  # id(call) -> assigned name, so ``model = Net().cuda().half()`` reads as the model
    standalone = set()  # calls that are a statement or an assignment's value (chains included)
    saved = _saved_names(nodes)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id in saved.get(id(node), ()):
            continue  # ``model = deepcopy(self.model).half(); torch.save({"model": model}, f)``: a checkpoint
        if isinstance(node, (ast.Assign, ast.Expr)):
            t = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            value = node.value
            while isinstance(value, ast.Call):
                standalone.add(id(value))
                if t is not None:
                    targets[id(value)] = t.id if isinstance(t, ast.Name) else getattr(t, "attr", None)
                value = value.func.value if isinstance(value.func, ast.Attribute) else None
    for node in nodes:
        if not isinstance(node, ast.Call):
            continue
        sig = classify(ast_call_facts(node, imports, targets.get(id(node))))
        if sig is None:
            continue
        if sig.kind == "half_params" and facts_method_cast(node) and id(node) not in standalone:
            # ``{"model": deepcopy(model).half()}`` / ``torch.save(model.half(), f)``: a half copy for
            # a checkpoint or an export, not the parameters that train.
            continue
        if sig.kind == "half_params" and not trains:
            # model.half() in an export / inference script says nothing about how training runs.
            sig = Signal(sig.kind, sig.dtype, sig.enabled, sig.pure, "inference")
        src = " ".join(_segment(lines, node).split())
        if len(src) > 60:
            src = src[:57] + "..."
        out.append((sig, Evidence(f"`{src}`", display_path, node.lineno)))
    return out


class Project:
    """One project root: its regime (computed once) and its modules' constants (on demand)."""

    def __init__(self, root: Path, discovery: Optional[Discovery] = None, override: Optional[str] = None,
                 display_base: Optional[Path] = None) -> None:
        self.root = root.resolve()
        self.discovery = discovery or Discovery()
        self._override = override if override and override != "auto" else None
        self._regime: Optional[Regime] = None
        self._modules: Optional[Dict[str, Path]] = None
        self._constants: Dict[str, Dict[str, float]] = {}
        self._files: Optional[List[Path]] = None
        self.display_base = display_base

    def files(self) -> List[Path]:
        """The project's Python files: what discovery would lint under the root, less nested
        projects (a directory with its own pyproject.toml, setup.py, setup.cfg or .git is a project
        of its own, with its own regime). Walked once per Project."""
        if self._files is None:
            self._files = list(self.discovery.walk(self.root, self.root, stop_at_projects=True))
        return list(self._files)

    def prepare(self) -> "Project":
        """Compute the facts every file needs (file list, regime, module paths) now: the runner
        does this in the parent process before handing the project to worker processes."""
        self.regime
        self._module_paths()
        return self

    def display(self, path: Path) -> str:
        base = self.display_base or Path.cwd()
        try:
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            return path.as_posix()

    @property
    def regime(self) -> Regime:
        if self._regime is None:
            signals: List[Tuple[Signal, Evidence]] = []
            for f in self.files():
                if TEST_PATH.search(self.relative(f)):
                    continue  # a test's autocast or .half() is a fixture, not how the project trains
                try:
                    source = self.read(f)
                except OSError:
                    continue
                signals.extend(scan_source(source, self.display(f), module_name_for(f, self.root)))
            self._regime = Regime(signals, self._override)
        return self._regime

    def relative(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def module_name(self, path: Path) -> Optional[str]:
        return module_name_for(path, self.root)

    def read(self, path: Path) -> bytes:
        """The text of a project file as the project facts see it (``fix`` overrides this with the
        fixed, not yet written, contents)."""
        return path.read_bytes()

    def _module_paths(self) -> Dict[str, Path]:
        if self._modules is None:
            self._modules = {}
            for f in self.files():
                name = module_name_for(f, self.root)
                if name:
                    self._modules[name] = f
        return self._modules

    def constant(self, qualname: str) -> Optional[float]:
        """Value of a numeric module-level constant of a project module, e.g. ``pkg.consts.NEAR_INF``."""
        module, _, name = qualname.rpartition(".")
        if module not in self._constants:
            path = self._module_paths().get(module)
            self._constants[module] = _numeric_constants(path, self.read) if path else {}
        return self._constants[module].get(name)


def _numeric_value(node: ast.AST, known: Dict[str, float]) -> Optional[float]:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _numeric_value(node.operand, known)
        return None if v is None else (-v if isinstance(node.op, ast.USub) else v)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" and len(node.args) == 1:
        a = node.args[0]
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            try:
                return float(a.value)
            except ValueError:
                return None
        return _numeric_value(a, known)
    if isinstance(node, ast.Attribute) and node.attr == "inf":
        return math.inf
    if isinstance(node, ast.Name):
        return known.get(node.id)
    return None


def _numeric_constants(path: Path, read=Path.read_bytes) -> Dict[str, float]:
    try:
        tree = ast.parse(read(path))
    except (OSError, SyntaxError, ValueError):
        return {}
    out: Dict[str, float] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            v = _numeric_value(stmt.value, out)
            if v is not None:
                out[stmt.targets[0].id] = v
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            v = _numeric_value(stmt.value, out)
            if v is not None:
                out[stmt.target.id] = v
    return out
