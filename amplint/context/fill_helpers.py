"""The project's own masked-fill helpers: a function that writes one of its parameters into another with
``masked_fill`` (bugs set 14, B14-2: allennlp's ``def replace_masked_values(tensor, mask, replace_with):
return tensor.masked_fill(~mask, replace_with)``, called ``util.replace_masked_values(antecedent_scores,
mask, -1e20)`` inside allennlp itself). A value passed to it is written into the tensor passed to it, as by
``masked_fill`` (the libraries' own helpers of this kind, called from other projects, are data:
``torch_api.fill_helpers``). Asked only of a call passing a constant float16 cannot hold.
"""
from __future__ import annotations

from typing import Optional

import libcst as cst

from ..torch_api.fill_helpers import FillHelper
from .definitions import definition_of

_FILLS = ("masked_fill", "masked_fill_")


def project_fill_helper(ctx, call: cst.Call) -> Optional[FillHelper]:
    """The fill helper ``call`` runs: a module-level function of this file or of the project file it is
    imported from (``util.replace_masked_values(...)`` after ``from mylib.nn import util``) whose body
    makes, outside any condition or loop, ``<tensor param>.masked_fill(<mask>, <value param>)`` (or
    ``masked_fill_``, ``torch.masked_fill(<tensor param>, <mask>, <value param>)``), neither parameter
    rebound in it; else None."""
    found = _definition(ctx, call)
    if found is None:
        return None
    where, fn = found
    key = ("project_fill_helper", id(fn))
    cache = where._cache
    if key not in cache:
        cache[key] = _helper_of(where, fn)
    return cache[key]


def _definition(ctx, call: cst.Call):
    func = call.func
    if isinstance(func, cst.Name) and not ctx.imports.binds(func.value):
        fn = next((s for s in ctx.module.body if isinstance(s, cst.FunctionDef) and s.name.value == func.value), None)
        return (ctx, fn) if fn is not None else None
    project = ctx.project
    index = getattr(project, "index", None) if project is not None else None
    name = ctx.call_name(call)
    if index is None or not name or name.startswith("torch."):
        return None
    sym = index.resolve(name, ctx.imports.module_name or "")
    if sym is None or sym.kind != "function" or "." in sym.qualname:
        return None
    return definition_of(ctx, sym)


def _helper_of(ctx, fn: cst.FunctionDef) -> Optional[FillHelper]:
    params = [p.name.value for p in fn.params.params]
    for call in ctx.nodes(cst.Call):
        if ctx.enclosing_function(call) is not fn or _conditional(ctx, call, fn):
            continue
        func = call.func
        positional = [a.value for a in call.args if a.keyword is None and not a.star]
        if isinstance(func, cst.Attribute) and func.attr.value in _FILLS and ctx.call_name(call) != "torch.masked_fill":
            tensor = func.value
            value = positional[1] if len(positional) > 1 else _keyword(call, "value")
        elif ctx.call_name(call) == "torch.masked_fill":
            tensor = positional[0] if positional else _keyword(call, "input")
            value = positional[2] if len(positional) > 2 else _keyword(call, "value")
        else:
            continue
        if not (isinstance(tensor, cst.Name) and isinstance(value, cst.Name)
                and tensor.value in params and value.value in params and tensor.value != value.value):
            continue
        scope = ctx.semantic.scope_of(call)
        if any(b.kind != "param" for n in (tensor.value, value.value) for b in ctx.semantic.bindings(n, scope)):
            continue  # rebound in the helper: ``replace_with = max(replace_with, -1e4)``
        return FillHelper((params.index(tensor.value), tensor.value), (params.index(value.value), value.value))
    return None


def _conditional(ctx, node: cst.CSTNode, fn: cst.FunctionDef) -> bool:
    for outer in ctx.ancestors(node):
        if outer is fn:
            return False
        if isinstance(outer, (cst.If, cst.IfExp, cst.For, cst.While, cst.Try, cst.BooleanOperation)):
            return True
    return False


def _keyword(call: cst.Call, name: str) -> Optional[cst.BaseExpression]:
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
