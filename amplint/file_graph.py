"""One file's part of the project's call graph and class hierarchy, as small plain data.

Extracted from the stdlib ``ast`` of the file (the tree ``summary.summarise`` parses once) and kept
in the file's summary, so the project index (``amplint.project_index``) is built from the cache
without reading any file. Names are resolved through the file's imports the way ``FileContext``
resolves them (``ImportTable``): a call ``nll_loss(x)`` after ``from losses import nll_loss`` has
the callee ``losses.nll_loss``; which project module that is, is the index's question.

``file_graph(tree, module, source)`` returns::

    {"functions": [[qualname, line, params, kwonly, vararg, kwarg], ...],  # every def, methods too
     "classes":   [[qualname, line, [base, ...]], ...],                    # bases resolved
     "names":     {local: dotted, ...},             # what the file's imports bind (re-exports)
     "calls":     [[caller, callee, line, col, [[how, text, kind], ...], on_self], ...],
     "loose":     [[caller, "name.method", line, col, [[how, text, kind], ...], False], ...]}

``qualname`` is the dotted path inside the module (``Net.forward``; a nested ``def`` is
``outer.inner``); ``caller`` is the qualname of the innermost enclosing def ("" at module level;
lambdas and comprehensions belong to the def around them). A call is kept when its callee is a
name or attribute chain whose head is an imported name, a module-level definition of the file, or
``self`` / ``cls`` in a method (``self.m`` is ``<module>.<Class>.m``); calls on local values
(``x.view(...)``) and builtins are left out. Each argument is ``[how, text, kind]``: ``how`` is
"" (positional), the keyword, ``"*"`` or ``"**"``; ``text`` its source (at most 60 characters);
``kind`` one of "number", "string", "constant" (True / None / ...), "name", "attribute", "call",
"other". ``on_self`` is True for ``self.m(...)`` / ``cls.m(...)`` and for a method called through an
instance the file holds (``self.coder.encode(...)`` after ``self.coder = BoxCoder()``: the callee is
``<BoxCoder's dotted name>.encode``); ``self`` is not among the arguments. ``loose`` holds the calls
of a method on a ``for`` target of the def (``for name, metric_fn in self.metrics.items():
metric_fn.update(preds, target)``): an object of a type the graph does not know, whose calls only a
question asked by the method's name reads (``ProjectIndex.calls_named``).
"""
from __future__ import annotations

import ast
import re
from typing import Any, Dict, List, Optional, Tuple

from .context.evidence import ast_dotted
from .context.imports import ImportTable

TEXT = 60  # characters of an argument's source kept


def _kind(node: ast.AST) -> str:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool) or v is None or v is Ellipsis:
            return "constant"
        if isinstance(v, (int, float, complex)):
            return "number"
        return "string"
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Attribute):
        return "attribute"
    if isinstance(node, ast.Call):
        return "call"
    return "other"


# ASCII text that ``" ".join(text.split())`` leaves as it is: no whitespace but single spaces between
# other characters (str.split's ASCII whitespace: \t \n \x0b \x0c \r \x1c-\x1f and the space)
_PLAIN = re.compile(rb"(?:[^\s\x1c-\x1f]+(?: [^\s\x1c-\x1f]+)*)?")


class _Source:
    """Source text of a node from its positions (``ast`` columns are UTF-8 byte offsets)."""

    def __init__(self, source: bytes) -> None:
        self.lines = source.splitlines()

    def text(self, node: ast.AST) -> str:
        first, last = node.lineno - 1, (getattr(node, "end_lineno", None) or node.lineno) - 1
        end_col = getattr(node, "end_col_offset", None)
        if not 0 <= first <= last < len(self.lines) or end_col is None:
            return ""
        if first == last:
            raw = self.lines[first][node.col_offset:end_col]
            if raw.isascii() and _PLAIN.fullmatch(raw):
                text = raw.decode("ascii")  # no whitespace but single spaces between words: as it is
                return text if len(text) <= TEXT else text[:TEXT - 3] + "..."
        else:
            parts = [self.lines[first][node.col_offset:], *self.lines[first + 1:last], self.lines[last][:end_col]]
            raw = b" ".join(p.strip() for p in parts)
        text = " ".join(raw.decode("utf-8", "replace").split())
        return text if len(text) <= TEXT else text[:TEXT - 3] + "..."


def _params(fn) -> List[Any]:
    a = fn.args
    return [[p.arg for p in (*a.posonlyargs, *a.args)], [p.arg for p in a.kwonlyargs],
            a.vararg is not None, a.kwarg is not None]


