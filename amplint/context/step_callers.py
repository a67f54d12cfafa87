"""The autocast a training step's helper runs under, seen from its callers: ``def step(model,
optimizer, loss): loss.backward(); optimizer.step()`` called by the loop that computed ``loss`` under
float16 autocast (in this file or another). Kept apart from ``training`` (which the precision model
imports) because it asks the precision model for the callers.
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .callers import none_at_every_call, passed_values
from .precision import precision_model
from .training import ScopeRegion, fp16_region_before, is_test_file


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
