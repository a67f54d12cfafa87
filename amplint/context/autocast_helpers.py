"""Autocast opened by a project's own helper: ``with avoid_float16_autocast_context():``.

Projects wrap autocast in helpers: a function returning ``torch.autocast(..., enabled=False)`` (or
``dtype=torch.float32``), a ``@contextmanager`` that yields inside ``with torch.autocast(...)``, or a
class whose ``__enter__`` enters one. The region a ``with helper():`` opens is that autocast's. The
helper is looked up in the file and, through the file's imports, in the project's modules; one
level deep (a helper of a helper is not followed).
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .evidence import Signal, autocast_signal


def helper_autocast(ctx, call: cst.Call) -> Optional[Tuple[Signal, str, int]]:
    """(the autocast signal, the helper's file, its line) for ``call`` of a project helper that
    opens an autocast context, else None."""
    found = _definition(ctx, call)
    if found is None:
        return None
    home, definition = found
    inner = _opened(home, definition)
    if inner is None:
        return None
    sig = autocast_signal(home.call_facts(inner))
    if sig is None:
        return None
    return sig, home.path, home.line_of(inner)


def _definition(ctx, call: cst.Call):
    """(context, FunctionDef or ClassDef) of the project function or class ``call`` calls."""
    func = call.func
    if isinstance(func, cst.Name):
        for node in (*ctx.nodes(cst.FunctionDef), *ctx.nodes(cst.ClassDef)):
            if node.name.value == func.value and isinstance(ctx.parent(node), cst.Module):
                return ctx, node
    name = ctx.call_name(call)
    project = ctx.project
    if not name or "." not in name or project is None or not hasattr(project, "_module_paths"):
        return None
    module, _, attr = name.rpartition(".")
    path = project._module_paths().get(module)
    if path is None:
        return None
    other = ctx.other_file(path)
    if other is None:
        return None
    for node in (*other.nodes(cst.FunctionDef), *other.nodes(cst.ClassDef)):
        if node.name.value == attr and isinstance(other.parent(node), cst.Module):
            return other, node
    return None


def _opened(ctx, definition) -> Optional[cst.Call]:
    """The autocast call a helper opens: the one it returns, yields inside, or enters in
    ``__enter__`` (used as ``with helper():``, the helper is a context manager; its first autocast
    call is the one it opens)."""
    if isinstance(definition, cst.ClassDef):
        for stmt in definition.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__enter__":
                return _opened(ctx, stmt)
        return None
    for call in ctx.nodes(cst.Call):
        if ctx.is_ancestor(definition, call) and autocast_signal(ctx.call_facts(call)) is not None:
            return call
    return None
