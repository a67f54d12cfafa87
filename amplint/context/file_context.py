"""The per-file context every rule asks: one parse, one walk, shared facts.

The walk records, for every node, its parent and its type (so rules iterate the nodes they care
about without walking the tree again), the import table, the scopes, bindings and references
(``ctx.semantic``: what a name is bound to at a node), the precision regions opened by autocast
``with`` blocks and decorators, and module-level constants. Positions are computed only when a
finding is reported (PositionProvider costs ~2.6x the parse on real code).
"""
from __future__ import annotations

import dataclasses
import math
from contextlib import contextmanager
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple, Type, TypeVar

import libcst as cst
try:  # libcst's private codegen state (the text of a node inside blocks, as written); without it the
    # positions come from the position pass (slower, the same answers)
    from libcst._nodes.base import CSTCodegenError
    from libcst._nodes.internal import CodegenState
except ImportError:  # pragma: no cover - a libcst release that moved them
    CodegenState = None

    class CSTCodegenError(Exception):  # type: ignore[no-redef]
        pass
from libcst.metadata import MetadataWrapper, PositionProvider

from ..constants import binary, unary
from ..fp16 import finfo
from .evidence import (AUTOCAST_NAMES, CALLER_STATE, Evidence, Signal, autocast_signal, cst_call_facts,  # noqa: F401
                       cst_value, CallFacts)  # (Evidence re-exported)
from .imports import ImportTable, dotted_name, record_import
from .semantic import SemanticModel

N = TypeVar("N", bound=cst.CSTNode)

# libcst's operators as the symbols amplint.constants folds (one arithmetic for file and project).
_CST_BINARY = {cst.Add: "+", cst.Subtract: "-", cst.Multiply: "*", cst.Divide: "/", cst.Power: "**",
               cst.FloorDivide: "//", cst.Modulo: "%"}
_CST_UNARY = {cst.Minus: "-", cst.Plus: "+"}


@dataclass(frozen=True)
class PrecisionRegion:
    """A lexical region with a precision of its own: an autocast ``with`` block or decorator,
    or ``custom_fwd(cast_inputs=torch.float32)``."""
    node: cst.CSTNode  # the With or FunctionDef
    dtype: str  # "float16" | "bfloat16" | "float32"
    enabled: bool
    evidence: Evidence