def file_graph(tree: ast.Module, module: Optional[str], source: bytes, parents=None,
               is_package: bool = False) -> Dict[str, Any]:
    """The functions, classes, import bindings and calls of one file (see the module docstring).
    ``parents`` is the tree's node list and parent map when the caller has them already
    (``precision_facts._Parents``: one walk of the tree serves both); ``is_package`` for an
    ``__init__.py`` (its relative imports are relative to the package itself)."""
    if parents is None:
        parents = _Tree(tree)
    parent = parents.parent
    imports = ImportTable(f"{module}.__init__" if is_package and module else module)
    stars: List[str] = []
    prefix = f"{module}." if module else ""
    top = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    src = _Source(source)
    defs: Dict[int, str] = {}  # id(def or class) -> its qualname

    def qualname(node: ast.AST) -> str:
        q = defs.get(id(node))
        if q is None:
            outer = _owner(node, parent, _SCOPES)
            q = defs[id(node)] = (qualname(outer) + "." if outer is not None else "") + node.name
        return q

    def resolve(dotted: str, cls: Optional[str]) -> Optional[str]:
        head, _, rest = dotted.partition(".")
        if head in ("self", "cls") and cls is not None and rest:
            return f"{prefix}{cls}.{rest}"
        if imports.binds(head):
            return imports.resolve(dotted)
        if head in top:
            return prefix + dotted
        return None

    functions, classes, calls = [], [], []
    for node in parents.of(ast.FunctionDef, ast.AsyncFunctionDef):
        functions.append([qualname(node), node.lineno, *_params(node)])
    for node in parents.of(ast.ClassDef):
        classes.append([qualname(node), node.lineno, [d for d in map(ast_dotted, node.bases) if d is not None]])
    for node in parents.of(ast.Call):
        func = node.func
        # ``(AMPTrainer if cfg.amp else SimpleTrainer)(model, ...)`` calls one of the branches:
        # each is recorded (detectron2's lazyconfig_train_net picks its trainer so)
        branches = []
        while isinstance(func, ast.IfExp):
            branches.append(func.body)
            func = func.orelse
        for b in (*branches, func):
            d = ast_dotted(b)
            if d is not None:
                calls.append((node, d, None))
        if isinstance(func, ast.Name) and func.id == "map" and len(node.args) == 2 \
                and not any(isinstance(a, ast.Starred) for a in node.args):
            # ``map(log, (orig_mel, recon_mel))`` / ``map(self.f, xs)`` calls ``f`` on each element
            # (audiolm-pytorch's soundstream loss): one call per element of a literal sequence,
            # else one whose argument is unknown (``*xs``)
            d = ast_dotted(node.args[0])
            seq = node.args[1]
            if d is not None:
                if isinstance(seq, (ast.Tuple, ast.List)) and not any(isinstance(e, ast.Starred) for e in seq.elts):
                    calls.extend((node, d, [["", src.text(e), _kind(e)]]) for e in seq.elts)
                else:
                    calls.append((node, d, [["*", src.text(seq), _kind(seq)]]))
    for node in parents.of(ast.Import, ast.ImportFrom):
        if isinstance(node, ast.Import):
            for a in node.names:
                imports.add_import(a.name, a.asname)
        else:
            imports.add_from_import(node.module or "", [(a.name, a.asname) for a in node.names], node.level)
            if any(a.name == "*" for a in node.names):
                stars.append(_absolute(node.module or "", node.level, imports.module_name))
    # Resolved once every import is known (an import inside a function binds for the whole file,
    # as in FileContext's table).
    for c in classes:
        c[2] = [resolve(d, None) or d for d in c[2]]
    instances = _instances(parents, parent, qualname, lambda d: resolve(d, None))
    out_calls = []
    # ``map`` bound by the file (an import, a def, a module-level assignment) or by a def around the
    # call (a parameter, an assignment) may not be the builtin
    binders = set()
    if any(m is not None for _, _, m in calls):
        for n in parents.nodes:
            if (isinstance(n, ast.arg) and n.arg == "map") or (isinstance(n, ast.Name) and n.id == "map"
                                                                and not isinstance(n.ctx, ast.Load)):
                if isinstance(n, ast.arg):  # a parameter: of the def whose ``arguments`` hold it
                    owner = parent.get(id(parent.get(id(n))))
                    owner = owner if isinstance(owner, _FUNCTIONS) else _owner(n, parent, _FUNCTIONS)
                else:
                    owner = _owner(n, parent, _FUNCTIONS)
                binders.add(id(owner) if owner is not None else None)
    shadowed = imports.binds("map") or "map" in top or None in binders
    owners: Dict[int, Optional[ast.AST]] = {}
    # the names each def (None: module level) binds as a ``for`` target: ``metric_fn.update(preds,
    # target)`` in ``for name, metric_fn in self.metrics.items():`` is a method call on an object the
    # index does not type, kept apart ("loose") for the questions asked by a method's name
    loop_names: Dict[Optional[int], set] = {}
    for node in parents.of(ast.For, ast.AsyncFor):
        fn = _memo_owner(node, parent, owners)
        bound = loop_names.setdefault(id(fn) if fn is not None else None, set())
        todo = [node.target]
        while todo:
            t = todo.pop()
            if isinstance(t, ast.Name):
                bound.add(t.id)
            elif isinstance(t, (ast.Tuple, ast.List)):
                todo.extend(t.elts)
    loose = []
    for call, d, mapped in calls:
        fn = _memo_owner(call, parent, owners)
        if mapped is not None and (shadowed or any(id(f) in binders for f in _chain(fn, parent))):
            continue
        cls = None
        if d.partition(".")[0] in ("self", "cls") and fn is not None:
            # in a method (or a def nested in one), ``self`` is an instance of the method's class
            c = _owner(fn, parent, (ast.ClassDef,))
            cls = qualname(c) if c is not None else None
        through = _instance_callee(d, cls, fn, instances)
        callee = through or resolve(d, cls)
        receiver, dot, attr = d.partition(".")
        on_loop_name = callee is None and mapped is None and dot and "." not in attr \
            and receiver in loop_names.get(id(fn) if fn is not None else None, ())
        if callee is None and not on_loop_name:
            continue
        args = list(mapped) if mapped is not None else []
        for a in call.args if mapped is None else ():
            if isinstance(a, ast.Starred):
                args.append(["*", src.text(a.value), _kind(a.value)])
            else:
                args.append(["", src.text(a), _kind(a)])
        for k in call.keywords if mapped is None else ():
            args.append([k.arg or "**", src.text(k.value), _kind(k.value)])
        if on_loop_name:
            loose.append([qualname(fn) if fn is not None else "", d, call.lineno, call.col_offset, args, False])
            continue
        out_calls.append([qualname(fn) if fn is not None else "", callee, call.lineno, call.col_offset, args,
                          cls is not None or through is not None])
    functions.sort(key=lambda f: (f[1], f[0]))
    classes.sort(key=lambda c: (c[1], c[0]))
    out_calls.sort(key=lambda c: (c[2], c[3]))
    loose.sort(key=lambda c: (c[2], c[3]))
    names = dict(sorted(imports.items()))
    # ``from .train_loop import *`` (detectron2.engine): "*<module>" keys, which no identifier can be
    names.update((f"*{m}", m) for m in stars if m)
    return {"functions": functions, "classes": classes, "names": names, "calls": out_calls, "loose": loose}


