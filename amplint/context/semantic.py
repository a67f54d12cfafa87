"""Scopes, bindings and references of one file, recorded during the file's one walk.

As pyflakes' ``Binding`` / ``Scope`` and ruff's ``SemanticModel``: every scope (module, class,
function, lambda, comprehension) holds the bindings made in it (assignment, augmented and
annotated assignment, ``for`` / comprehension / ``with ... as`` / walrus / ``except ... as``
targets, parameters, imports, ``def`` / ``class``; ``global`` / ``nonlocal`` send a binding to
the scope they name), and every name that is read is a reference. ``self.x = ...`` in a method is
an attribute binding of the method's class (so is ``self.add_module("x", ...)``).

The questions: what is a name bound to at a node (``lookup``: the last binding of its scope that
precedes the node in source order, then the enclosing scopes by Python's rules: a class scope is
not visible from the functions and comprehensions inside it), is a name rebound between two
nodes (``rebound_between``), every use of a binding (``uses``), the ``self.`` attributes a class
sets (``attribute_bindings``).

Flow is approximated by source order, as everywhere in amplint: in ``if c: x = a`` / ``else: x = b``
the use after both sees ``x = b``; a loop's later assignment is not seen by the loop's start.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Set

import libcst as cst

from .imports import dotted_name

MODULE, CLASS, FUNCTION, LAMBDA, COMPREHENSION = "module", "class", "function", "lambda", "comprehension"
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(eq=False)
class Scope:
    """A module, class, function, lambda or comprehension, and the names bound in it."""
    kind: str
    node: cst.CSTNode
    parent: Optional["Scope"]
    bindings: Dict[str, List["Binding"]] = field(default_factory=dict)  # in source order
    globals: Set[str] = field(default_factory=set)
    nonlocals: Set[str] = field(default_factory=set)

    def __repr__(self) -> str:
        name = getattr(getattr(self.node, "name", None), "value", "")
        return f"Scope({self.kind}{' ' + name if name else ''})"


@dataclass(eq=False)
class Binding:
    """One binding of a name.

    ``kind``: "assign" (``=``, annotated with a value), "augassign", "walrus", "for",
    "comprehension", "with", "except", "param", "star_param" (``*args`` / ``**kwargs``), "import",
    "def", "class", "attribute" (``self.x = ...`` in a method). ``node`` is what is bound (the
    target Name or Attribute, the Param, the ImportAlias, the def). ``value`` is what it holds:
    the assigned expression (the matching element when a literal tuple is unpacked), the
    ``AugAssign`` statement, the walrus' value, the iterable of a loop, the ``with`` item's
    expression, the ``except`` type, the Param; ``part`` when the target is one part of an
    unpacked value (``q, k, v = qkv.chunk(3)``). The binding is visible to code after ``anchor``
    in source order and outside it (``x = f(x)`` reads the previous ``x``); ``everywhere`` for a
    comprehension's targets, visible in the whole comprehension."""
    name: str
    kind: str
    node: cst.CSTNode
    anchor: cst.CSTNode
    scope: Scope
    value: Optional[cst.CSTNode] = None
    part: bool = False
    statement: Optional[cst.CSTNode] = None  # the Assign / AnnAssign / AugAssign / For / With ... holding it
    qualified: Optional[str] = None  # imports: the dotted name bound
    everywhere: bool = False

    def __repr__(self) -> str:
        return f"Binding({self.name!r}, {self.kind}, {self.scope!r})"


