"""The definition a project symbol names, opened in its file: the one way rules and context modules go from
the project index (``ProjectIndex.resolve`` / ``methods_named`` give a ``Symbol``: a path and a qualname) to
the code of a function, method or class of another file. Opening a file goes through
``FileContext.other_file``, which records it for the results cache."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Tuple, Union

import libcst as cst

Definition = Union[cst.FunctionDef, cst.ClassDef]


def definition_of(ctx, sym) -> Optional[Tuple[object, Definition]]:
    """(file context, node) of ``sym``: a module-level function or class (qualname ``f``), or a method of
    a module-level class (``Class.method``); None for deeper definitions, or when its file does not parse.
    The asking file's own context when the symbol is defined there."""
    parts = sym.qualname.split(".")
    if len(parts) > 2:
        return None
    other = ctx if Path(sym.path) == Path(ctx.path).resolve() else ctx.other_file(sym.path)
    if other is None:
        return None
    kind = cst.ClassDef if sym.kind == "class" else cst.FunctionDef
    if len(parts) == 1:
        node = _named(other.module.body, parts[0], kind)
    else:
        owner = _named(other.module.body, parts[0], cst.ClassDef)
        node = _named(owner.body.body, parts[1], kind) \
            if owner is not None and isinstance(owner.body, cst.IndentedBlock) else None
    return (other, node) if node is not None else None


def _named(body, name: str, kind) -> Optional[Definition]:
    return next((s for s in body if isinstance(s, kind) and s.name.value == name), None)
