"""Which calls of a function take a path through it: the literal tests around a node (``if mode ==
'cube':``, ``if init is True:``, ``if return_logits: return logits`` before it) and the literal
arguments each call passes or leaves at their defaults. Shared by ``conditions.never_run_by_callers``
(a branch no caller takes) and the precision model's autocast of a helper (a call under autocast
whose literal argument sends it down another branch does not carry autocast to the node).
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from .callers import argument_for


def _exits(block) -> bool:
    body = block.body
    stmts = body if isinstance(block, cst.SimpleStatementSuite) else list(body)
    for stmt in stmts:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else [stmt]
        if any(isinstance(s, (cst.Return, cst.Continue, cst.Break, cst.Raise)) for s in smalls):
            return True
    return False


def path_needs(ctx, node: cst.CSTNode, fn: cst.FunctionDef, subject=None) -> List[Tuple[str, object, bool, bool]]:
    """What the parameters of ``fn`` must be for ``node`` to run, from the literal tests of the
    ``if`` statements around it and of the earlier ``if flag: return`` of its blocks: (parameter,
    literal, equal, truth the path needs) each; empty when nothing is known or a test names no
    parameter of ``fn``. ``subject`` maps a tested expression to the parameter it stands for (by
    default a name of ``fn``'s own; ``self_option_needs``: ``self.sigmoid`` for ``__init__``'s
    ``sigmoid``); tests it maps to None are not read."""
    needs = []
    child = node
    for a in ctx.ancestors(node):
        if a is fn:
            break
        if isinstance(a, cst.IndentedBlock):
            # ``if return_logits: return logits`` earlier in the block: the rest runs only where it is false
            for stmt in a.body:
                if stmt is child:
                    break
                if isinstance(stmt, cst.If) and stmt.orelse is None and _exits(stmt.body):
                    test = _literal_test(ctx, stmt.test, subject)
                    if test is not None:
                        needs.append((*test, False))
        child = a
        if not isinstance(a, cst.If):
            continue
        test = _literal_test(ctx, a.test, subject)
        if test is None:
            continue
        if ctx.is_ancestor(a.body, node):
            needs.append((*test, True))
        elif a.orelse is not None and ctx.is_ancestor(a.orelse, node):
            needs.append((*test, False))
    params = _params(fn) if subject is None else None
    if params is not None and any(name not in params for name, _, _, _ in needs):
        return []
    return needs


def self_option_needs(ctx, node: cst.CSTNode, fn: cst.FunctionDef):
    """(``__init__``, its parameters' needs) for the tests of options the instance stores, around
    ``node`` in a method ``fn`` of a module-level class: ``if self.sigmoid:`` where ``__init__`` does
    ``self.sigmoid = sigmoid`` and nothing else in the class assigns ``self.sigmoid`` (Transfer-Learning-
    Library's DomainAdversarialLoss: the BCE branch runs only for instances built with ``sigmoid``
    true). None when no such test is around ``node``."""
    cls = ctx.enclosing_class(fn)
    if cls is None or ctx.parent(cls) is not ctx.module or ctx.parent(fn) is not cls.body:
        return None
    init = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)
    if init is None or init is fn:
        return None
    params = _params(init)
    stored = {}  # attribute -> parameter, for attributes assigned once in the class, from a parameter
    counts = {}
    for assign in ctx.nodes(cst.Assign):
        if not ctx.is_ancestor(cls, assign):
            continue
        for t in assign.targets:
            for target in (t.target.elements if isinstance(t.target, (cst.Tuple, cst.List)) else [t.target]):
                target = target.value if isinstance(target, (cst.Element, cst.StarredElement)) else target
                if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
                    attr = target.attr.value
                    counts[attr] = counts.get(attr, 0) + 1
                    if isinstance(assign.value, cst.Name) and assign.value.value in params \
                            and ctx.enclosing_function(assign) is init and len(assign.targets) == 1:
                        stored[attr] = assign.value.value
    for aug in ctx.nodes(cst.AugAssign):
        if ctx.is_ancestor(cls, aug) and isinstance(aug.target, cst.Attribute):
            counts[aug.target.attr.value] = 2
    stored = {a: p for a, p in stored.items() if counts.get(a) == 1}
    if not stored:
        return None

    def subject(expr):
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return stored.get(expr.attr.value)
        return None

    needs = path_needs(ctx, node, fn, subject)
    return (init, needs) if needs else None


def _params(fn: cst.FunctionDef):
    return {p.name.value: p for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}


def call_skips_path(ctx, fn: cst.FunctionDef, needs, call: cst.Call, model) -> bool:
    """Does ``call`` of ``fn`` (made in the file of the precision model ``model``) surely not take
    the path ``needs`` (``path_needs``) describes: a literal it passes, or a literal default it
    leaves, fails one of the tests? False when it may take it or cannot be read."""
    params = _params(fn)
    method = isinstance(ctx.parent(ctx.parent(fn)), cst.ClassDef)
    for name, literal, equal, truth in needs:
        known, value = argument_for(call, fn, name, method)
        if not known:
            return False
        if value is None:
            value = params[name].default
        passed = _literal(value)
        if passed is None and literal == _NONE and _not_none(model, value):
            passed = _OBJECT  # ``args=training_args``: some object, not None
        if passed is None or literal is _TRUTHY and passed == _OBJECT:
            continue  # this test may go either way; another may still fail
        holds = _truthy(passed) if literal is _TRUTHY else passed == literal
        if (holds == equal) != truth:  # the test, as this call runs it, is not what the path needs
            return True
    return False


_NONE, _OBJECT, _TRUTHY = "<None>", "<object>", "<truthy>"


def _truthy(passed) -> bool:
    """How ``if flag:`` reads a passed literal (None is the ``_NONE`` marker)."""
    return passed != _NONE and bool(passed)


def _not_none(pm, value) -> bool:
    """Is the passed ``value`` (an expression of the caller's file) surely not None: a call, an
    attribute, a literal, or a name the caller binds to one of those (not a parameter, which its own
    callers may leave at None)?"""
    for _ in range(3):
        if isinstance(value, (cst.Call, cst.Attribute, cst.Integer, cst.Float, cst.SimpleString, cst.List,
                              cst.Dict, cst.Tuple)):
            return True
        if not isinstance(value, cst.Name) or value.value == "None":
            return False
        bound = pm.binding_at(value.value, value)
        if isinstance(bound, tuple) and bound[0] == "part" and isinstance(bound[1], cst.Call):
            return True  # ``(training_args,) = parser.parse_args_into_dataclasses()``
        if not isinstance(bound, cst.BaseExpression):
            return False
        value = bound
    return False


def _literal(expr) -> Optional[object]:
    if isinstance(expr, cst.SimpleString):
        return expr.evaluated_value
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value] if expr.value != "None" else "<None>"
    if isinstance(expr, cst.Integer):
        return int(expr.value)
    return None


def _name_tested(expr) -> Optional[str]:
    """A function's own name, as a test reads it (``if flag:``)."""
    return expr.value if isinstance(expr, cst.Name) and expr.value not in ("True", "False", "None") else None


def _literal_test(ctx, test: cst.BaseExpression, subject=None) -> Optional[Tuple[str, object, bool]]:
    """``name == 'lit'`` / ``name != 'lit'`` (either side), ``name is None`` / ``name is not None``,
    ``name is True`` / ``name is False``: (name, literal, is equality); ``name`` / ``not name``:
    (name, ``_TRUTHY``, whether the name must be true). ``subject`` (``path_needs``) reads what
    stands for a name; a test of anything else is None."""
    subject = subject or _name_tested
    if subject(test) is not None:
        return subject(test), _TRUTHY, True  # ``if return_logits:``
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not) \
            and subject(test.expression) is not None:
        return subject(test.expression), _TRUTHY, False  # ``if not return_loss:``
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    op = test.comparisons[0].operator
    if isinstance(op, (cst.Is, cst.IsNot)):
        left, right = test.left, test.comparisons[0].comparator
        if subject(left) is not None and isinstance(right, cst.Name) and right.value in ("None", "True", "False"):
            # ``if init is True:`` (OpenNMT's data-dependent init, which no caller asks for)
            return subject(left), _literal(right), isinstance(op, cst.Is)
        return None
    if not isinstance(op, (cst.Equal, cst.NotEqual)):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if subject(right) is not None and subject(left) is None:
        left, right = right, left
    literal = _literal(right)
    if subject(left) is None or literal is None or isinstance(literal, bool):
        return None
    return subject(left), literal, isinstance(op, cst.Equal)