class _FieldOrder(cst.CSTVisitor):
    """Records the attributes libcst's own traversal visits of one node, in its order (children
    are not entered: ``on_visit`` says no)."""

    def __init__(self) -> None:
        super().__init__()
        self.fields: List[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        self.fields.append(attribute)

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        pass


# node type -> the attributes holding its children, in libcst's traversal order (learnt from libcst
# itself the first time a type is met, so the walk below visits exactly what ``Module.visit`` does),
# each with what it holds (``_field_kind``), and what else the walk does there (``_child_fields``)
_CHILD_FIELDS: Dict[type, tuple] = {}
_IMPORTS = (cst.Import, cst.ImportFrom)
_SENTINEL = cst.MaybeSentinel.DEFAULT
# Layout: the whitespace, newlines, blank lines and comments around the code, more than half of a
# libcst tree's nodes. No question is asked of them through the walk's tables (parents, order, nodes
# of a type): rules and fixes read them as attributes of the code nodes holding them. So the walk
# leaves them out (a sequence of them is a node's leading / empty lines, header or footer).
_LAYOUT = frozenset({cst.SimpleWhitespace, cst.ParenthesizedWhitespace, cst.TrailingWhitespace, cst.Newline,
                     cst.EmptyLine, cst.Comment})


def _child_fields(node_type: type, node: cst.CSTNode) -> tuple:
    """What the walk does at a node of ``node_type``: the attributes holding its children, in
    libcst's traversal order, each with what it can hold (``_field_kind``; those that only ever
    hold layout left out), its semantic handler, and its kind (an import, a scope, neither)."""
    recorder = _FieldOrder()
    node._visit_and_replace_children(recorder)
    found = tuple(dict.fromkeys(recorder.fields))
    # A few types visit a field only when it is set (FormattedStringExpression.format_spec): when
    # this node leaves out a field that could hold a node, read the order from libcst's source.
    if any(f.name not in found and _may_hold_node(getattr(node, f.name)) for f in dataclasses.fields(node)):
        found = _fields_in_source(node_type)
    kinds = _field_kinds(node_type)
    fields = tuple((name, kinds.get(name, _MIXED)) for name in found)
    fields = tuple((name, kind) for name, kind in fields if kind != _LAYOUT_ONLY)
    # with what the walk does at a node of this type: its semantic handler (what it binds or
    # reads), and whether it is an import (2) or opens a scope for its children (1)
    kind = 2 if node_type in _IMPORTS else 1 if node_type in SemanticModel.SCOPE_CHANGES else 0
    plan = (fields, SemanticModel.HANDLERS.get(node_type), kind)
    _CHILD_FIELDS[node_type] = plan
    return plan


# What a child field can hold, from libcst's annotation of it: only layout (``whitespace_after:
# BaseParenthesizableWhitespace``, ``leading_lines: Sequence[EmptyLine]``: the walk skips it), a
# node that is never layout (``func: BaseExpression``), a sequence of such nodes (``args:
# Sequence[Arg]``), or either (read and filtered as it comes).
_LAYOUT_ONLY, _NODE, _NODES, _MIXED = 0, 1, 2, 3


def _field_kinds(node_type: type) -> Dict[str, int]:
    import typing

    try:
        hints = typing.get_type_hints(node_type)
    except Exception:  # pragma: no cover - an annotation that does not resolve: every field read as it comes
        return {}
    return {f.name: _field_kind(hints.get(f.name)) for f in dataclasses.fields(node_type)}


def _field_kind(annotation) -> int:
    import collections.abc
    import typing

    origin = typing.get_origin(annotation)
    if origin in (collections.abc.Sequence, list, tuple):
        args = typing.get_args(annotation)
        if len(args) != 1 or args[0] is Ellipsis:
            return _MIXED
        element = _leaf_kind(args[0])
        return {_LAYOUT_ONLY: _LAYOUT_ONLY, _NODE: _NODES}.get(element, _MIXED)
    return _leaf_kind(annotation)


def _leaf_kind(annotation) -> int:
    """_LAYOUT_ONLY when every class ``annotation`` admits (a Union's members; None and
    MaybeSentinel aside) is layout, _NODE when none can be, else _MIXED."""
    import typing

    members = typing.get_args(annotation) if typing.get_origin(annotation) is typing.Union else (annotation,)
    layout = plain = False
    for member in members:
        if member is type(None) or member is cst.MaybeSentinel:
            continue
        if not (isinstance(member, type) and issubclass(member, cst.CSTNode)):
            return _MIXED  # a sequence inside a Union, a string, ...: read as it comes
        concrete = [c for c in _subclasses(member) if "__slots__" in c.__dict__ and not getattr(c, "__abstractmethods__", None)]
        if any(c in _LAYOUT for c in concrete):
            layout = True
        if any(c not in _LAYOUT for c in concrete) or not concrete:
            plain = True
    if layout and not plain:
        return _LAYOUT_ONLY
    return _MIXED if layout else _NODE


def _subclasses(cls: type) -> List[type]:
    out, todo = [], [cls]
    while todo:
        c = todo.pop()
        out.append(c)
        todo.extend(c.__subclasses__())
    return out


def _may_hold_node(value) -> bool:
    return value is None or value is _SENTINEL or isinstance(value, (cst.CSTNode, tuple, list))


def _fields_in_source(node_type: type) -> Tuple[str, ...]:
    """The attributes named by the ``visit_*(self, "name", ...)`` calls of ``node_type``'s
    ``_visit_and_replace_children``, in source order."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(node_type._visit_and_replace_children)))
    calls = [c for c in ast.walk(tree) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
             and c.func.id.startswith("visit_") and len(c.args) >= 2
             and isinstance(c.args[1], ast.Constant) and isinstance(c.args[1].value, str)]
    calls.sort(key=lambda c: (c.lineno, c.col_offset))
    return tuple(dict.fromkeys(c.args[1].value for c in calls))


def _walk(ctx: "FileContext", module: cst.Module) -> None:
    """The single walk: every node but layout (``_LAYOUT``) in the order of libcst's ``visit``
    (preorder, source order), without the node copies libcst's traversal makes (it rebuilds every
    node it visits; that doubled the cost of a parse). Records each node's parent, its type and its
    preorder index (by ``id``: node hashing is a Python-level call), and the imports."""
    layout = _LAYOUT
    parents = ctx._parents
    by_type = ctx._by_type
    order = ctx._order
    plans = _CHILD_FIELDS
    semantic = ctx.semantic
    child_scope = semantic.child_scope
    stack: List[Tuple[cst.CSTNode, Optional[cst.CSTNode], object]] = [(module, None, semantic.start(module))]
    pop, push, extend = stack.pop, stack.append, stack.extend
    n = 0
    while stack:
        node, parent, scope = pop()
        key = id(node)
        if parent is not None:
            parents[key] = parent
        order[key] = n
        n += 1
        t = type(node)
        found = by_type.get(t)
        if found is None:
            by_type[t] = [node]
        else:
            found.append(node)
        plan = plans.get(t)
        if plan is None:
            plan = _child_fields(t, node)
        fields, handler, kind = plan
        if kind == 2:
            record_import(ctx.imports, node)
        if handler is not None:
            handler(semantic, node, parent, scope)  # what it binds or reads, in its scope
        if not fields:
            continue
        children = []
        for name, held in fields:
            value = getattr(node, name)
            if held == 2:  # a sequence of nodes (never layout)
                if value:
                    children.extend(value)
            elif value is None or value is _SENTINEL:
                continue
            elif held == 1:  # a node that is never layout
                children.append(value)
            elif type(value) is tuple or type(value) is list:
                if value and type(value[0]) in layout:
                    children.extend(v for v in value if type(v) not in layout)
                else:
                    children.extend(value)
            elif type(value) not in layout:
                children.append(value)
        if kind == 1:  # a def's body runs in its scope, its defaults around it, ...
            for child in reversed(children):
                push((child, node, child_scope(node, child, scope)))
        else:
            children.reverse()
            extend([(child, node, scope) for child in children])


class FileContext:
    def __init__(self, path: str, module: cst.Module, source: bytes, project=None,
                 module_name: Optional[str] = None, settings=None) -> None:
        self.path = path
        if settings is None:
            from ..config import Settings
            settings = Settings()
        self.settings = settings  # amplint.config.Settings: what fixes write (safe_eps, ...)
        self.module = module
        self.source = source
        self.project = project  # amplint.project.Project, or None when linting a lone snippet
        self.file: Optional[Path] = None  # the file on disk (set by engine.build_context)
        # path -> another project file's FileContext (engine.project_context, set by build_context)
        self.open_other: Optional[Callable[[Path], Optional["FileContext"]]] = None
        self.imports = ImportTable(module_name)
        self._parents: Dict[int, cst.CSTNode] = {}  # id(node) -> its parent
        self._by_type: Dict[type, List[cst.CSTNode]] = {}
        self._order: Dict[int, int] = {}  # id(node) -> preorder index: source order of nodes
        self._positions = None
        self._regions: Optional[Dict[cst.CSTNode, PrecisionRegion]] = None
        self._constants: Optional[Dict[str, cst.BaseExpression]] = None
        self._cache: Dict[str, object] = {}  # per-file memo for rules and models (e.g. dtype flow)
        self._assumed = None  # a Regime this file is judged under for now (``assuming``)
        # id(call) -> (call, its qualified name): every rule asks it of every call (the node is kept
        # beside its name, so that the id of a node built for a moment is never taken for another's)
        self._call_names: Dict[int, Tuple[cst.Call, Optional[str]]] = {}
        # scopes, bindings and references (amplint.context.semantic), recorded by the walk
        self.semantic = SemanticModel(self)
        _walk(self, module)

    @property
    def regime(self):
        """The precision this file runs in (amplint.project.Regime): that of the training entry
        points reaching it (``Project.regime_for``); None for a lone snippet."""
        if self._assumed is not None:
            return self._assumed
        if self.project is None:
            return None
        if self.file is not None and hasattr(self.project, "regime_for"):
            return self.project.regime_for(self.file)
        return self.project.regime

    def release(self) -> None:
        """Drop the analysis (tree, semantic model, memos) once the file's findings are made: its
        parts refer to each other (the model to the context, scopes to bindings), so without this
        only a garbage collection frees them. The context answers nothing after."""
        semantic = self.__dict__.get("semantic")
        if semantic is not None:
            semantic.release()
        self.__dict__.clear()

    @contextmanager
    def assuming(self, regime):
        """Judge this file under ``regime`` for a while (the library policy's look at library code
        under any float16 use): the per-file memo, whose dtypes depend on the regime, is set aside
        and restored afterwards."""
        saved, self._cache, self._assumed = self._cache, {}, regime
        try:
            yield
        finally:
            self._cache, self._assumed = saved, None

    def other_file(self, path: Path) -> Optional["FileContext"]:
        """The context of another file of the project (parsed once per project and worker), for
        questions one file asks of another; None for a lone snippet or a file that does not parse."""
        if self.open_other is None:
            return None
        looked_into = getattr(self.project, "looked_into", None)
        if looked_into is not None:
            looked_into(Path(path).resolve())  # what this file's cached result now depends on
        return self.open_other(path)

    @property
    def project_index(self):
        """The project's call graph and class hierarchy (``amplint.project_index.ProjectIndex``),
        None for a lone snippet. Read-only questions across files: ``resolve(dotted, module)``,
        ``callers(name)``, ``calls_from(name)``, ``callees(name)``, ``instantiates(name)``,
        ``subclasses(name)``, ``bases(name)``, ``reachable(names)``. A rule's answer that depends
        on other files should go through ``ctx.project.callers`` / ``ctx.project.subclasses``
        (recorded for the results cache)."""
        return getattr(self.project, "index", None) if self.project is not None else None

    # ---- structure ------------------------------------------------------------------------------
    def nodes(self, kind: Type[N]) -> List[N]:
        """Every node of this type in the file, in source order."""
        return self._by_type.get(kind, [])  # type: ignore[return-value]

    def parent(self, node: cst.CSTNode) -> Optional[cst.CSTNode]:
        return self._parents.get(id(node))

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        parents = self._parents
        p = parents.get(id(node))
        while p is not None:
            yield p
            p = parents.get(id(p))

    def order(self, node: cst.CSTNode) -> int:
        """Preorder index of ``node``: a node comes after every node that precedes it in source."""
        return self._order.get(id(node), -1)

    def is_ancestor(self, ancestor: cst.CSTNode, node: cst.CSTNode) -> bool:
        return any(a is ancestor for a in self.ancestors(node))

    def statement_of(self, node: cst.CSTNode) -> cst.CSTNode:
        """The statement line holding ``node`` (a SimpleStatementLine or a compound statement)."""
        cur = node
        while cur is not None and not isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            cur = self._parents.get(id(cur))
        return cur if cur is not None else node

    def enclosing(self, node: cst.CSTNode, kind: Type[N]) -> Optional[N]:
        for a in self.ancestors(node):
            if isinstance(a, kind):
                return a  # type: ignore[return-value]
        return None

    def enclosing_function(self, node: cst.CSTNode) -> Optional[cst.FunctionDef]:
        return self.enclosing(node, cst.FunctionDef)

    def enclosing_class(self, node: cst.CSTNode) -> Optional[cst.ClassDef]:
        return self.enclosing(node, cst.ClassDef)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    # ---- names ----------------------------------------------------------------------------------
    def qualname(self, expr: cst.BaseExpression) -> Optional[str]:
        """Fully qualified dotted name of a Name/Attribute chain, through imports and aliases."""
        name = dotted_name(expr)
        return self.imports.resolve(name) if name is not None else None

    def call_name(self, call: cst.Call) -> Optional[str]:
        known = self._call_names.get(id(call))
        if known is not None and known[0] is call:
            return known[1]
        name = self.qualname(call.func)  # (the imports are all read by the walk: the name is final)
        self._call_names[id(call)] = (call, name)
        return name

    def call_facts(self, call: cst.Call) -> CallFacts:
        facts = cst_call_facts(call, self.imports)
        if facts.qualname in AUTOCAST_NAMES:
            # ``enabled = torch.is_autocast_enabled("cuda")`` then ``autocast("cuda", enabled=enabled)``: the caller's
            # state, re-entered (T11-11)
            positional = [a for a in call.args if not a.star and a.keyword is None]
            for arg in call.args:
                if isinstance(arg.value, cst.Name) and not arg.star and self._holds_caller_state(arg.value):
                    if arg.keyword is not None:
                        facts.kwargs[arg.keyword.value] = CALLER_STATE
                    else:
                        i = positional.index(arg)
                        facts.args = tuple(CALLER_STATE if j == i else v for j, v in enumerate(facts.args))
        for arg in call.args:
            if arg.star == "**" and isinstance(arg.value, cst.Call) and isinstance(arg.value.func, cst.Name):
                for key, value in self._returned_dict(arg.value.func.value):
                    facts.kwargs.setdefault(key, cst_value(value, self.imports))
        return facts

    def _holds_caller_state(self, name: cst.Name) -> bool:
        """Is every binding of ``name`` reaching it an assignment of the autocast state in force
        (``torch.is_autocast_enabled(...)`` / ``torch.get_autocast_dtype(...)``)?"""
        bindings = self.semantic.reaching(name.value, name)
        return bool(bindings) and all(
            b.kind == "assign" and not b.part and isinstance(b.value, cst.Call)
            and cst_value(b.value, self.imports) is CALLER_STATE for b in bindings)

    def _returned_dict(self, name: str) -> List[Tuple[str, cst.BaseExpression]]:
        """The literal keys and values of the dict that this file's module-level function ``name``
        returns, when each ``return`` is a dict literal with string keys: the keywords of
        ``torch.autocast(**get_autocast_args(args))`` (rf-detr: ``return {"device_type": "cuda",
        "enabled": args.amp, "dtype": torch.bfloat16}``)."""
        fn = next((s for s in self.module.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
        returns = [] if fn is None else [r.value for r in self.nodes(cst.Return) if fn in self.ancestors(r)]
        if not returns or not all(isinstance(d, cst.Dict) for d in returns):
            return []
        values: Dict[str, List[cst.BaseExpression]] = {}
        for d in returns:
            for element in d.elements:
                key = getattr(element, "key", None)
                if not (isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str)):
                    return []
                values.setdefault(key.evaluated_value, []).append(element.value)
        # a key the returns give different values (one dict per torch version) is left out
        return [(key, vs[0]) for key, vs in values.items() if len({self.code(v) for v in vs}) == 1]

    def splat_keys(self, value: cst.BaseExpression) -> Optional[Set[str]]:
        """The keywords a ``**value`` argument can pass, when all are known: a dict literal with
        string keys (or ``dict(k=...)``), or a name that every binding in its scope gives such a
        dict, with only ``name["k"] = ...`` / ``name.update(k=...)`` / reads done to it there
        (AnglE's ``TrainingArguments(..., **argument_kwargs)``). None when a key may be unknown (a
        parameter, a dict from a call, the dict handed to a function)."""
        keys = _literal_keys(value)
        if keys is not None or not isinstance(value, cst.Name):
            return keys
        seen = self.semantic.binding_of(value)
        if seen is None:
            return None
        keys = set()
        bindings = self.semantic.bindings(value.value, seen.scope)
        for b in bindings:
            found = _literal_keys(b.value) if b.kind == "assign" and not b.part else None
            if found is None:
                return None
            keys |= found
        for b in bindings:
            for use in self.semantic.uses(b):
                parent = self.parent(use)
                if isinstance(parent, cst.Arg) and parent.star == "**":
                    continue
                if isinstance(parent, cst.Subscript) and len(parent.slice) == 1 \
                        and isinstance(parent.slice[0].slice, cst.Index):
                    key = parent.slice[0].slice.value
                    if isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str):
                        keys.add(key.evaluated_value)
                        continue
                    return None
                if isinstance(parent, cst.Attribute) and parent.attr.value in ("get", "keys", "items", "values", "copy"):
                    continue
                if isinstance(parent, cst.Attribute) and parent.attr.value == "update":
                    call = self.parent(parent)
                    if isinstance(call, cst.Call) and all(a.keyword is not None for a in call.args):
                        keys.update(a.keyword.value for a in call.args)  # type: ignore[union-attr]
                        continue
                return None
        return keys

    def calls_to(self, *qualnames: str) -> Iterator[cst.Call]:
        wanted = set(qualnames)
        for call in self.nodes(cst.Call):
            if self.call_name(call) in wanted:
                yield call

    def method_calls(self, *methods: str) -> Iterator[cst.Call]:
        """``x.m(...)`` calls for any receiver whose callee is not itself an import-resolved
        function of the same name (``torch.where`` is not a method call of ``where``)."""
        wanted = set(methods)
        for call in self.nodes(cst.Call):
            if isinstance(call.func, cst.Attribute) and call.func.attr.value in wanted:
                yield call

    # ---- positions (computed on demand) ---------------------------------------------------------
    def position(self, node: cst.CSTNode):
        """(line, column, end_line, end_column), 1-based columns like ruff."""
        if self._positions is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        rng = self._positions[node]
        return rng.start.line, rng.start.column + 1, rng.end.line, rng.end.column + 1

    def line_of(self, node: cst.CSTNode) -> int:
        """The 1-based line ``node`` starts on: without the position pass (a walk of the whole
        file, which a dtype explanation naming one caller's line need not pay) where its text
        says it (``_line_from_text``)."""
        if self._positions is None:
            line = self._line_from_text(node)
            if line is not None:
                return line
        return self.position(node)[0]

    # Expressions whose position (libcst's PositionProvider) is their text less their parentheses
    _TEXT_POSITIONED = (cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.UnaryOperation,
                        cst.Comparison, cst.BooleanOperation, cst.Integer, cst.Float, cst.SimpleString)

    def report_position(self, node: cst.CSTNode):
        """``position(node)``, from the node's text where it says it (``_offset``), else from the
        position pass: a file's findings need not pay a pass over the whole file."""
        if self._positions is None and type(node) in self._TEXT_POSITIONED and self._text_searchable():
            found = self._position_from_text(node)
            if found is not None:
                return found
        return self.position(node)

    def _position_from_text(self, node: cst.CSTNode):
        at = self._offset(node)
        text = self._searchable_text(node) if at is not None else None
        if text is None:
            return None
        before = self._searchable_text(node, parentheses=True) if node.lpar else b""
        after = b"".join(self._searchable_text(r) or b"?" for r in node.rpar) if node.rpar else b""
        if before is None or not (text.startswith(before) and text.endswith(after)):
            return None
        start, end = at + len(before), at + len(text) - len(after)
        try:
            return (*self._line_column(start), *self._line_column(end))
        except (UnicodeDecodeError, LookupError):
            return None

    def _line_column(self, at: int) -> Tuple[int, int]:
        """(line, 1-based column in characters) of the byte offset ``at`` of ``source``."""
        line_start = self.source.rfind(b"\n", 0, at) + 1
        column = len(self.source[line_start:at].decode(self.module.encoding))
        return self.source.count(b"\n", 0, line_start) + 1, column + 1

    def on_lines(self, node: cst.CSTNode, lines) -> bool:
        """Does ``node`` start on one of ``lines`` (the project index's lines of a file's call
        sites)? Answered from the lines its text occurs on when they are all in ``lines`` or none
        is (the node is at one of its text's occurrences), else as ``line_of``."""
        if self._positions is None:
            found = self._text_lines(node)
            if found is not None:
                inside = [n in lines for n in found]
                if all(inside):
                    return True
                if not any(inside):
                    return False
        return self.line_of(node) in lines

    def _line_from_text(self, node: cst.CSTNode) -> Optional[int]:
        """The line of an expression from where its source text stands in the file (libcst keeps
        the text as written): where it occurs once in the file, or once in the text of the
        nearest enclosing node whose text occurs once (``_offset``); None otherwise. Not for
        statements: their text starts at the comments and blank lines above them."""
        if not isinstance(node, cst.BaseExpression) or not self._text_searchable():
            return None
        at = self._offset(node)
        if at is None:
            return None
        if getattr(node, "lpar", None):  # a position starts inside the node's parentheses
            at += len(self._searchable_text(node, parentheses=True) or b"")
        return self.source.count(b"\n", 0, at) + 1

    def _text_searchable(self) -> bool:
        # a line ended by a lone "\r" is not counted by the "\n"s
        return isinstance(self.source, bytes) and self.source.count(b"\r") == self.source.count(b"\r\n")

    def _text_lines(self, node: cst.CSTNode) -> Optional[List[int]]:
        """The lines on which the source text of the expression ``node`` starts, one per
        occurrence in the file; None when the text cannot say (a statement, a short or non-ASCII
        text, a file with a lone carriage return)."""
        if not isinstance(node, cst.BaseExpression) or not self._text_searchable():
            return None
        text = self._searchable_text(node)
        if text is None or len(text) < 8 or not text.isascii():
            return None
        # a position starts inside the node's parentheses
        inside = len(self._searchable_text(node, parentheses=True) or b"") if getattr(node, "lpar", None) else 0
        out, at, line, counted = [], self.source.find(text), 1, 0
        while at >= 0:
            line += self.source.count(b"\n", counted, at + inside)
            counted = at + inside
            out.append(line)
            at = self.source.find(text, at + 1)
        return out or None

    _CLIMB = 12  # enclosing nodes looked at for one whose text occurs once

    def _offset(self, node: cst.CSTNode) -> Optional[int]:
        """The byte offset in ``source`` where ``node``'s text starts: where the text occurs once
        in the file, or once inside the text of an enclosing node whose offset is known (its own
        text occurs once, or once in its parent's...). Sound because each node's text is the
        source as written (``_source_text``); None when no enclosing node is unique enough."""
        memo = self._cache.setdefault("text_offsets", {})
        nodes, texts, cur, at = [], [], node, None
        for _ in range(self._CLIMB):
            if cur is None or cur is self.module:
                return None
            text = self._searchable_text(cur)
            if text is None:
                return None
            at = memo.get(id(cur))
            if at is None and len(text) >= 8 and text.isascii():  # (other bytes may be another encoding's)
                first = self.source.find(text)
                if first >= 0 and self.source.find(text, first + 1) < 0:
                    at = memo[id(cur)] = first
            nodes.append(cur)
            texts.append(text)
            if at is not None:
                break
            cur = self.parent(cur)
        if at is None:
            return None
        for i in range(len(texts) - 2, -1, -1):  # down again: each text once inside its parent's
            j = texts[i + 1].find(texts[i])
            if j < 0 or texts[i + 1].find(texts[i], j + 1) >= 0:
                return None
            at += j
            memo[id(nodes[i])] = at
        return at

    def _source_text(self, node: cst.CSTNode, parentheses: bool = False) -> str:
        """The code of ``node`` as it stands in the file. ``code`` writes a node inside a block
        without the block's indentation (libcst indents continuation lines and statements by the
        blocks around them), so such a node is written with it."""
        indents = [a.indent if a.indent is not None else self.module.default_indent
                   for a in self.ancestors(node) if isinstance(a, cst.IndentedBlock)]
        parent = self.parent(node)
        elif_ = isinstance(node, cst.If) and isinstance(parent, cst.If) and parent.orelse is node
        if not indents and not elif_ and not parentheses:
            return self.code(node)
        if CodegenState is None:
            raise ValueError("no libcst codegen state")
        state = CodegenState(default_indent=self.module.default_indent, default_newline=self.module.default_newline,
                             indent_tokens=indents[::-1])
        if parentheses:
            for lpar in node.lpar:
                lpar._codegen(state)
        elif elif_:
            node._codegen(state, is_elif=True)  # an ``elif``: written so by the ``if`` it follows
        else:
            node._codegen(state)
        return "".join(state.tokens)

    def _searchable_text(self, node: cst.CSTNode, parentheses: bool = False) -> Optional[bytes]:
        """``_source_text`` as bytes (``parentheses``: of its opening parentheses only); None for a
        node that is not written alone (an annotation's indicator is its parent's to choose)."""
        try:
            return self._source_text(node, parentheses).encode("utf-8")
        except (CSTCodegenError, TypeError, ValueError, AttributeError):
            return None

    # ---- constants ------------------------------------------------------------------------------
    def module_constants(self) -> Dict[str, cst.BaseExpression]:
        """Module-level ``NAME = <expr>`` bindings (the last one wins)."""
        if self._constants is None:
            consts: Dict[str, cst.BaseExpression] = {}
            for stmt in self.module.body:
                if isinstance(stmt, cst.SimpleStatementLine):
                    for small in stmt.body:
                        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                            consts[small.targets[0].target.value] = small.value
                        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                            consts[small.target.value] = small.value
            self._constants = consts
        return self._constants

    def number(self, expr: cst.BaseExpression, _depth: int = 0) -> Optional[float]:
        """The numeric value of a constant expression: literals, ``-x``, ``float("-inf")``,
        ``math.inf``, simple arithmetic, and names bound to constants in this module or imported
        from another module of the project. None when it is not a constant."""
        if _depth > 8:
            return None
        if isinstance(expr, (cst.Integer, cst.Float)):
            try:
                return float(expr.evaluated_value)
            except (ValueError, OverflowError):
                return None
        if isinstance(expr, cst.UnaryOperation):
            return unary(_CST_UNARY.get(type(expr.operator), ""), self.number(expr.expression, _depth + 1))
        if isinstance(expr, cst.BinaryOperation):
            op = _CST_BINARY.get(type(expr.operator))
            if op is None:
                return None
            return binary(op, self.number(expr.left, _depth + 1), self.number(expr.right, _depth + 1))
        if isinstance(expr, cst.Call) and len(expr.args) == 1 and self.call_name(expr) == "float":
            arg = expr.args[0].value
            if isinstance(arg, cst.SimpleString):
                try:
                    return float(arg.evaluated_value)
                except (ValueError, TypeError):
                    return None
            return self.number(arg, _depth + 1)
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Call) and len(expr.value.args) == 1 \
                and self.call_name(expr.value) == "torch.finfo":
            # ``torch.finfo(torch.float32).max``: a dtype's limit, from its format
            dtype = self.qualname(expr.value.args[0].value) if isinstance(expr.value.args[0].value, (cst.Name, cst.Attribute)) else None
            return finfo(dtype, expr.attr.value) if dtype else None
        default = _lookup_default(expr)
        if default is not None:
            # ``cfg.get("adam_epsilon", 1e-8)``: the value unless the run's config sets it, as a
            # parameter's default is (below)
            return self.number(default, _depth + 1)
        name = self.qualname(expr) if isinstance(expr, (cst.Name, cst.Attribute)) else None
        if name in ("math.inf", "numpy.inf", "torch.inf", "np.inf"):
            return math.inf
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._init_constant(expr, _depth)
        if isinstance(expr, cst.Name):
            fn = self.enclosing_function(expr)
            if fn is not None:
                # A parameter with a numeric default, when nothing in the function rebinds it.
                v = self._param_default(fn, expr.value, _depth)
                if v is not None:
                    return v
                local = self._local_constant(fn, expr)
                if local is not None:
                    return self.number(local, _depth + 1)
        if isinstance(expr, cst.Name):
            bound = self.module_constants().get(expr.value)
            if bound is not None and bound is not expr:
                return self.number(bound, _depth + 1)
            if name and name != expr.value and self.project is not None:
                return self.project.constant(name)
        return None

    def _local_constant(self, fn: cst.FunctionDef, name: cst.Name) -> Optional[cst.BaseExpression]:
        """The value of a local of ``fn`` that the function binds once, by a plain assignment (a literal
        tuple unpacked included: ``alpha, gamma, eps = 0.25, 2.0, 1e-8``), when ``name`` reads it: the
        constant a hand-written loss names (doctr's LW-DETR focal cost, bug set 12). Not under the library
        policy's look at code no training runs (``Regime.any_fp16_use``), which reports only guards fixed where
        its users see them (a literal at the use, a module constant, a parameter default): a utility's own
        working constants (speechbrain's NMF separation, ``eps = 1e-20``, run by nobody in float16) stay its own."""
        regime = self._assumed
        if regime is not None and getattr(regime, "any_fp16_use", False):
            return None
        b = self.semantic.binding_of(name)
        if b is None or b.kind != "assign" or b.part or b.node is name or not isinstance(b.value, cst.BaseExpression):
            return None
        if b.scope.node is not fn or len(self.semantic.bindings(name.value, b.scope)) != 1:
            return None
        return b.value

    def _param_default(self, fn: cst.FunctionDef, name: str, depth: int) -> Optional[float]:
        p = fn.params
        for param in (*p.posonly_params, *p.params, *p.kwonly_params):
            if param.name.value == name and param.default is not None:
                if self.semantic.rebound_in(name, fn):
                    return None
                return self.number(param.default, depth + 1)
        return None

    def _init_constant(self, attr: cst.Attribute, depth: int) -> Optional[float]:
        """``self.eps`` set in ``__init__`` to a constant, or to an ``__init__`` parameter with a
        constant default (``def __init__(self, eps=1e-6): self.eps = eps``)."""
        value = self.init_attribute(attr, attr.attr.value)
        if value is None:
            return None
        return self.number(value, depth + 1)

    def init_attribute(self, node: cst.CSTNode, attr: str) -> Optional[cst.BaseExpression]:
        """The expression assigned to ``self.<attr>`` in the ``__init__`` of the class holding
        ``node`` (the last assignment wins; ``semantic.init_attribute``); None when it is not
        assigned there, or only as a part of an unpacked value."""
        cls = self.enclosing_class(node)
        if cls is None:
            return None
        b = self.semantic.init_attribute(cls, attr)
        return b.value if b is not None and not b.part else None  # type: ignore[return-value]

    def constant_definition(self, expr: cst.BaseExpression, _depth: int = 0) -> Optional[cst.BaseExpression]:
        """Where the constant a name stands for is written, in this file: the number literal of
        ``EPS = 1e-8`` (a module constant), of a parameter default ``eps=1e-20`` (the function's
        own, or ``__init__``'s behind ``self.eps = eps``), or of ``self.eps = 1e-8`` in ``__init__``.
        None for a literal, an imported constant, or anything computed: a fix of the value belongs
        at that definition, and its uses are the related locations."""
        if _depth > 4:
            return None
        if isinstance(expr, (cst.Integer, cst.Float)) or (
                isinstance(expr, cst.UnaryOperation) and isinstance(expr.expression, (cst.Integer, cst.Float))):
            return expr if _depth > 0 else None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            value = self.init_attribute(expr, expr.attr.value)
            return self.constant_definition(value, _depth + 1) if value is not None else None
        if not isinstance(expr, cst.Name):
            return None
        fn = self.enclosing_function(expr)
        if fn is not None:
            p = fn.params
            for param in (*p.posonly_params, *p.params, *p.kwonly_params):
                if param.name.value == expr.value:
                    if param.default is None or self._param_default(fn, expr.value, 0) is None:
                        return None
                    return self.constant_definition(param.default, _depth + 1)
            local = self._local_constant(fn, expr)
            if local is not None and self.number(local) is not None:
                return self.constant_definition(local, _depth + 1)
        bound = self.module_constants().get(expr.value)
        if bound is not None and bound is not expr and self.number(bound) is not None:
            return self.constant_definition(bound, _depth + 1)
        return None

    # ---- precision ------------------------------------------------------------------------------
    def regions(self) -> Dict[cst.CSTNode, PrecisionRegion]:
        """With blocks and functions that set a precision of their own."""
        if self._regions is None:
            regions: Dict[cst.CSTNode, PrecisionRegion] = {}
            for with_node in self.nodes(cst.With):
                for item in with_node.items:
                    region = self._region_from_call(self.with_item_call(item), with_node)
                    if region is not None:
                        regions[with_node] = region
            for fn in self.nodes(cst.FunctionDef):
                for dec in fn.decorators:
                    region = self._region_from_call(dec.decorator if isinstance(dec.decorator, cst.Call) else None, fn)
                    if region is not None:
                        regions[fn] = region
            self._regions = regions
        return self._regions

    def with_item_call(self, item: cst.WithItem) -> Optional[cst.Call]:
        """The call that opens a ``with`` item: the item itself, or for a name, the autocast call it
        holds (llm.c / nanoGPT: ``ctx = torch.amp.autocast(..., dtype=ptdtype) if device_type == "cuda"
        else nullcontext()`` then ``with ctx:``; either branch of such a choice, and any binding of
        the name that may reach the ``with``)."""
        expr = item.item
        if isinstance(expr, cst.Call):
            return expr
        if not isinstance(expr, cst.Name):
            return None
        for binding in self.semantic.reaching(expr.value, expr):
            if binding.kind != "assign" or binding.part:
                continue
            value = binding.value
            choices = [value.body, value.orelse] if isinstance(value, cst.IfExp) else [value]
            for choice in choices:
                if isinstance(choice, cst.Call) and autocast_signal(self.call_facts(choice)) is not None:
                    return choice
        return None

    def _region_from_call(self, call: Optional[cst.Call], owner: cst.CSTNode) -> Optional[PrecisionRegion]:
        if call is None:
            # A bare decorator ``@autocast`` is not valid for torch.autocast; ignore it.
            return None
        facts = self.call_facts(call)
        sig: Optional[Signal] = autocast_signal(facts)
        if sig is None and isinstance(owner, cst.With):
            from .autocast_helpers import helper_autocast
            helper = helper_autocast(self, call)
            if helper is not None:
                sig, where, line = helper
                what = f"`{self.code(call)[:40]}` (opens `torch.autocast` at {where}:{line})"
                return PrecisionRegion(owner, sig.dtype, sig.enabled, Evidence(what, self.path, lambda: self.line_of(call)))
        if sig is None:
            # torch.amp.custom_fwd(cast_inputs=torch.float32), or a project's own wrapper of it
            # (speechbrain's fwd_default_precision): the function runs with autocast off and
            # float32 inputs.
            cast = facts.kwargs.get("cast_inputs")
            if cast is not None and isinstance(owner, cst.FunctionDef):
                from .evidence import dtype_of_value
                if dtype_of_value(cast) == "float32":
                    what = f"{dotted_name(call.func) or 'custom_fwd'}(cast_inputs=torch.float32)"
                    return PrecisionRegion(owner, "float32", True, Evidence(what, self.path, lambda: self.line_of(call)))
            return None
        what = self.code(call)
        if len(what) > 60:
            what = what[:57] + "..."
        return PrecisionRegion(owner, sig.dtype, sig.enabled, Evidence(what, self.path, lambda: self.line_of(call)))

    def region_of(self, node: cst.CSTNode) -> Optional[PrecisionRegion]:
        """The innermost precision region lexically holding ``node``."""
        regions = self.regions()
        if not regions:
            return None
        for a in self.ancestors(node):
            r = regions.get(a)
            if r is not None:
                # A with-item's own call is not inside its block.
                return r
        return None


