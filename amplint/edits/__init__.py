"""Small libcst building blocks for the fixes rules attach to their violations.

A rule builds a ``Fix`` (amplint.findings) from nodes of ``ctx.module``; amplint.fixes applies it.
These helpers keep the edits minimal and keep the formatting around them: an argument added to a
multi-line call lands on its own line with the call's indentation, a trailing comma stays trailing.
"""
from __future__ import annotations

import math
from typing import List, Optional, Tuple

import libcst as cst

from ..context.imports import dotted_name


# ---- literals ------------------------------------------------------------------------------------
def number_text(value: float) -> str:
    """How Python code usually spells a float, reading back exactly: ``1e-4`` (not ``0.0001``)
    for small magnitudes, ``0.01`` and ``100.0`` otherwise."""
    if math.isinf(value) or math.isnan(value):
        raise ValueError(f"not a finite number: {value!r}")
    plain = repr(float(value))
    mantissa, _, exponent = f"{value:.15e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    sci = f"{mantissa}e{int(exponent)}"
    if int(exponent) < -3 and float(sci) == value and len(sci) <= len(plain):
        return sci
    return plain


def number_node(value: float) -> cst.BaseExpression:
    """A literal for ``value`` (negative numbers as unary minus, as Python writes them)."""
    if value < 0:
        return cst.UnaryOperation(cst.Minus(), cst.Float(number_text(-value)))
    return cst.Float(number_text(value))


# ---- call arguments ------------------------------------------------------------------------------
def keyword(name: str, value: cst.BaseExpression) -> cst.Arg:
    """``name=value`` without spaces around ``=`` (PEP 8 for keyword arguments)."""
    return cst.Arg(value=value, keyword=cst.Name(name),
                   equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                         whitespace_after=cst.SimpleWhitespace("")))


def as_keyword(arg: cst.Arg, name: str) -> cst.Arg:
    """A positional argument turned into ``name=<same value>`` (comma and whitespace kept)."""
    return arg.with_changes(keyword=cst.Name(name),
                            equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                  whitespace_after=cst.SimpleWhitespace("")))


def _separator(call: cst.Call) -> cst.BaseParenthesizableWhitespace:
    """The whitespace that follows a comma between two arguments of this call: what an existing
    separating comma has, else the call's whitespace after ``(`` when the arguments start on their
    own line, else one space."""
    for a in call.args[:-1]:
        if isinstance(a.comma, cst.Comma):
            return a.comma.whitespace_after
    ws = call.whitespace_before_args
    if isinstance(ws, cst.ParenthesizedWhitespace):
        return ws
    return cst.SimpleWhitespace(" ")


def insert_arg(call: cst.Call, index: int, arg: cst.Arg) -> cst.Call:
    """``call`` with ``arg`` inserted before its ``index``-th argument (``index == len(args)``
    appends). Commas are arranged so that single-line calls read ``f(a, b)`` and multi-line calls
    keep one argument per line and their trailing comma."""
    args = list(call.args)
    index = max(0, min(index, len(args)))
    sep = _separator(call)
    if index < len(args):
        # the new argument is followed by what separated the arguments there: ``(`` then one per
        # line, or the comma's whitespace before args[index], or one space
        if index > 0 and isinstance(args[index - 1].comma, cst.Comma):
            after = args[index - 1].comma.whitespace_after
        elif index == 0 and isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
            after = call.whitespace_before_args
        else:
            after = cst.SimpleWhitespace(" ")
        new = arg.with_changes(comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=after),
                               whitespace_after_arg=cst.SimpleWhitespace(""))
        args.insert(index, new)
        return call.with_changes(args=args)
    if not args:
        return call.with_changes(args=[arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)])
    last = args[-1]
    trailing = isinstance(last.comma, cst.Comma)
    tail = last.comma.whitespace_after if trailing else last.whitespace_after_arg  # up to ``)``
    if isinstance(tail, cst.ParenthesizedWhitespace) and isinstance(sep, cst.ParenthesizedWhitespace):
        # One argument per line: the last one keeps its line (and its comment), the new one gets a
        # line of its own at the arguments' indentation, then ``)`` where it was.
        between = tail.with_changes(last_line=sep.last_line)
        closing = tail.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        comma_before = last.comma.whitespace_before if trailing else cst.SimpleWhitespace("")
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_before=comma_before, whitespace_after=between),
                                     whitespace_after_arg=last.whitespace_after_arg if trailing else cst.SimpleWhitespace(""))
        if trailing:
            new = arg.with_changes(comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=closing),
                                   whitespace_after_arg=cst.SimpleWhitespace(""))
        else:
            new = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing)
    elif trailing:
        # f(a, b,) -> f(a, b, new,): the new argument takes over the trailing comma
        new = arg.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=sep),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
    else:
        # f(a) -> f(a, new): whitespace before ``)`` moves behind the new last argument
        new = arg.with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=last.whitespace_after_arg)
        args[-1] = last.with_changes(comma=cst.Comma(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=sep),
                                     whitespace_after_arg=cst.SimpleWhitespace(""))
    args.append(new)
    return call.with_changes(args=args)


