"""A project's own loss-scaling optimizer, and a plain ``loss.backward()`` that goes around it (real-bug set
14, B14-3: ParlAI before 27f22d50e).

fairseq-style fp16 trainers keep the loss scale in an optimizer wrapper of their own (ParlAI's
``SafeFP16Optimizer`` / ``MemoryEfficientFP16Optimizer``): its ``backward(loss)`` multiplies the loss by the
scale before ``.backward()``, and its ``step()`` divides the gradients by the same scale (and skips the step
on overflow). The agent class routes every loss through it with a ``backward(self, loss)`` method of its own
(``if self.fp16: self.optimizer.backward(loss) else: loss.backward()``). A method of that class (or of a
subclass, in another file) that calls ``loss.backward()`` itself and then steps the same optimizer
(``self.update_params()``) hands the wrapper gradients it never scaled: small float16 gradients underflow
to zero, and the step divides the rest by the loss scale (2^k times too small an update).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Set, Tuple

import libcst as cst

from .definitions import definition_of
from .training import Event, Step, exclusive_branches


@dataclass(frozen=True)
class BypassedBackward:
    """``backward`` (a plain ``loss.backward()``) is followed by ``step`` (``self.update_params()`` or
    ``self.<optimizer>.step()``), while the class's own ``backward`` method (``route``, at ``route_at``)
    hands the loss to ``self.<optimizer>.backward(loss)``, and ``self.<optimizer>`` may be the project's
    loss-scaling optimizer ``scaler_class`` (its ``backward`` at ``scaler_at``)."""
    backward: Event
    step: cst.Call
    route: str  # "Agent.backward"
    route_at: Tuple[str, int]
    optimizer: str  # "self.optimizer"
    scaler_class: str
    scaler_at: Tuple[str, int]


def bypassed_backwards(ctx, step: Step) -> List[BypassedBackward]:
    """The plain backwards of ``step`` (a method) that go around the class's loss-scaling route."""
    fn = step.scope
    if not isinstance(fn, cst.FunctionDef) or fn.name.value == "backward":
        return []
    cls = ctx.enclosing_class(fn)
    plain = [e for e in step.backwards if e.how == "plain" and not e.call.args
             and isinstance(e.call.func, cst.Attribute) and isinstance(e.call.func.value, cst.Name)]
    if cls is None or not plain:
        return []
    route = _method(ctx, cls, "backward")
    if route is None:
        return []
    route_ctx, route_fn, route_name = route
    routed = _routed_attributes(route_ctx, route_fn)
    scalers = {attr: found for attr in routed if (found := _loss_scaling_class(route_ctx, attr)) is not None}
    if not scalers:
        return []
    out = []
    calls = [c for c in ctx.nodes(cst.Call) if ctx.enclosing_function(c) is fn]
    for e in plain:
        line = ctx.line_of(e.call)
        if any(_scaled_route(c, scalers) and exclusive_branches(ctx, e.call, c) for c in calls):
            continue  # ``if self.fp16: self.optimizer.backward(loss) else: loss.backward()``
        for c in calls:
            if ctx.line_of(c) <= line or exclusive_branches(ctx, e.call, c):
                continue
            attr = _stepped_attribute(ctx, cls, c, set(scalers))
            if attr is None:
                continue
            name, at = scalers[attr]
            out.append(BypassedBackward(e, c, route_name, (route_ctx.path, route_ctx.line_of(route_fn)),
                                        f"self.{attr}", name, at))
            break
    return out