def _lookup_default(expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """The default of a config lookup with a constant key: ``cfg.get("eps", 1e-8)``,
    ``getattr(args, "eps", 1e-8)``; None for anything else."""
    if not isinstance(expr, cst.Call) or len(expr.args) != (2 if isinstance(expr.func, cst.Attribute) else 3) \
            or any(a.keyword is not None or a.star for a in expr.args):
        return None
    if isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "get":
        key, default = expr.args[0].value, expr.args[1].value
    elif isinstance(expr.func, cst.Name) and expr.func.value == "getattr":
        key, default = expr.args[1].value, expr.args[2].value
    else:
        return None
    return default if isinstance(key, cst.SimpleString) else None


def _literal_keys(value: Optional[cst.CSTNode]) -> Optional[Set[str]]:
    """The keys of ``{"a": 1}`` / ``{}`` / ``dict(a=1)`` when all are strings, else None."""
    if isinstance(value, cst.Dict):
        keys = set()
        for element in value.elements:
            key = getattr(element, "key", None)
            if not (isinstance(key, cst.SimpleString) and isinstance(key.evaluated_value, str)):
                return None
            keys.add(key.evaluated_value)
        return keys
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and value.func.value == "dict" \
            and all(a.keyword is not None for a in value.args):
        return {a.keyword.value for a in value.args}  # type: ignore[union-attr]
    return None