class SemanticModel:
    """Filled by ``FileContext``'s walk (``start``, then ``HANDLERS[type(node)]`` for every node in
    preorder with the scope it runs in; ``child_scope`` for the children of the node types in
    ``SCOPE_CHANGES``), then asked.
    ``ctx`` gives node order and parents. Nodes are keyed by ``id`` (the tree outlives the model)."""

    SCOPE_CHANGES = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda, *_COMPREHENSIONS, cst.Param, cst.CompFor})

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.module: Optional[Scope] = None
        self._scopes: Dict[int, Scope] = {}  # id(scope-creating node) -> its scope
        self._store: Dict[int, Binding] = {}  # id(bound Name) -> its binding
        self._skip: Set[int] = set()  # Names that neither bind nor read (attribute names, keywords, imports)
        self._loads: Dict[str, List[cst.Name]] = {}  # name -> the Names reading it, in source order
        self._scope_of: Dict[int, Scope] = {}  # id(reading Name) -> its scope
        self._resolved: Dict[int, Optional[Binding]] = {}
        self._attributes: Dict[int, Dict[str, List[Binding]]] = {}  # id(class) -> attr -> bindings
        self._init_helper_names: Dict[int, Set[str]] = {}  # id(class) -> the methods its __init__ calls on self

    def release(self) -> None:
        """Drop everything recorded (scopes and bindings refer to each other: a cycle only the
        garbage collector would free, holding the file's tree): the model answers nothing after."""
        for scope in self._scopes.values():
            scope.bindings.clear()
        self.__dict__.clear()

    # ---- recording (during the walk) ------------------------------------------------------------
    def start(self, module: cst.Module) -> Scope:
        """The module's scope, before the walk enters anything."""
        self.module = Scope(MODULE, module, None)
        self._scopes[id(module)] = self.module
        return self.module

    def enter(self, node: cst.CSTNode, parent: Optional[cst.CSTNode], scope: Scope) -> None:
        """Record what ``node`` binds or reads in ``scope`` (the walk calls ``HANDLERS`` directly)."""
        handler = _HANDLERS.get(type(node))
        if handler is not None:
            handler(self, node, parent, scope)

    def child_scope(self, node: cst.CSTNode, child: cst.CSTNode, scope: Scope) -> Scope:
        """The scope ``child`` of ``node`` (one of ``SCOPE_CHANGES``, entered in ``scope``) runs in:
        a def's parameters and body in its own; a parameter's default and annotation where the def
        is; a comprehension's first iterable outside it."""
        own = self._scopes.get(id(node))
        if own is not None:
            return own if _inside(node, child) else scope
        if isinstance(node, cst.Param):
            return scope.parent if child is not node.name and scope.parent is not None else scope
        if isinstance(node, cst.CompFor) and child is node.iter and isinstance(scope.node, _COMPREHENSIONS) \
                and scope.node.for_in is node:
            return scope.parent or scope
        return scope

    def _target_scope(self, name: str, scope: Scope) -> Scope:
        if name in scope.globals:
            return self.module  # type: ignore[return-value]
        if name in scope.nonlocals:
            s = scope.parent
            while s is not None and s.kind not in (FUNCTION, LAMBDA):
                s = s.parent
            return s or scope
        return scope

    def _bind(self, scope: Scope, name: str, kind: str, node: cst.CSTNode, anchor: cst.CSTNode, statement=None,
              value=None, part: bool = False, **extra) -> Binding:
        scope = self._target_scope(name, scope)
        b = Binding(name, kind, node, anchor, scope, value, part, statement, **extra)
        scope.bindings.setdefault(name, []).append(b)
        if isinstance(node, cst.Name):
            self._store[id(node)] = b
        return b

    def _bind_target(self, scope: Scope, target: cst.BaseExpression, kind: str, anchor, statement, value,
                     part: bool) -> None:
        if isinstance(target, cst.Name):
            self._bind(scope, target.value, kind, target, anchor, statement, value, part)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if not part and isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                for t, v in zip(elements, value.elements):
                    self._bind_target(scope, t, kind, anchor, statement, v.value, False)
            else:
                for t in elements:  # q, k, v = qkv.unbind(0): each is a part of the whole
                    self._bind_target(scope, t, kind, anchor, statement, value, True)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(scope, target.value, kind, anchor, statement, value, True)
        elif isinstance(target, cst.Attribute) and kind == "assign":
            self._attribute(scope, target, statement, value, part)

    def _attribute(self, scope: Scope, target: cst.Attribute, statement, value, part: bool) -> None:
        """``self.x = ...`` in a method: an attribute binding of the method's class."""
        if not (isinstance(target.value, cst.Name) and target.value.value == "self" and scope.kind == FUNCTION
                and scope.parent is not None and scope.parent.kind == CLASS):
            return
        b = Binding(target.attr.value, "attribute", target, statement, scope, value, part, statement)
        self._attributes.setdefault(id(scope.parent.node), {}).setdefault(target.attr.value, []).append(b)

    # node handlers (the node is being entered in ``scope``; its children come next)
    def _on_def(self, node, parent, scope) -> None:
        b = self._bind(scope, node.name.value, "def" if isinstance(node, cst.FunctionDef) else "class", node, node,
                       node, node)
        self._store[id(node.name)] = b
        self._scopes[id(node)] = Scope(FUNCTION if isinstance(node, cst.FunctionDef) else CLASS, node, scope)

    def _on_lambda(self, node, parent, scope) -> None:
        self._scopes[id(node)] = Scope(LAMBDA, node, scope)

    def _on_comprehension(self, node, parent, scope) -> None:
        self._scopes[id(node)] = Scope(COMPREHENSION, node, scope)

    def _on_param(self, node: cst.Param, parent, scope) -> None:
        star = isinstance(parent, cst.Parameters) and (node is parent.star_arg or node is parent.star_kwarg)
        self._bind(scope, node.name.value, "star_param" if star else "param", node.name, node, node, node)

    def _on_assign(self, node: cst.Assign, parent, scope) -> None:
        for t in node.targets:
            self._bind_target(scope, t.target, "assign", node, node, node.value, False)

    def _on_annassign(self, node: cst.AnnAssign, parent, scope) -> None:
        if node.value is not None:
            self._bind_target(scope, node.target, "assign", node, node, node.value, False)
        elif isinstance(node.target, cst.Name):
            self._skip.add(id(node.target))  # ``x: int`` binds nothing

    def _on_augassign(self, node: cst.AugAssign, parent, scope) -> None:
        if isinstance(node.target, cst.Name):
            # the target is read too: that reference is recorded when the walk reaches it
            target = self._target_scope(node.target.value, scope)
            b = Binding(node.target.value, "augassign", node.target, node, target, node, False, node)
            target.bindings.setdefault(b.name, []).append(b)

    def _on_for(self, node: cst.For, parent, scope) -> None:
        self._bind_target(scope, node.target, "for", node.iter, node, node.iter, True)

    def _on_compfor(self, node: cst.CompFor, parent, scope) -> None:
        for n in _names_in(node.target):
            self._bind(scope, n.value, "comprehension", n, node.iter, node, node.iter, True, everywhere=True)

    def _on_with(self, node: cst.With, parent, scope) -> None:
        for item in node.items:
            if item.asname is not None:
                self._bind_target(scope, item.asname.name, "with", item.item, node, item.item,
                                  not isinstance(item.asname.name, cst.Name))

    def _on_walrus(self, node: cst.NamedExpr, parent, scope) -> None:
        while scope.kind == COMPREHENSION and scope.parent is not None:
            scope = scope.parent  # a walrus in a comprehension binds in the scope around it
        if isinstance(node.target, cst.Name):
            self._bind(scope, node.target.value, "walrus", node.target, node, node, node.value)

    def _on_except(self, node: cst.ExceptHandler, parent, scope) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._bind(scope, node.name.name.value, "except", node.name.name, node.type or node, node, node.type)

    def _on_import(self, node, parent, scope) -> None:
        if isinstance(node, cst.ImportFrom):
            self._skip.update(id(n) for n in _chain(node.module))
            if isinstance(node.names, cst.ImportStar):
                return
        for alias in node.names:
            self._skip.update(id(n) for n in _chain(alias.name))
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local, bound = alias.asname.name.value, alias.asname.name
            else:
                chain = _chain(alias.name)
                local, bound = (chain[0].value, chain[0]) if chain else ("", None)
                if isinstance(node, cst.ImportFrom):
                    local = dotted_name(alias.name) or ""
            if local:
                b = self._bind(scope, local, "import", alias, node, node, None,
                               qualified=self.ctx.imports.resolve(local) if self.ctx.imports.binds(local) else None)
                if bound is not None:
                    self._store[id(bound)] = b

    def _on_global(self, node, parent, scope) -> None:
        names = {item.name.value for item in node.names}
        (scope.globals if isinstance(node, cst.Global) else scope.nonlocals).update(names)
        self._skip.update(id(item.name) for item in node.names)

    def _on_attribute(self, node: cst.Attribute, parent, scope) -> None:
        self._skip.add(id(node.attr))

    def _on_call(self, node: cst.Call, parent, scope) -> None:
        """``self.add_module("hm_loss_func", FocalLoss())`` in a method binds ``self.hm_loss_func``
        as ``self.hm_loss_func = FocalLoss()`` would (OpenPCDet's heads register their losses so)."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _REGISTERS_MODULE
                and isinstance(func.value, cst.Name) and func.value.value == "self" and len(node.args) == 2
                and all(a.keyword is None and not a.star for a in node.args)
                and isinstance(node.args[0].value, cst.SimpleString)):
            return
        name = node.args[0].value.evaluated_value
        if not (isinstance(name, str) and name.isidentifier() and scope.kind == FUNCTION
                and scope.parent is not None and scope.parent.kind == CLASS):
            return
        b = Binding(name, "attribute", node, parent, scope, node.args[1].value, False, parent)
        self._attributes.setdefault(id(scope.parent.node), {}).setdefault(name, []).append(b)

    def _on_arg(self, node: cst.Arg, parent, scope) -> None:
        if node.keyword is not None:
            self._skip.add(id(node.keyword))

    def _on_name(self, node: cst.Name, parent, scope) -> None:
        key = id(node)
        if key in self._store or key in self._skip:
            return
        self._loads.setdefault(node.value, []).append(node)
        self._scope_of[key] = scope

    # ---- questions ------------------------------------------------------------------------------
    def scope_of(self, node: cst.CSTNode) -> Scope:
        """The scope code at ``node`` runs in (a def's decorators, defaults and annotations run
        in the scope around it; its parameters and body in its own)."""
        found = self._scope_of.get(id(node))
        if found is not None:
            return found
        ctx = self.ctx
        child, p = node, ctx.parent(node)
        while p is not None:
            owner = self._scopes.get(id(p))
            if owner is not None and _inside(p, child):
                found = owner
                break
            if isinstance(p, cst.Param) and child is not p.name:
                child, p = self._skip_function(p)  # default / annotation: outside the def
                continue
            if isinstance(p, cst.CompFor) and child is p.iter and isinstance(ctx.parent(p), _COMPREHENSIONS) \
                    and ctx.parent(p).for_in is p:
                child, p = ctx.parent(p), ctx.parent(ctx.parent(p))  # the first iterable: outside
                continue
            child, p = p, ctx.parent(p)
        if found is None:
            found = self.module
        self._scope_of[id(node)] = found  # type: ignore[assignment]
        return found  # type: ignore[return-value]

    def _skip_function(self, param: cst.Param):
        fn = next(a for a in self.ctx.ancestors(param) if isinstance(a, (cst.FunctionDef, cst.Lambda)))
        return fn, self.ctx.parent(fn)

    def scopes(self) -> List[Scope]:
        """Every scope of the file: the module's first, then in source order."""
        return [self.module, *(s for s in self._scopes.values() if s is not self.module)]  # type: ignore[list-item]

    def scope_for(self, node: cst.CSTNode) -> Optional[Scope]:
        """The scope a def, class, lambda, comprehension or the module creates."""
        return self._scopes.get(id(node))

    def lookup(self, name: str, at: cst.CSTNode) -> Optional[Binding]:
        """The binding of ``name`` that code at ``at`` sees: in ``at``'s scope, the last binding
        before ``at`` in source order (not one whose statement holds ``at``), else the same in the
        enclosing scopes (class scopes only when ``at`` is directly in the class body). None for
        a builtin or an unknown name."""
        ctx = self.ctx
        order = ctx.order(at)
        scope: Optional[Scope] = self.scope_of(at)
        first = True
        while scope is not None:
            if name in scope.globals and scope is not self.module:
                scope = self.module
                continue
            if first or scope.kind != CLASS:
                found = self._visible(scope, name, at, order)
                if found is not None:
                    return found
            first = False
            scope = scope.parent
        return None

    def reaching(self, name: str, at: cst.CSTNode) -> List[Binding]:
        """The bindings of ``name`` that may be the one seen at ``at`` (newest first): ``lookup``'s,
        and the earlier ones of its scope back to the first that is certainly executed on the way
        to ``at`` (every block holding it also holds ``at``). ``if c: d = a`` / ``else: d, _ = f()``
        then ``x / d``: both branches' bindings reach. Loops and ``try`` bodies are taken as
        maybe skipped."""
        last = self.lookup(name, at)
        if last is None:
            return []
        order = self.ctx.order(at)
        candidates = [b for b in last.scope.bindings.get(last.name, ())
                      if b.everywhere or (self.ctx.order(b.anchor) < order and not self.ctx.is_ancestor(b.anchor, at))]
        out: List[Binding] = []
        for b in reversed(candidates[:candidates.index(last) + 1]):
            out.append(b)
            if self._dominates(b, at):
                break
        return out

    def _dominates(self, b: Binding, at: cst.CSTNode) -> bool:
        if b.kind in ("param", "star_param", "comprehension"):
            return True
        ctx = self.ctx
        stmt = b.statement if b.statement is not None else b.anchor
        at_ancestors = {id(a) for a in ctx.ancestors(at)}
        for a in ctx.ancestors(stmt):
            if a is b.scope.node:
                return True
            if id(a) not in at_ancestors and not isinstance(a, (cst.SimpleStatementLine, cst.Expr)):
                return False
        return True

    def _visible(self, scope: Scope, name: str, at: cst.CSTNode, order: int) -> Optional[Binding]:
        best = None
        for b in scope.bindings.get(name, ()):
            if b.everywhere or (self.ctx.order(b.anchor) < order and not self.ctx.is_ancestor(b.anchor, at)):
                best = b
        return best

    def binding_of(self, name: cst.Name) -> Optional[Binding]:
        """The binding a Name reads (its own binding for a Name that is bound)."""
        own = self._store.get(id(name))
        if own is not None:
            return own
        key = id(name)
        if key not in self._resolved:
            self._resolved[key] = self.lookup(name.value, name)
        return self._resolved[key]

    def uses(self, binding: Binding) -> List[cst.Name]:
        """Every Name that reads ``binding``, in source order."""
        return [n for n in self._loads.get(binding.name, ()) if self.binding_of(n) is binding]

    def references(self, name: str) -> List[cst.Name]:
        """Every Name reading ``name`` anywhere in the file, in source order."""
        return list(self._loads.get(name, ()))

    def bindings(self, name: str, scope: Scope) -> List[Binding]:
        """The bindings of ``name`` made in ``scope`` (not in scopes inside it), in source order."""
        return list(scope.bindings.get(name, ()))

    def rebound_between(self, name: str, start: cst.CSTNode, end: cst.CSTNode) -> bool:
        """Is ``name``, as seen at ``start``, bound again after ``start`` and before ``end``?"""
        seen = self.lookup(name, start)
        scope = seen.scope if seen is not None else self.scope_of(start)
        lo, hi = self.ctx.order(start), self.ctx.order(end)
        return any(b is not seen and lo < self.ctx.order(b.anchor) < hi for b in scope.bindings.get(name, ()))

    def new_each_iteration(self, name: str, at: cst.CSTNode, loop: cst.CSTNode, depth: int = 0) -> bool:
        """Does ``name``, as seen at ``at``, hold a new value on each iteration of ``loop``: bound by
        its target (``for group, opt in d.items()``), or assigned in its body from such a value
        (``opt = self.optimizers[group]``)? An assignment of the same thing each time round
        (``opt = self.main_optimizer``) is not."""
        seen = self.lookup(name, at)
        scope = seen.scope if seen is not None else self.scope_of(at)
        for b in scope.bindings.get(name, ()):
            if b.anchor is loop or b.statement is loop:
                return isinstance(loop, cst.For)
            if depth < 3 and b.kind == "assign" and isinstance(b.value, cst.CSTNode) \
                    and self.ctx.is_ancestor(loop, b.anchor):
                reads = [n for n in _read_names(b.value)]
                if any(self.new_each_iteration(n, b.anchor, loop, depth + 1) for n in reads):
                    return True
        return False

    def reads_new_each_iteration(self, expr: cst.CSTNode, at: cst.CSTNode, loop: cst.CSTNode) -> bool:
        """Does ``expr`` read a name that holds a new value on each iteration of ``loop``
        (``new_each_iteration``): ``opt``, ``optimizers[i]``, ``self.opts[group]``?"""
        return any(self.new_each_iteration(n, at, loop) for n in _read_names(expr))

    def computed_from(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int = 3) -> Set[str]:
        """The names ``expr`` (seen at ``at``) is computed from: those it reads and, through their
        assignments, those their values read, ``depth`` assignments back (``total = sum(m.values())``
        after ``m = {k: v.item() for k, v in loss_dict.items()}``: ``m``, ``loss_dict``...)."""
        out: Set[str] = set()
        todo = [(n, at, 0) for n in _read_names(expr)]
        while todo:
            name, seen_at, level = todo.pop()
            if name in out:
                continue
            out.add(name)
            b = self.lookup(name, seen_at)
            if level < depth and b is not None and b.kind in ("assign", "walrus", "augassign") \
                    and isinstance(b.value, cst.CSTNode):
                todo.extend((n, b.anchor, level + 1) for n in _read_names(b.value))
        return out

    def rebound_in(self, name: str, scope_node: cst.CSTNode) -> bool:
        """Is ``name`` bound in the scope of ``scope_node`` (a def...) by anything but a parameter?"""
        scope = self._scopes.get(id(scope_node))
        return scope is not None and any(b.kind not in ("param", "star_param") for b in scope.bindings.get(name, ()))

    def attribute_bindings(self, cls: cst.ClassDef, attr: str) -> List[Binding]:
        """The ``self.<attr> = ...`` bindings in the methods of ``cls``, in source order."""
        return list(self._attributes.get(id(cls), {}).get(attr, ()))

    def attributes_of(self, cls: cst.ClassDef) -> List[Binding]:
        """Every ``self.<attr> = ...`` binding in the methods of ``cls``, in source order."""
        return sorted((b for bs in self._attributes.get(id(cls), {}).values() for b in bs),
                      key=lambda b: self.ctx.order(b.node))

    def init_attribute(self, cls: cst.ClassDef, attr: str) -> Optional[Binding]:
        """The last ``self.<attr> = ...`` of ``cls``'s ``__init__``, or, when ``__init__`` binds
        none, of the methods it calls on ``self`` (``self.build_losses()`` doing
        ``self.add_module('hm_loss_func', FocalLossCenterNet())``: OpenPCDet's heads)."""
        found = None
        bindings = self._attributes.get(id(cls), {}).get(attr, ())
        for b in bindings:
            if isinstance(b.scope.node, cst.FunctionDef) and b.scope.node.name.value == "__init__":
                found = b
        if found is None and bindings:
            helpers = self._init_helpers(cls)
            for b in bindings:
                if isinstance(b.scope.node, cst.FunctionDef) and b.scope.node.name.value in helpers:
                    found = b
        return found

    def _init_helpers(self, cls: cst.ClassDef) -> Set[str]:
        """The names of the methods ``cls``'s own ``__init__`` calls as ``self.<name>(...)``."""
        found = self._init_helper_names.get(id(cls))
        if found is None:
            found = self._init_helper_names[id(cls)] = set()
            for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
                if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
                    stmt.visit(_SelfCalls(found))
        return found


