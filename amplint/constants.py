"""Constant folding: the numeric value of an expression, one evaluator for every level.

The project summaries (stdlib ``ast``) fold with ``fold``; the file context (libcst) walks its own
tree but does its arithmetic with ``binary`` / ``unary`` here, so a constant such as
``NEG_INF = -2 ** 30`` has the same value whether it is used in its own module or imported from
another one. Names are resolved by the caller (``lookup``): module constants, a
parameter's default, an imported project constant.
"""
from __future__ import annotations

import ast
import math
import operator
from typing import Callable, Dict, List, Optional

Lookup = Callable[[str], Optional[float]]

# The arithmetic both levels fold, by operator symbol (libcst's and ast's operators map to these).
BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow,
          "//": operator.floordiv, "%": operator.mod}
_AST_BINARY = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**", ast.FloorDiv: "//", ast.Mod: "%"}


def binary(op: str, a: Optional[float], b: Optional[float]) -> Optional[float]:
    """``a op b`` as a float, or None (an unknown operand or operator, a division by zero, an
    overflow, a complex result, a huge power)."""
    fn = BINARY.get(op)
    if fn is None or a is None or b is None:
        return None
    if op == "**" and abs(b) > 4096:
        return None  # no huge powers: an overflow, and time spent on nothing useful
    try:
        v = fn(a, b)
    except (ZeroDivisionError, OverflowError, ValueError):
        return None
    return float(v) if isinstance(v, (int, float)) else None


def unary(op: str, v: Optional[float]) -> Optional[float]:
    if v is None or op not in ("-", "+"):
        return None
    return -v if op == "-" else v
INF_NAMES = ("math.inf", "numpy.inf", "np.inf", "torch.inf")
MAX_DEPTH = 32


def dotted(node: ast.AST) -> Optional[str]:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def fold(node: ast.AST, lookup: Optional[Lookup] = None, _depth: int = 0) -> Optional[float]:
    """The value of ``node`` as a float, or None when it is not a numeric constant. ``lookup``
    gives the value of a (dotted) name; ``x.inf`` is infinity."""
    if _depth > MAX_DEPTH:
        return None
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                return float(v)
            except OverflowError:
                return None
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return unary("-" if isinstance(node.op, ast.USub) else "+", fold(node.operand, lookup, _depth + 1))
    if isinstance(node, ast.BinOp):
        op = _AST_BINARY.get(type(node.op))
        if op is None:
            return None
        return binary(op, fold(node.left, lookup, _depth + 1), fold(node.right, lookup, _depth + 1))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
            and len(node.args) == 1 and not node.keywords:
        a = node.args[0]
        if isinstance(a, ast.Constant) and isinstance(a.value, str):
            try:
                return float(a.value)
            except ValueError:
                return None
        return fold(a, lookup, _depth + 1)
    if isinstance(node, ast.Attribute) and node.attr == "inf":
        return math.inf
    if isinstance(node, (ast.Name, ast.Attribute)) and lookup is not None:
        name = dotted(node)
        return lookup(name) if name is not None else None
    return None


def fold_text(code: str, lookup: Optional[Lookup] = None) -> Optional[float]:
    """``fold`` of an expression given as source text (how the libcst side asks)."""
    try:
        tree = ast.parse(code.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return fold(tree.body, lookup)


def module_constants(body: List[ast.stmt]) -> Dict[str, float]:
    """Numeric module-level constants (``NAME = <expr>``, ``NAME: T = <expr>``), each folded with
    the ones bound before it."""
    out: Dict[str, float] = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            target, value = stmt.targets[0].id, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            target, value = stmt.target.id, stmt.value
        else:
            continue
        v = fold(value, out.get)
        if v is not None:
            out[target] = v
    return out