def _chain(fn, parent: Dict[int, ast.AST]):
    """``fn`` and the defs around it."""
    while fn is not None:
        yield fn
        fn = _owner(fn, parent, _FUNCTIONS)


def _absolute(module: str, level: int, importer: Optional[str]) -> str:
    """The module ``from <level dots><module> import *`` names, in a file of module ``importer``."""
    if not level:
        return module
    base = (importer or "").split(".")
    base = base[: len(base) - level] if level <= len(base) else []
    return ".".join([*base, module] if module else base)


# Module methods that return the module itself (``Head().cuda().eval()`` is still the Head built).
_SAME_MODULE_METHODS = {"cuda", "cpu", "to", "eval", "train", "float", "half", "bfloat16", "double", "requires_grad_",
                        "to_empty", "share_memory"}


def _instances(parents, parent, qualname, resolve) -> Dict[Any, str]:
    """What instances the file holds, for calls of their methods: ``(class qualname, attr)`` for
    ``self.coder = BoxCoder(...)`` in any method of the class, ``(id(def), name)`` for a local
    ``coder = BoxCoder(...)`` (``(None, name)`` for a script's module-level ``model = Head().cuda()``:
    a device move or a mode switch returns the module), each to the class's dotted name (``BoxCoder`` resolved through the
    file's imports). A name assigned instances of two classes, or assigned anything else as well,
    is left out. Only classes by their spelling (a capitalised last name) outside torch: ``self.opt =
    torch.optim.AdamW(...)`` stays a value whose calls the graph does not follow."""
    found: Dict[Any, Optional[str]] = {}

    def bind(key, value: Optional[str]) -> None:
        found[key] = value if found.get(key, value) == value else None

    for node in parents.of(ast.Assign, ast.AnnAssign, ast.AugAssign):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        elif isinstance(node, ast.AugAssign):
            targets, value = [node.target], None  # ``self.coder += x``: no longer one class's instance
        else:
            continue
        built = None
        # ``model = Head().cuda()``: a device move or mode switch returns the module built
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr in _SAME_MODULE_METHODS and isinstance(value.func.value, ast.Call):
            value = value.func.value
        if isinstance(value, ast.Call) and len(targets) == 1:
            d = ast_dotted(value.func)
            last = d.rpartition(".")[2] if d else ""
            dotted = resolve(d) if d and last[:1].isupper() else None
            if dotted and not dotted.startswith("torch."):
                built = dotted
        fn = _owner(node, parent, _FUNCTIONS)
        for t in targets:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self" and fn is not None:
                c = _owner(fn, parent, (ast.ClassDef,))
                if c is not None:
                    bind((qualname(c), t.attr), built)
            elif isinstance(t, ast.Name):
                bind((id(fn) if fn is not None else None, t.id), built)  # a script's module-level names too
    return {k: v for k, v in found.items() if v is not None}


