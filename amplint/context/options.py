"""The default a file gives a command-line option or a dataclass field: ``optim: str =
field(default="adamw_torch")`` of an ``HfArgumentParser`` dataclass, ``parser.add_argument("--optim",
default="adamw_hf")``. What ``args.optim`` is unless the command line says otherwise. Also the names an
``eval`` of a string built from such a lookup may give."""
from __future__ import annotations

from typing import Dict, List, Optional

import libcst as cst


def option_default(ctx, name: str) -> Optional[cst.BaseExpression]:
    """The literal default of the option / field ``name`` in this file, when every definition of it
    here gives the same one; None otherwise (none found, a non-literal, or two that differ)."""
    found = []
    for cls in ctx.nodes(cst.ClassDef):
        if not isinstance(cls.body, cst.IndentedBlock):
            continue
        for stmt in cls.body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) \
                        and small.target.value == name and small.value is not None:
                    value = small.value
                    if isinstance(value, cst.Call) and (ctx.call_name(value) or "").endswith("field"):
                        value = next((a.value for a in value.args if a.keyword is not None
                                      and a.keyword.value == "default"), None)
                    found.append(value)
    flag = "--" + name
    for call in ctx.nodes(cst.Call):
        if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument"):
            continue
        flags = [a.value.evaluated_value for a in call.args if a.keyword is None and isinstance(a.value, cst.SimpleString)]
        if flag in flags or flag.replace("_", "-") in flags:
            found.append(next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "default"), None))
    literals = {ctx.code(v) for v in found if isinstance(v, (cst.SimpleString, cst.Integer, cst.Float, cst.Name))}
    if not found or len(literals) != 1 or any(v is None for v in found):
        return None
    return found[0]


def evaluated_names(ctx, call: cst.Call) -> List[str]:
    """The dotted names a call's function may be when it is built by ``eval`` of a string
    (sentiment-discovery: ``eval('torch.optim.' + optims[args.optim.lower()])(model.parameters(), lr=...)`` with
    ``optims = {'adam': 'Adam', 'sgd': 'SGD'}`` in the function): the prefix joined to each value of the dict literal
    looked up, only the one the option's default in this file picks when it picks one, or to a string literal. Empty
    for any other call."""
    func = call.func
    if not (isinstance(func, cst.Call) and ctx.call_name(func) == "eval" and len(func.args) == 1
            and isinstance(func.args[0].value, cst.BinaryOperation)
            and isinstance(func.args[0].value.operator, cst.Add)):
        return []
    expr = func.args[0].value
    prefix = expr.left.evaluated_value if isinstance(expr.left, cst.SimpleString) else None
    if not isinstance(prefix, str):
        return []
    tail = expr.right
    if isinstance(tail, cst.SimpleString) and isinstance(tail.evaluated_value, str):
        return [prefix + tail.evaluated_value]
    if not (isinstance(tail, cst.Subscript) and isinstance(tail.value, cst.Name) and len(tail.slice) == 1
            and isinstance(tail.slice[0].slice, cst.Index)):
        return []
    table = _dict_assigned(ctx, tail.value.value, ctx.enclosing_function(call))
    if not table:
        return []
    key = tail.slice[0].slice.value
    lower = False
    if isinstance(key, cst.Call) and isinstance(key.func, cst.Attribute) and key.func.attr.value == "lower" \
            and not key.args:
        key, lower = key.func.value, True
    if isinstance(key, cst.Attribute):
        # ``optims[args.optim.lower()]`` with ``add_argument('--optim', default='Adam')`` here: the default's entry
        default = option_default(ctx, key.attr.value)
        picked = default.evaluated_value if isinstance(default, cst.SimpleString) else None
        if isinstance(picked, str):
            picked = picked.lower() if lower else picked
            if picked in table:
                return [prefix + table[picked]]
    return [prefix + v for v in table.values()]


def _dict_assigned(ctx, name: str, fn) -> Dict[str, str]:
    """The string-to-string dict literal the name ``name`` is assigned once in the function ``fn`` (or at module level
    when ``fn`` is None); empty otherwise."""
    found = []
    for assign in ctx.nodes(cst.Assign):
        if len(assign.targets) == 1 and isinstance(assign.targets[0].target, cst.Name) \
                and assign.targets[0].target.value == name and ctx.enclosing_function(assign) is fn:
            found.append(assign.value)
    if len(found) != 1 or not isinstance(found[0], cst.Dict):
        return {}
    out: Dict[str, str] = {}
    for el in found[0].elements:
        if not (isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString)
                and isinstance(el.value, cst.SimpleString)):
            return {}
        k, v = el.key.evaluated_value, el.value.evaluated_value
        if not (isinstance(k, str) and isinstance(v, str)):
            return {}
        out[k] = v
    return out
