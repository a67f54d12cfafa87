"""Where the instances of a module class end up, and whether each one is frozen.

A parameter of a frozen module does not train: BEiT v2's tokenizer loads a CLIP teacher
(``self.teacher_model, _ = clip.load(...)``), sets ``requires_grad = False`` on its parameters
and only encodes images with it, so nothing grows that CLIP's ``logit_scale``. The instances are
followed from the class's instantiations (``Project.callers``) through the functions that return
them (``model = CLIP(...)``; ``return model.eval()``; ``model = build_model(sd).to(device)``;
``return model, transform``) to the name or ``self`` attribute that holds them, where a freeze
is looked for: ``for p in <holder>.parameters(): p.requires_grad = False`` (or
``p.requires_grad_(False)``) or ``<holder>.requires_grad_(False)``, in the holding function (a
local name) or class (an attribute). Any instance not followed to a frozen holder, or a class no
file instantiates (a library's: its users pick), makes the answer None.

Only asked for a finding about to be reported (a few per project), so the files it opens are few.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import libcst as cst

MAX_DEPTH = 3  # returning functions followed from an instantiation
MAX_SITES = 8  # instantiations (or calls of a returning function) looked at

# methods that return the module they are called on
_SELF_RETURNING = frozenset({"to", "cuda", "cpu", "eval", "train", "float", "half", "bfloat16", "requires_grad_",
                             "to_empty"})


def frozen_everywhere(ctx, cls: cst.ClassDef) -> Optional[List[str]]:
    """``file:line`` of the freeze of each instance of the module-level class ``cls`` the project
    builds outside its tests, when every one is followed to a frozen holder; else None."""
    project = ctx.project
    module = ctx.imports.module_name
    if project is None or not module or not hasattr(project, "callers") or ctx.parent(cls) is not ctx.module:
        return None
    freezes: List[str] = []
    if not _holders_frozen(ctx, f"{module}.{cls.name.value}", None, 0, freezes) or not freezes:
        return None
    return freezes


def _context_for(ctx, path: Path):
    return ctx if Path(ctx.path).resolve() == path else ctx.other_file(path)


def _holders_frozen(ctx, qualified: str, index: Optional[int], depth: int, out: List[str]) -> bool:
    """Is every result of the calls of ``qualified`` (element ``index`` of the tuple it returns)
    held by a frozen holder?"""
    project = ctx.project
    is_test = getattr(project, "is_test", None)
    sites = [s for s in project.callers(qualified) if not (is_test is not None and is_test(s.path))]
    if not sites or len(sites) > MAX_SITES:
        return False
    last = qualified.rsplit(".", 1)[-1]
    for site in sites:
        other = _context_for(ctx, site.path)
        if other is None:
            return False
        calls = [c for c in other.nodes(cst.Call) if _last_name(c) == last and other.on_lines(c, {site.line})]
        if not calls:
            return False
        for call in calls:
            if not _result_frozen(other, call, index, site.caller, depth, out):
                return False
    return True


def _last_name(call: cst.Call) -> Optional[str]:
    if isinstance(call.func, cst.Name):
        return call.func.value
    if isinstance(call.func, cst.Attribute):
        return call.func.attr.value
    return None


def _through_self_returning(ctx, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``x.to(device).eval()`` for ``x``: the outermost call of methods returning the module."""
    while True:
        parent = ctx.parent(expr)
        call = ctx.parent(parent) if isinstance(parent, cst.Attribute) else None
        if not (isinstance(parent, cst.Attribute) and parent.value is expr and parent.attr.value in _SELF_RETURNING
                and isinstance(call, cst.Call) and call.func is parent):
            return expr
        expr = call


def _strip_self_returning(expr: cst.BaseExpression) -> cst.BaseExpression:
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _SELF_RETURNING:
        expr = expr.func.value
    return expr


def _result_frozen(ctx, call: cst.Call, index: Optional[int], caller: str, depth: int, out: List[str]) -> bool:
    expr = _through_self_returning(ctx, call)
    parent = ctx.parent(expr)
    if index is not None:  # the callee returns a tuple: its element ``index`` is the instance
        target = parent.targets[0].target if isinstance(parent, cst.Assign) and parent.value is expr \
            and len(parent.targets) == 1 else None
        if not (isinstance(target, (cst.Tuple, cst.List)) and index < len(target.elements)):
            return False
        holder = target.elements[index].value
    elif isinstance(parent, cst.Assign) and parent.value is expr and len(parent.targets) == 1:
        holder = parent.targets[0].target
    elif isinstance(parent, cst.Return):
        return depth < MAX_DEPTH and _holders_frozen(ctx, caller, None, depth + 1, out)
    else:
        return False
    if isinstance(holder, cst.Name):
        fn = ctx.enclosing_function(call)
        returned = _returned_as(ctx, fn, holder.value) if fn is not None else None
        if returned is not None:  # ``return model`` / ``return model, transform``: its callers hold it
            return depth < MAX_DEPTH and _holders_frozen(ctx, caller, returned if returned >= 0 else None,
                                                        depth + 1, out)
        scope = fn if fn is not None else ctx.module
    elif isinstance(holder, cst.Attribute) and isinstance(holder.value, cst.Name) and holder.value.value == "self":
        scope = ctx.enclosing_class(call)
    else:
        return False
    freeze = _freeze_in(ctx, scope, ctx.code(holder)) if scope is not None else None
    if freeze is None:
        return False
    out.append(f"{ctx.path}:{ctx.line_of(freeze)}")
    return True


def _returned_as(ctx, fn: cst.FunctionDef, name: str) -> Optional[int]:
    """-1 when ``fn`` returns ``name`` itself (``return model.eval()``), its position when it
    returns it in a tuple, None when it does not return it."""
    for ret in ctx.nodes(cst.Return):
        if ret.value is None or ctx.enclosing_function(ret) is not fn:
            continue
        value = _strip_self_returning(ret.value)
        if isinstance(value, cst.Name) and value.value == name:
            return -1
        if isinstance(value, cst.Tuple):
            for i, element in enumerate(value.elements):
                item = _strip_self_returning(element.value)
                if isinstance(item, cst.Name) and item.value == name:
                    return i
    return None


def _false(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "False"


def _freeze_in(ctx, scope: cst.CSTNode, holder: str) -> Optional[cst.CSTNode]:
    """The freeze of ``holder`` (its code) inside ``scope``: ``holder.requires_grad_(False)`` or a
    loop over ``holder.parameters()`` setting each one's ``requires_grad`` to False."""
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "requires_grad_" and call.args \
                and _false(call.args[0].value) and ctx.code(call.func.value) == holder and ctx.is_ancestor(scope, call):
            return call
    for loop in ctx.nodes(cst.For):
        it = loop.iter
        if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and it.func.attr.value == "parameters"
                and ctx.code(it.func.value) == holder and isinstance(loop.target, cst.Name)
                and ctx.is_ancestor(scope, loop)):
            continue
        var = loop.target.value
        for node in ctx.nodes(cst.Assign):
            if ctx.is_ancestor(loop.body, node) and _false(node.value) and any(
                    ctx.code(t.target) == f"{var}.requires_grad" for t in node.targets):
                return loop
        for call in ctx.nodes(cst.Call):
            if ctx.is_ancestor(loop.body, call) and isinstance(call.func, cst.Attribute) \
                    and call.func.attr.value == "requires_grad_" and call.args and _false(call.args[0].value) \
                    and ctx.code(call.func.value) == var:
                return loop
    return None