def _instance_callee(dotted: str, cls: Optional[str], fn, instances: Dict[Any, str]) -> Optional[str]:
    """The method a call ``self.coder.encode`` / ``coder.encode`` runs, as ``<class>.encode``,
    when ``self.coder`` / ``coder`` holds an instance of one class (``_instances``)."""
    parts = dotted.split(".")
    if len(parts) == 3 and parts[0] == "self" and cls is not None:
        held = instances.get((cls, parts[1]))
    elif len(parts) == 2:
        held = instances.get((id(fn) if fn is not None else None, parts[0]))
    else:
        return None
    return f"{held}.{parts[-1]}" if held is not None else None


def walk_with_parents(tree: ast.AST) -> Tuple[List[ast.AST], Dict[int, ast.AST]]:
    """Every node of ``tree`` in ``ast.walk``'s order and each one's parent (by ``id``): the loop of
    ``ast.iter_child_nodes`` written out (its generator cost a third of the walk), reading only the
    fields that can hold nodes (``_node_fields``)."""
    parent: Dict[int, ast.AST] = {}
    nodes: List[ast.AST] = [tree]
    append, node_type = nodes.append, ast.AST
    fields_of = _NODE_FIELDS
    for node in nodes:  # grows while it is read: breadth first
        cls = node.__class__
        names = fields_of.get(cls)
        if names is None:
            names = _node_fields(cls)
        for name in names:
            value = getattr(node, name, None)
            if value.__class__ is list:
                for child in value:
                    if isinstance(child, node_type):
                        parent[id(child)] = node
                        append(child)
            elif isinstance(value, node_type):
                parent[id(value)] = node
                append(value)
    return nodes, parent


# The fields of CPython's syntax tree that never hold a node (names, numbers, constants, strings:
# ``identifier``, ``int``, ``string`` and ``constant`` in its grammar, Parser/Python.asdl):
# ``walk_with_parents`` does not read them.
_NOT_NODES = frozenset({"name", "id", "attr", "arg", "asname", "module", "level", "names", "value", "kind",
                        "conversion", "type_comment", "simple", "is_async", "rest", "kwd_attrs", "tag", "lineno"})
_NOT_NODES_OF = {
    # (class name, field): a field of that name holds no node in these classes only
    "value": {"Constant", "MatchSingleton"},
    "names": {"Global", "Nonlocal"},
    "name": {"FunctionDef", "AsyncFunctionDef", "ClassDef", "alias", "ExceptHandler", "MatchStar", "MatchAs"},
    "lineno": {"TypeIgnore"},
}
_NODE_FIELDS: Dict[type, Tuple[str, ...]] = {}


def _node_fields(cls: type) -> Tuple[str, ...]:
    fields = tuple(f for f in getattr(cls, "_fields", ())
                   if f not in _NOT_NODES or (f in _NOT_NODES_OF and cls.__name__ not in _NOT_NODES_OF[f]))
    _NODE_FIELDS[cls] = fields
    return fields


