"""The autocast a training step's helper runs under, seen from its callers: ``def step(model,
optimizer, loss): loss.backward(); optimizer.step()`` called by the loop that computed ``loss`` under
float16 autocast (in this file or another). Kept apart from ``training`` (which the precision model
imports) because it asks the precision model for the callers.
"""
from __future__ import annotations

from typing import Optional, Tuple

import libcst as cst

from .callers import passed_values
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