def append_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    return insert_arg(call, len(call.args), arg)


def add_keyword(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """``call`` with the keyword argument ``arg`` after the positional ones and before the other
    keywords (and before ``*args`` / ``**kwargs`` unpacking that follows them)."""
    index = 0
    for i, a in enumerate(call.args):
        if a.keyword is None and a.star == "":
            index = i + 1
    return insert_arg(call, index, arg)


def find_arg(call: cst.Call, name: str, position: Optional[int] = None) -> Optional[cst.Arg]:
    """The argument passed as ``name=`` or, when ``position`` is given, as that positional one."""
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    if position is not None:
        i = 0
        for a in call.args:
            if a.keyword is not None or a.star == "**":
                break
            if a.star == "*":
                return None  # after *args the positions are unknown
            if i == position:
                return a
            i += 1
    return None


# ---- names ---------------------------------------------------------------------------------------
def is_number_literal(expr: cst.BaseExpression) -> bool:
    """A number written out (``1e-8``, ``-1e-8``, ``1e-4 * 1e-4``), no names in it: a value a fix
    may replace outright (a name is bounded with ``max(name, ...)`` instead)."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation):
        return is_number_literal(expr.expression)
    if isinstance(expr, cst.BinaryOperation):
        return is_number_literal(expr.left) and is_number_literal(expr.right)
    return False


def is_simple_reference(expr: cst.BaseExpression) -> bool:
    """A name or a dotted attribute chain (``x``, ``self.scores``): safe to mention twice, no
    computation repeated."""
    return dotted_name(expr) is not None


def attribute_chain(dotted: str) -> cst.BaseExpression:
    """``a.b.c`` as a Name/Attribute chain."""
    parts = dotted.split(".")
    node: cst.BaseExpression = cst.Name(parts[0])
    for part in parts[1:]:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def _module_level(ctx, node: cst.CSTNode) -> bool:
    return not any(isinstance(a, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) for a in ctx.ancestors(node))


def module_alias(ctx, module: str) -> Tuple[Optional[str], List[str]]:
    """How module-level code of this file names the top-level module ``module`` (``torch``,
    ``math``): the name a module-level ``import`` binds to it (``th`` after ``import torch as th``;
    ``torch`` after ``import torch`` or ``import torch.nn``), else ``module`` together with the
    import to add (``["import torch"]``). (None, []) when the name is bound to something else, so
    that adding the import would change what it means."""
    assert "." not in module, module
    for imp in ctx.nodes(cst.Import):
        if not _module_level(ctx, imp):
            continue
        for alias in imp.names:
            name = dotted_name(alias.name) or ""
            if alias.asname is not None:
                if name == module and isinstance(alias.asname.name, cst.Name):
                    return alias.asname.name.value, []
            elif name == module or name.startswith(module + "."):
                return module, []
    if ctx.imports.binds(module) and ctx.imports.resolve(module) != module:
        return None, []  # ``from x import torch``: the name means something else here
    if any(isinstance(t.target, cst.Name) and t.target.value == module for t in ctx.nodes(cst.AssignTarget)):
        return None, []
    return module, [f"import {module}"]


# ---- statements ----------------------------------------------------------------------------------
def statement_anchor(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """The statement to insert code before or after so that it runs exactly when ``node``'s
    statement runs: the small statement itself when it shares its line with others
    (``if ok: clip(...)``, ``a(); b()``), else its statement line or compound statement."""
    cur = node
    while cur is not None and not isinstance(cur, (cst.BaseSmallStatement, cst.BaseCompoundStatement)):
        cur = ctx.parent(cur)
    if cur is None:
        return ctx.statement_of(node)
    if isinstance(cur, cst.BaseSmallStatement):
        line = ctx.parent(cur)
        if isinstance(line, cst.SimpleStatementSuite) or (isinstance(line, cst.SimpleStatementLine) and len(line.body) > 1):
            return cur
        return line if line is not None else cur
    return cur