class _SelfCalls(cst.CSTVisitor):
    """Collects the ``<name>`` of every ``self.<name>(...)`` call it visits."""

    def __init__(self, into: Set[str]) -> None:
        self.into = into

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            self.into.add(func.attr.value)


def _inside(owner: cst.CSTNode, child: cst.CSTNode) -> bool:
    """Does ``child`` of the scope-creating ``owner`` run in the scope ``owner`` creates?"""
    if isinstance(owner, (cst.FunctionDef, cst.Lambda)):
        return child is owner.body or child is owner.params
    if isinstance(owner, cst.ClassDef):
        return child is owner.body
    return isinstance(owner, _COMPREHENSIONS)  # all of it; its first iterable is handled by the callers


def _names_in(target: cst.BaseExpression) -> List[cst.Name]:
    if isinstance(target, cst.Name):
        return [target]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names_in(e.value)]
    if isinstance(target, cst.StarredElement):
        return _names_in(target.value)
    return []


# ``nn.Module`` methods that register a submodule under a name given as a string.
_REGISTERS_MODULE = frozenset({"add_module", "register_module"})

_HANDLERS = {
    cst.FunctionDef: SemanticModel._on_def, cst.ClassDef: SemanticModel._on_def,
    cst.Lambda: SemanticModel._on_lambda,
    cst.ListComp: SemanticModel._on_comprehension, cst.SetComp: SemanticModel._on_comprehension,
    cst.DictComp: SemanticModel._on_comprehension, cst.GeneratorExp: SemanticModel._on_comprehension,
    cst.Param: SemanticModel._on_param,
    cst.Assign: SemanticModel._on_assign, cst.AnnAssign: SemanticModel._on_annassign,
    cst.AugAssign: SemanticModel._on_augassign,
    cst.For: SemanticModel._on_for, cst.CompFor: SemanticModel._on_compfor,
    cst.With: SemanticModel._on_with, cst.NamedExpr: SemanticModel._on_walrus,
    cst.ExceptHandler: SemanticModel._on_except,
    cst.Import: SemanticModel._on_import, cst.ImportFrom: SemanticModel._on_import,
    cst.Global: SemanticModel._on_global, cst.Nonlocal: SemanticModel._on_global,
    cst.Attribute: SemanticModel._on_attribute, cst.Arg: SemanticModel._on_arg, cst.Call: SemanticModel._on_call,
    cst.Name: SemanticModel._on_name,
}


def _chain(node) -> List[cst.Name]:
    """The Names of a dotted name (``a.b.c``), head first."""
    out = []
    while isinstance(node, cst.Attribute):
        out.append(node.attr)
        node = node.value
    if isinstance(node, cst.Name):
        out.append(node)
    return out[::-1]


SemanticModel.HANDLERS = _HANDLERS


def _read_names(expr: cst.CSTNode) -> List[str]:
    """The names an expression reads (not attribute names after a dot)."""
    out: List[str] = []

    class _Reads(cst.CSTVisitor):
        def visit_Attribute(self, node: cst.Attribute) -> bool:
            node.value.visit(self)
            return False

        def visit_Name(self, node: cst.Name) -> None:
            out.append(node.value)

    expr.visit(_Reads())
    return out