def _scaled_route(call: cst.Call, scalers) -> bool:
    """``self.backward(...)`` or ``self.<scaling optimizer>.backward(...)``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "backward"):
        return False
    recv = func.value
    if isinstance(recv, cst.Name):
        return recv.value == "self"
    return isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name) and recv.value.value == "self" \
        and recv.attr.value in scalers


def _stepped_attribute(ctx, cls: cst.ClassDef, call: cst.Call, attrs: Set[str]) -> Optional[str]:
    """Which of ``self.<attrs>`` ``call`` steps: ``self.<attr>.step()`` itself, or ``self.<method>()``
    whose body (the class's own method or an inherited one) calls ``self.<attr>.step()``."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    attr = _self_attribute_call(func, "step")
    if attr is not None:
        return attr if attr in attrs else None
    if not (isinstance(func.value, cst.Name) and func.value.value == "self") or func.attr.value == "backward":
        return None
    found = _method(ctx, cls, func.attr.value)
    if found is None:
        return None
    other, method, _ = found
    for c in other.nodes(cst.Call):
        if other.enclosing_function(c) is method and isinstance(c.func, cst.Attribute):
            attr = _self_attribute_call(c.func, "step")
            if attr in attrs:
                return attr
    return None


def _self_attribute_call(func: cst.Attribute, method: str) -> Optional[str]:
    """``attr`` of ``self.<attr>.<method>``."""
    recv = func.value
    if func.attr.value == method and isinstance(recv, cst.Attribute) and isinstance(recv.value, cst.Name) \
            and recv.value.value == "self":
        return recv.attr.value
    return None


def _routed_attributes(ctx, fn: cst.FunctionDef) -> List[str]:
    """The ``self.<attr>`` whose ``backward`` the class's ``backward(self, loss)`` hands its loss parameter."""
    params = [p.name.value for p in fn.params.params]
    if len(params) < 2:
        return []
    loss = params[1]
    out = []
    for c in ctx.nodes(cst.Call):
        if ctx.enclosing_function(c) is not fn or not isinstance(c.func, cst.Attribute):
            continue
        attr = _self_attribute_call(c.func, "backward")
        first = c.args[0].value if c.args and c.args[0].keyword is None else None
        if attr is not None and isinstance(first, cst.Name) and first.value == loss and attr not in out:
            out.append(attr)
    return out


def _loss_scaling_class(ctx, attr: str) -> Optional[Tuple[str, Tuple[str, int]]]:
    """A project class assigned to ``self.<attr>`` in this file (``self.optimizer = SafeFP16Optimizer(...)``)
    whose ``backward(self, loss)`` multiplies the loss before a ``.backward()``: (its name, where its
    backward is)."""
    index = ctx.project_index
    for assign in ctx.nodes(cst.Assign):
        if not (isinstance(assign.value, cst.Call) and any(
                isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                and t.target.value.value == "self" and t.target.attr.value == attr for t in assign.targets)):
            continue
        name = ctx.call_name(assign.value)
        if not name:
            continue
        local = next((s for s in ctx.module.body if isinstance(s, cst.ClassDef) and s.name.value == name), None)
        if local is not None:
            found = _method(ctx, local, "backward")
        else:
            sym = index.resolve(f"{name}.backward", ctx.imports.module_name or "") if index is not None else None
            found = _opened_method(ctx, sym)
        if found is not None and _scales_its_loss(found[0], found[1]):
            other, method, _ = found
            return name.rsplit(".", 1)[-1], (other.path, other.line_of(method))
    return None


def _scales_its_loss(ctx, fn: cst.FunctionDef) -> bool:
    """``backward(self, loss)`` multiplies ``loss`` by something (``loss = loss * self.scaler.loss_scale``,
    ``(loss * self.loss_scale).backward()``) and calls a ``.backward()``."""
    params = [p.name.value for p in fn.params.params]
    if len(params) < 2:
        return False
    loss = params[1]
    mine = [n for n in ctx.nodes(cst.BinaryOperation) if ctx.enclosing_function(n) is fn]
    multiplied = any(isinstance(n.operator, cst.Multiply) and any(
        isinstance(side, cst.Name) and side.value == loss for side in (n.left, n.right)) for n in mine)
    backward = any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
                   for c in ctx.nodes(cst.Call) if ctx.enclosing_function(c) is fn)
    return multiplied and backward


def _method(ctx, cls: cst.ClassDef, name: str):
    """(file context, FunctionDef, "Class.name") of the method ``name`` of ``cls``: its own, else one
    its project bases define (through the project index, possibly in another file)."""
    if isinstance(cls.body, cst.IndentedBlock):
        own = next((s for s in cls.body.body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)
        if own is not None:
            return ctx, own, f"{cls.name.value}.{name}"
    index = ctx.project_index
    module = ctx.imports.module_name
    if index is None or not module or ctx.enclosing_class(cls) is not None:
        return None
    sym = index.resolve(f"{module}.{cls.name.value}.{name}", module)
    return _opened_method(ctx, sym)


def _opened_method(ctx, sym):
    """(file context, FunctionDef, "Class.method") of a project method symbol."""
    opened = definition_of(ctx, sym) if sym is not None and sym.kind == "function" and sym.is_method else None
    return (*opened, sym.qualname) if opened is not None else None
