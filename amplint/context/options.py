"""The default a file gives a command-line option or a dataclass field: ``optim: str =
field(default="adamw_torch")`` of an ``HfArgumentParser`` dataclass, ``parser.add_argument("--optim",
default="adamw_hf")``. What ``args.optim`` is unless the command line says otherwise."""
from __future__ import annotations

from typing import Optional

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