class _Tree:
    """Every node of a tree and each one's parent (``precision_facts._Parents`` is one;
    ``summarise`` passes that one), and the nodes of given types (``of``)."""
    def __init__(self, tree: ast.AST) -> None:
        self.nodes, self.parent = walk_with_parents(tree)
        self._of: Dict[tuple, List[ast.AST]] = {}

    def of(self, *types: type) -> List[ast.AST]:
        """The nodes of exactly these types, in ``nodes``' order (the parser makes no subclasses of
        them): the questions about a file each look at a few types, not at every node."""
        found = self._of.get(types)
        if found is None:
            if not self._of:  # the nodes grouped by type, in one pass
                groups: Dict[type, List[ast.AST]] = {}
                for node in self.nodes:
                    group = groups.get(node.__class__)
                    if group is None:
                        groups[node.__class__] = [node]
                    else:
                        group.append(node)
                self._of.update(((t,), g) for t, g in groups.items())
            present = [t for t in types if (t,) in self._of]
            if len(present) <= 1:  # (FunctionDef, AsyncFunctionDef) in a file with no async def
                found = self._of[(present[0],)] if present else []
            else:
                wanted = frozenset(types)
                found = [node for node in self.nodes if node.__class__ in wanted]
            self._of[types] = found
        return found


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _owner(node: ast.AST, parent: Dict[int, ast.AST], kinds) -> Optional[ast.AST]:
    """The innermost ``kinds`` node whose body holds ``node`` (a def's decorators and defaults are
    evaluated where the def is, so they belong to the scope around it)."""
    child, p = node, parent.get(id(node))
    while p is not None:
        if isinstance(p, kinds) and _in_body(p, child):
            return p
        child, p = p, parent.get(id(p))
    return None


def _memo_owner(node: ast.AST, parent: Dict[int, ast.AST], memo: Dict[int, Optional[ast.AST]]) -> Optional[ast.AST]:
    """``_owner(node, parent, _FUNCTIONS)``, remembering the answer for each node on the way up in
    ``memo``: a node's owner is its parent when that is a def whose body holds it, else its
    parent's owner (the calls of one function share the climb)."""
    path = []
    child, p = node, parent.get(id(node))
    found = None
    while p is not None:
        if isinstance(p, _FUNCTIONS) and _in_body(p, child):
            found = p
            break
        known = memo.get(id(p), memo)
        if known is not memo:
            found = known
            break
        path.append(p)
        child, p = p, parent.get(id(p))
    for n in path:
        memo[id(n)] = found
    return found


def _in_body(scope: ast.AST, child: ast.AST) -> bool:
    if isinstance(scope, ast.ClassDef):
        return child not in scope.bases and child not in scope.decorator_list and \
            all(child is not k for k in scope.keywords)
    return child is not scope.args and child not in scope.decorator_list and child is not scope.returns


def check_graph(data) -> None:
    """ValueError when ``data`` is not what ``file_graph`` returns (a cache entry from elsewhere)."""
    def strings(v) -> bool:
        return isinstance(v, list) and all(isinstance(x, str) for x in v)

    def number(v) -> bool:
        return isinstance(v, int) and not isinstance(v, bool)

    if not isinstance(data, dict):
        raise ValueError("bad graph")
    names = data.get("names")
    if not (isinstance(names, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in names.items())):
        raise ValueError("bad graph names")
    for f in _items(data.get("functions")):
        if not (isinstance(f, list) and len(f) == 6 and isinstance(f[0], str) and number(f[1]) and strings(f[2])
                and strings(f[3]) and isinstance(f[4], bool) and isinstance(f[5], bool)):
            raise ValueError("bad graph function")
    for c in _items(data.get("classes")):
        if not (isinstance(c, list) and len(c) == 3 and isinstance(c[0], str) and number(c[1]) and strings(c[2])):
            raise ValueError("bad graph class")
    for c in [*_items(data.get("calls")), *_items(data.get("loose", []))]:
        if not (isinstance(c, list) and len(c) == 6 and isinstance(c[0], str) and isinstance(c[1], str)
                and number(c[2]) and number(c[3]) and isinstance(c[4], list) and isinstance(c[5], bool)
                and all(isinstance(a, list) and len(a) == 3 and all(isinstance(x, str) for x in a) for a in c[4])):
            raise ValueError("bad graph call")


def _items(v) -> list:
    if not isinstance(v, list):
        raise ValueError("bad graph list")
    return v
