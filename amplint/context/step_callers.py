"""The autocast a training step's backward follows when it is opened in another function: the
callers' (``def step(model, optimizer, loss): loss.backward(); optimizer.step()`` called by the loop
that computed ``loss`` under float16 autocast, in this file or another), or the callee's that computes
the loss and returns it (``loss = self.train_one_batch(batch)``; ``loss.backward()``). Kept apart from
``training`` (which the precision model imports) because it asks the precision model for the callers.
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .callers import none_at_every_call, passed_values
from .precision import precision_model
from .training import ScopeRegion, fp16_region_before, is_test_file, same_file_function


def fp16_region_of_callers(ctx, node: cst.Call, param: str) -> Optional[Tuple[ScopeRegion, object]]:
    """For a ``backward`` (``node``) in a helper whose loss is its parameter ``param``
    (``def step(model, optimizer, loss): loss.backward(); optimizer.step()``): an enabled float16
    autocast region, with its file's context, that opens before a call of the helper passing
    ``param`` (the loss computed under it), in this file or another project file
    (my-kaggle-template's ``engine.step``). None when no caller in sight does."""
    fn = ctx.enclosing_function(node)
    if fn is None:
        return None
    for p in passed_values(precision_model(ctx), fn, param):
        if p.value is None:
            continue
        other = p.model.ctx
        if is_test_file(other):
            continue
        scope = other.enclosing_function(p.call) or other.module
        found = fp16_region_before(other, scope, p.call)
        if found is not None:
            return found, other
    return None


def fp16_region_of_callee(ctx, node: cst.Call, root: str) -> Optional[ScopeRegion]:
    """For a ``backward`` (``node``) of ``root`` (``loss.backward()``) where ``loss`` was assigned the
    result of a call of a function of this file (``loss = self.train_one_batch(idx, batch)``, a
    module-level ``loss = compute_loss(model, batch)``): an enabled float16 autocast region of that
    function opening before one of its ``return``s, i.e. the loss came out of a float16 forward
    (neuraloperator's ``Trainer``, set 17, M17-2). None for a callee that runs its own backward (its
    step is judged where it is) or that is itself the backward's function (recursion)."""
    here = ctx.enclosing_function(node)
    for b in ctx.semantic.reaching(root, node):
        if b.kind != "assign" or not isinstance(b.value, cst.Call):
            continue
        fn = same_file_function(ctx, b.value)
        if fn is None or fn is here or _runs_backward(ctx, fn):
            continue
        for ret in _returns(ctx, fn):
            found = fp16_region_before(ctx, fn, ret)
            if found is not None:
                return found
    return None


def _returns(ctx, fn: cst.FunctionDef):
    """The ``return <value>`` statements of ``fn`` itself (not of functions nested in it)."""
    return [r for r in ctx.nodes(cst.Return) if r.value is not None and ctx.enclosing_function(r) is fn]


def _runs_backward(ctx, fn: cst.FunctionDef) -> bool:
    return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "backward"
               and ctx.enclosing_function(c) is fn for c in ctx.nodes(cst.Call))


def scalers_never_given(ctx, node: cst.Call, scaling) -> bool:
    """For a plain ``backward`` (``node``) beside a scaled one on the other side of ``if scaler is
    not None:``: is every scaler those events use a parameter of the helper, defaulting to None, that
    every call leaves None (passed down up to three calls: the loop's own ``scaler=None`` nothing
    gives)? Then the plain path is the one that runs. False for a scaler some call hands in, from
    code the project shows or not (``scaler=make_scaler()``)."""
    fn = ctx.enclosing_function(node)
    if fn is None:
        return False
    names = {(e.scaler or "").split(".")[0] for e in scaling}
    if not names or "" in names:
        return False
    model = precision_model(ctx)
    return all(none_at_every_call(model, fn, name) for name in names)
