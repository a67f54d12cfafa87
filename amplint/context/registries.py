"""Functions a project registers by decorator and calls through a lookup of the registry.

verl's policy losses: ``@register_policy_loss("geo_mean") def compute_policy_loss_geo_mean(...)``,
where ``register_policy_loss(name)`` stores the function in a module-level dict
(``POLICY_LOSS_REGISTRY[name] = func``) and ``get_policy_loss_fn(name)`` returns
``POLICY_LOSS_REGISTRY[name]``; the trainer calls ``policy_loss_fn = get_policy_loss_fn(mode)`` then
``policy_loss_fn(log_prob=..., ...)``. No call names the function, yet those calls are all its calls:
where they run (outside the autocast region) is where it runs.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional, Tuple

import libcst as cst

from .callers import MAX_FILES


def _string(expr: Optional[cst.BaseExpression]) -> Optional[str]:
    return expr.evaluated_value if isinstance(expr, cst.SimpleString) else None  # type: ignore[return-value]


def _first_arg(call: cst.Call) -> Optional[cst.BaseExpression]:
    return call.args[0].value if call.args and call.args[0].keyword is None and not call.args[0].star else None


def _registry(ctx, register: cst.FunctionDef) -> Optional[str]:
    """The module-level dict ``register`` (a decorator factory) stores its function in:
    ``REGISTRY[name] = func`` in its inner decorator."""
    module_names = {t.target.value for s in ctx.module.body if isinstance(s, cst.SimpleStatementLine)
                    for a in s.body if isinstance(a, (cst.Assign, cst.AnnAssign))
                    for t in (a.targets if isinstance(a, cst.Assign) else [a])
                    if isinstance(t.target, cst.Name)}
    for assign in ctx.nodes(cst.Assign):
        if not ctx.is_ancestor(register, assign) or len(assign.targets) != 1:
            continue
        target = assign.targets[0].target
        if isinstance(target, cst.Subscript) and isinstance(target.value, cst.Name) \
                and target.value.value in module_names and isinstance(assign.value, cst.Name):
            return target.value.value
    return None


def _lookups(ctx, registry: str, register: cst.FunctionDef) -> List[str]:
    """The module-level functions that return an entry of ``registry`` (``return REGISTRY[name]``,
    ``return REGISTRY.get(name)``)."""
    out = []
    for stmt in ctx.module.body:
        if not isinstance(stmt, cst.FunctionDef) or stmt is register:
            continue
        for ret in ctx.nodes(cst.Return):
            value = ret.value
            if value is None or not ctx.is_ancestor(stmt, ret):
                continue
            if isinstance(value, cst.Subscript) and isinstance(value.value, cst.Name) and value.value.value == registry \
                    or isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) \
                    and value.func.attr.value == "get" and isinstance(value.func.value, cst.Name) \
                    and value.func.value.value == registry:
                out.append(stmt.name.value)
                break
    return out


def _consumers(ctx, lookup: cst.Call) -> Optional[List[cst.Call]]:
    """The calls of what ``lookup`` returns: ``get(name)(...)``, or ``fn = get(name)`` then ``fn(...)``
    in the same function. None when the value goes anywhere else (returned, stored, passed on)."""
    parent = ctx.parent(lookup)
    if isinstance(parent, cst.Call) and parent.func is lookup:
        return [parent]
    if not (isinstance(parent, cst.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0].target, cst.Name)):
        return None
    name = parent.targets[0].target.value
    fn = ctx.enclosing_function(lookup)
    out = []
    for n in ctx.nodes(cst.Name):
        if n.value != name or n is parent.targets[0].target or ctx.enclosing_function(n) is not fn \
                or ctx.order(n) < ctx.order(lookup):
            continue
        call = ctx.parent(n)
        if not (isinstance(call, cst.Call) and call.func is n):
            return None
        out.append(call)
    return out or None


def registered_calls(pm, fn: cst.FunctionDef) -> Optional[List[Tuple[object, cst.Call]]]:
    """(precision model, call) for every call of the module-level function ``fn`` made through the
    registry a decorator of it fills, in this file and the project's other files (at most
    ``callers.MAX_FILES``); None when ``fn`` is not registered so, a lookup's value escapes, or not
    all can be read."""
    ctx = pm.ctx
    if ctx.parent(fn) is not ctx.module:
        return None
    key = ("registered_calls", fn)
    if key in ctx._cache:
        return ctx._cache[key]  # type: ignore[return-value]
    ctx._cache[key] = found = _registered_calls(pm, fn)
    return found


def _registered_calls(pm, fn: cst.FunctionDef) -> Optional[List[Tuple[object, cst.Call]]]:
    ctx = pm.ctx
    defs = {s.name.value: s for s in ctx.module.body if isinstance(s, cst.FunctionDef)}
    for decorator in fn.decorators:
        call = decorator.decorator
        if not (isinstance(call, cst.Call) and isinstance(call.func, cst.Name) and call.func.value in defs):
            continue
        register = defs[call.func.value]
        registry = _registry(ctx, register)
        lookups = _lookups(ctx, registry, register) if registry is not None else []
        if not lookups:
            continue
        key = _string(_first_arg(call))
        sites: List[Tuple[object, cst.Call]] = []
        files = {}
        project = ctx.project
        for lookup in lookups:
            here = Path(ctx.path).resolve()
            for c in ctx.nodes(cst.Call):
                if isinstance(c.func, cst.Name) and c.func.value == lookup:
                    files.setdefault(here, (ctx, pm, None))
            if project is not None and hasattr(project, "calls_named"):
                for site in project.calls_named(lookup):
                    if site.path != here:
                        files.setdefault(site.path, (None, None, set()))[2].add(site.line)
        if len(files) > MAX_FILES + 1:
            return None
        for path, (other, model, lines) in files.items():
            if other is None:
                other = ctx.other_file(path)
                if other is None:
                    return None
                model = pm.model_for(other)
            for c in other.nodes(cst.Call):
                name = c.func.attr.value if isinstance(c.func, cst.Attribute) else getattr(c.func, "value", None)
                if name not in lookups or lines is not None and not other.on_lines(c, lines):
                    continue
                asked = _string(_first_arg(c))
                if key is not None and asked is not None and asked != key:
                    continue  # ``get_loss("vanilla")``: another entry
                consumers = _consumers(other, c)
                if consumers is None:
                    return None
                sites.extend((model, consumer) for consumer in consumers)
        return sites or None
    return None
