"""Checks that stop a training run at the first non-finite value (AMP304, AMP305).

One pass over the file's ``torch.isnan`` / ``math.isfinite`` / ``x.isinf()`` checks finds those whose
``if`` / ``assert`` stops the run (a ``raise``, ``sys.exit``, an ``assert``, a ``break`` / ``return``
out of the training loop), follows a check in a helper to the training steps that call it, and keeps
those whose step runs float16 autocast. Each such stop is a ``NonfiniteStop``; whether it is the
authors' own fail-fast on the forward loss (AMP305, off by default) or a stop they may not have
meant under loss scaling (AMP304) is one field of it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import List, Optional, Tuple

import libcst as cst

from ..findings import Confidence, Location
from .callers import project_call_sites
from .precision import precision_model
from .training import (fp16_region_before, in_training_loop, innermost_loop, may_be_float16, scope_of,
                       scope_regions, training_steps)

NONFINITE_CHECKS = {
    "torch.isnan", "torch.isinf", "torch.isfinite", "torch.isneginf", "torch.isposinf",
    "math.isnan", "math.isinf", "math.isfinite",
    "numpy.isnan", "numpy.isinf", "numpy.isfinite",
}
NONFINITE_METHODS = {"isnan", "isinf", "isfinite"}
EXITS = {"sys.exit", "os._exit", "exit", "quit"}
# What a training step checks that fp16 can make non-finite for a step: the loss, the outputs,
# the gradients (and their norm). Checks of the input data are a different matter.
CHECKED_VALUE = re.compile(r"loss|out|logit|pred|grad|norm|score", re.I)
LOSS_NAME = re.compile(r"loss", re.I)
TRAINING_NAME = re.compile(r"(^|_)(train|training|fit)(_|$)", re.I)
# Helpers followed from the check to the training step that calls them (in the check's own file).
MAX_HELPER_DEPTH = 3
# Expressions a check may sit in on its way to the ``if`` / ``assert`` test.
_WRAPPERS = (cst.Call, cst.Arg, cst.Attribute, cst.UnaryOperation, cst.BooleanOperation,
             cst.Comparison, cst.ComparisonTarget)


def nonfinite_check(ctx, call: cst.Call) -> Optional[cst.CSTNode]:
    """The value checked by ``torch.isnan(v)`` / ``math.isfinite(v)`` / ``v.isnan()``, or None."""
    name = ctx.call_name(call)
    if name in NONFINITE_CHECKS and call.args:
        return call.args[0].value
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in NONFINITE_METHODS and not call.args \
            and (name is None or not name.startswith(("math.", "numpy.", "torch."))):
        return call.func.value
    return None


def _test_holding(ctx, call: cst.Call) -> Tuple[Optional[cst.CSTNode], bool]:
    """The ``If`` or ``Assert`` whose test is made of this check, and whether a threshold comparison
    (``bad_steps > limit``) is combined with it."""
    cur: cst.CSTNode = call
    threshold = False
    while True:
        parent = ctx.parent(cur)
        if isinstance(parent, (cst.If, cst.Assert)) and parent.test is cur:
            return parent, threshold
        if not isinstance(parent, _WRAPPERS):
            return None, threshold
        if isinstance(parent, cst.BooleanOperation) and isinstance(parent.operator, cst.And):
            other = parent.right if parent.left is cur else parent.left
            if isinstance(other, cst.Comparison) or re.search(r"[<>]", ctx.code(other)):
                threshold = True
        cur = parent


def _exits_in(ctx, block, in_training_loop: bool = False) -> Optional[cst.CSTNode]:
    """A ``raise`` or ``sys.exit(...)`` among the block's own statements (not nested in a further
    condition: a counter compared to a limit there is the recommended pattern); inside the training
    loop also a ``break`` or ``return`` out of it (``continue`` skips the step: that is fine)."""
    if block is None:
        return None
    body = block.body
    lines = body if isinstance(block, cst.SimpleStatementSuite) else [s for s in body]
    smalls = []
    for line in lines:
        if isinstance(line, cst.SimpleStatementLine):
            smalls.extend(line.body)
        elif isinstance(line, cst.BaseSmallStatement):
            smalls.append(line)
    for small in smalls:
        if isinstance(small, cst.Raise) and small.exc is not None:
            return small
        if in_training_loop and isinstance(small, (cst.Break, cst.Return)):
            return small
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) \
                and ctx.call_name(small.value) in EXITS:
            return small.value
    return None


def _local_step_events(ctx, scope) -> list:
    """The training-step events of ``scope`` and of the functions defined in it that it calls
    (``def _backward(): self.scaler.scale(loss).backward()`` ... ``_backward()``): a closure run by
    its enclosing function is part of that function's step."""
    steps = training_steps(ctx)
    step = steps.get(scope)
    events = list(step.events) if step is not None else []
    if not isinstance(scope, cst.FunctionDef):
        return events
    called = {ctx.code(c.func) for c in ctx.nodes(cst.Call)
              if isinstance(c.func, cst.Name) and scope_of(ctx, c) is scope}
    for fn in ctx.nodes(cst.FunctionDef):
        if fn is not scope and fn.name.value in called and scope_of(ctx, fn) is scope:
            inner = steps.get(fn)
            if inner is not None:
                events.extend(inner.events)
    return events


def fp16_training_scope(ctx, scope, at: cst.Call) -> Tuple[bool, Confidence, Optional[Location]]:
    """Is ``scope`` a training path that runs float16 autocast? (yes, confidence, evidence)."""
    step = training_steps(ctx).get(scope)
    events = _local_step_events(ctx, scope)
    is_step = any(e.kind in ("backward", "scaler_step", "opt_step") for e in events)
    scaled = any(e.kind == "backward" and e.how == "scaled" for e in events)
    named = isinstance(scope, cst.FunctionDef) and bool(TRAINING_NAME.search(scope.name.value))
    if not (is_step or named):
        return False, Confidence.LIKELY, None
    if isinstance(scope, cst.FunctionDef) and scope.name.value.startswith("test"):
        return False, Confidence.LIKELY, None
    region = fp16_region_before(ctx, scope, at)
    if region is None:
        # A check before the autocast block of the same loop body still sees its outputs next time.
        for r in scope_regions(ctx, scope):
            if r.region.enabled and r.region.dtype == "float16" and r.dtype_literal:
                region = r
                break
    confidence = Confidence.CERTAIN
    if region is None and scaled:
        # An autocast whose dtype is a variable (detectron2's ``autocast(dtype=self.precision)``)
        # around a step that scales its loss with a GradScaler: the scaler is there for float16.
        region = next((r for r in scope_regions(ctx, scope) if may_be_float16(ctx, r)), None)
        confidence = Confidence.LIKELY
    if region is not None:
        ev = region.region.evidence
        return True, confidence, Location(ev.path, ev.line, f"float16 autocast: `{ev.what}`")
    if scope_regions(ctx, scope):
        return False, Confidence.LIKELY, None  # its own regions are bf16 / disabled / not literal
    # No autocast of its own: only a trainer's fp16 flag (Lightning precision=16, Trainer
    # fp16=True, accelerate mixed_precision="fp16") says the step runs float16. An autocast block
    # elsewhere in the project does not: it covers the code inside it, and a plain loop beside it
    # (detectron2's plain_train_net.py next to its AMPTrainer) trains in float32.
    regime = ctx.regime
    if regime is None or regime.half_optimizer is not None or regime.bf16 is not None:
        return False, Confidence.LIKELY, None
    for sig, ev in regime.signals:
        if sig.kind == "flag" and sig.dtype == "float16" and sig.enabled and not sig.pure:
            return True, Confidence.LIKELY, Location.of(ev, "float16 training flag")
    if scaled:
        # The step scales its loss with a GradScaler and its entry point trains under float16
        # autocast, opened elsewhere (the trainer's ``forward`` method returns the loss computed
        # under it): loss scaling is on, so a non-finite step is one the scaler would skip.
        autocast = regime.fp16_autocast
        if autocast is not None:
            return True, Confidence.LIKELY, Location.of(autocast, "float16 autocast")
    return False, Confidence.LIKELY, None


def _argument_text(ctx, site: cst.Call, params, text: str) -> str:
    """The text of what ``site`` passes for the checked parameter named ``text`` (``text`` itself
    when it is not a parameter or the call does not pass it)."""
    if text in params:
        i = params.index(text)
        args = [a for a in site.args if a.keyword is None and not a.star]
        named = [a for a in site.args if a.keyword is not None and a.keyword.value == text]
        arg = named[0] if named else (args[i] if i < len(args) else None)
        text = _code(arg) if arg is not None else text
    return text


def _code(arg: cst.Arg) -> str:
    return cst.Module(body=[]).code_for_node(arg.value)


def _params(fn: cst.FunctionDef):
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return params[1:] if params and params[0] in ("self", "cls") else params


def _where_checked(ctx, scope, call: cst.Call, value: cst.CSTNode):
    """(context, training scope, node there, text of the checked value, the helper call or None):
    the check's own scope, and, for a check in a helper function, the calls of the helper in this
    file, followed up to ``MAX_HELPER_DEPTH`` helpers (a NaN check that raises in ``check_loss(loss)``
    called from ``fit``; detectron2's ``write_metrics`` reached from ``run_step`` through
    ``self._write_metrics(loss_dict)``) and, for a module-level helper, its calls in the project's
    other files (``from utils import check_loss``)."""
    yield ctx, scope, call, ctx.code(value), None
    if not isinstance(scope, cst.FunctionDef):
        return
    seen = {scope}
    helpers = [(scope, ctx.code(value))]
    for _ in range(MAX_HELPER_DEPTH):
        callers = []
        for helper, text in helpers:
            for site in precision_model(ctx).calls_of(helper):
                caller = scope_of(ctx, site)
                if caller in seen:
                    continue
                passed = _argument_text(ctx, site, _params(helper), text)
                yield ctx, caller, site, passed, site
                if isinstance(caller, cst.FunctionDef):
                    seen.add(caller)
                    callers.append((caller, passed))
        helpers = callers
    yield from _other_files_calling(ctx, scope, _params(scope), ctx.code(value))


def _other_files_calling(ctx, fn: cst.FunctionDef, params, text: str):
    """The calls of a module-level helper, or of a loss module's ``forward`` (the module built in the
    calling file or handed to its training function), in the project's other files
    (``callers.project_call_sites``)."""
    owner = ctx.parent(ctx.parent(fn))
    if ctx.parent(fn) is not ctx.module and not (fn.name.value == "forward" and isinstance(owner, cst.ClassDef)):
        return
    for other, _, call in project_call_sites(precision_model(ctx), fn):
        yield other, scope_of(other, call), call, _argument_text(other, call, params, text), call


def _guard_receivers(ctx) -> Tuple[set, bool]:
    """The expressions (as code) bound to an ``amplint.runtime.AmpGuard`` in this file, and whether
    the file imports amplint.runtime at all (a guard may arrive as an argument)."""
    cached = ctx._cache.get("amp304.guards")
    if cached is None:
        bound = set()
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call) or ""
            if not (name.startswith("amplint.runtime") and "AmpGuard" in name):
                continue
            parent = ctx.parent(call)
            if isinstance(parent, cst.Assign):
                bound.update(ctx.code(t.target) for t in parent.targets)
            elif isinstance(parent, (cst.AnnAssign, cst.NamedExpr)):
                bound.add(ctx.code(parent.target))
        imported = any(str(target).startswith("amplint.runtime") for _, target in ctx.imports.items())
        cached = ctx._cache["amp304.guards"] = (bound, imported)
    return cached


def _inside_guarded_step(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` inside ``with guard.watch(...)`` of an AmpGuard? The guard catches an exception
    raised there on a non-finite step, counts the step as skipped and re-raises only past its
    threshold, after saving the evidence: the recommended pattern, not a run stopped at the first NaN."""
    bound, imported = _guard_receivers(ctx)
    if not bound and not imported:
        return False
    for outer in ctx.ancestors(node):
        if isinstance(outer, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return False
        if not isinstance(outer, cst.With):
            continue
        for item in outer.items:
            call = item.item
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "watch":
                receiver = ctx.code(call.func.value)
                if receiver in bound or (imported and "guard" in receiver.rpartition(".")[2].lower()):
                    return True
    return False


# A value computed from the gradients (their norm): loss scaling makes these non-finite routinely.
GRADIENT_VALUE = re.compile(r"grad|norm", re.I)


@dataclass
class NonfiniteStop:
    """A check that stops a float16 training run at its first non-finite value."""
    stop: cst.CSTNode              # the ``raise`` / ``sys.exit(...)`` call / ``assert`` / ``break`` / ``return``
    how: str                       # how it stops, as the message says it
    checked: str                   # the checked value's text, as the training step passes it
    confidence: Confidence
    evidence: Optional[Location]   # the float16 autocast (or trainer flag) the step runs under
    site_ctx: object               # the file of the training step
    site: Optional[cst.Call]       # the helper call in the training step, None for a check in the step itself
    # The authors' own fail-fast on the forward loss: the check sits in the training step itself, is
    # of the loss or the outputs (not the gradients), and ends the process (``sys.exit``) or asserts.
    # The DeiT / MAE / BEiT lineage's ``if not math.isfinite(loss_value): sys.exit(1)``. Loss scaling
    # never makes a forward value non-finite (the scale multiplies the loss only for the backward), so
    # such a check fires on a real overflow of the forward pass or a divergence: ending the run there
    # is a policy, and a defensible one.
    fail_fast: bool = False
    related: List[Location] = field(default_factory=list)


def nonfinite_stops(ctx) -> List[NonfiniteStop]:
    """Every check in this file that stops a float16 training run at its first non-finite value."""
    cached = ctx._cache.get("nonfinite_stops")
    if cached is None:
        cached = ctx._cache["nonfinite_stops"] = list(_stops(ctx))
    return cached  # type: ignore[return-value]


# An LR range test (fastai's ``lr_find``, doctr's ``record_lr``): it raises the learning rate until the loss
# diverges, so stopping at the first non-finite loss is its stop criterion, not a training run ended early.
_LR_RANGE_TEST = re.compile(r"(?i)^_*((find|record|range|search)_?lrs?|lrs?_?(find\w*|range\w*|search\w*|test))$")


def _stops(ctx):
    seen = set()
    for call in ctx.nodes(cst.Call):
        value = nonfinite_check(ctx, call)
        if value is None:
            continue
        holder, threshold = _test_holding(ctx, call)
        if holder is None or threshold or holder in seen:
            continue
        fn = ctx.enclosing_function(holder)
        if fn is not None and _LR_RANGE_TEST.match(fn.name.value):
            continue
        if isinstance(holder, cst.Assert):
            stop: Optional[cst.CSTNode] = holder
            how = "`assert`"
            if _inside_guarded_step(ctx, holder):
                continue
        else:
            loop = in_training_loop(ctx, holder)
            stop = _exits_in(ctx, holder.body, loop)
            if stop is None and isinstance(holder.orelse, cst.Else):
                stop = _exits_in(ctx, holder.orelse.body, loop)
            if stop is None or (isinstance(stop, cst.Raise) and _inside_guarded_step(ctx, stop)):
                continue
            how = (f"`{ctx.code(stop.func)}`" if isinstance(stop, cst.Call)  # type: ignore[union-attr]
                   else "`break` out of the training loop" if isinstance(stop, cst.Break)
                   else "`return` from the training loop" if isinstance(stop, cst.Return) else "`raise`")
        # the names the checked value is computed from (``total = sum(m.values())`` after
        # ``m = {k: v.item() for k, v in loss_dict.items()}``: a sum of the losses)
        computed_from = ctx.semantic.computed_from(value, value)
        # the training step that runs it in float16: its own autocast with a float16 dtype
        # (certain) before one whose dtype is a variable, before a trainer flag (likely)
        best = None
        for site_ctx, scope, at, checked, site in _where_checked(ctx, scope_of(ctx, holder), call, value):
            step = training_steps(site_ctx).get(scope)
            losses = step.backward_losses(site_ctx) if step is not None else set()
            if not (CHECKED_VALUE.search(checked) or checked in losses or any(
                    LOSS_NAME.search(n) or (site is None and n in losses) for n in computed_from)):
                continue  # not the loss, outputs or gradients (nor what the step backpropagates)
            ok, confidence, evidence = fp16_training_scope(site_ctx, scope, at)
            if not ok:
                continue
            # (a likely step with autocast blocks of its own got there by its GradScaler, one
            # without them by a trainer flag)
            rank = 2 if confidence is Confidence.CERTAIN else 1 if scope_regions(site_ctx, scope) else 0
            if best is None or rank > best[0]:
                best = (rank, site_ctx, confidence, evidence, checked, site)
            if rank == 2:
                break
        if best is None:
            continue
        _, site_ctx, confidence, evidence, checked, site = best
        seen.add(holder)
        ends_process = isinstance(stop, cst.Assert) or (isinstance(stop, cst.Call) and ctx.call_name(stop) in EXITS)
        forward = not GRADIENT_VALUE.search(checked) and not any(GRADIENT_VALUE.search(n) for n in computed_from)
        related = [] if site is None else [Location(site_ctx.path, site_ctx.line_of(site),  # type: ignore[attr-defined]
                                                    "called from the training step here")]
        yield NonfiniteStop(stop, how, checked, confidence, evidence, site_ctx, site,
                            fail_fast=site is None and ends_process and forward, related=related)


@dataclass
class SkippedUpdate:
    """A ``continue`` under a non-finite check that skips ``scaler.update()`` (and the scaler's step)
    on exactly the steps whose gradients overflowed: the scale never backs off (FunASR's trainer:
    ``if not torch.isfinite(grad_norm): optim.zero_grad(); continue``), and after a
    ``scaler.unscale_(optimizer)`` of that iteration the next unscale_ raises."""
    skip: cst.Continue
    check: cst.If
    update: object  # the training.Event of the scaler.update() skipped
    unscale: Optional[object] = None  # an unscale_ of the same scaler earlier in the iteration


def skipped_updates(ctx, step) -> List[SkippedUpdate]:
    """The ``SkippedUpdate``s of a training step (``training.Step``)."""
    found = []
    for update in step.of_kind("update"):
        loop = innermost_loop(ctx, update.call, step.scope)
        if loop is None or not update.scaler:
            continue
        at = ctx.line_of(update.call)
        for skip in ctx.nodes(cst.Continue):
            line = ctx.line_of(skip)
            if line >= at or innermost_loop(ctx, skip, step.scope) is not loop:
                continue
            check = next((a for a in ctx.ancestors(skip) if isinstance(a, cst.If)), None)
            if check is None or not ctx.is_ancestor(loop.body, check) or ctx.is_ancestor(check, update.call) \
                    or not any(nonfinite_check(ctx, c) is not None for c in ctx.nodes(cst.Call) if ctx.is_ancestor(check.test, c)):
                continue
            before = [e for e in step.events if e.scaler == update.scaler and ctx.is_ancestor(loop.body, e.call)
                      and ctx.line_of(e.call) < line]
            if not any(e.kind == "backward" and e.how == "scaled" for e in before) \
                    or any(e.kind in ("update", "scaler_step") for e in before):
                continue
            unscale = next((e for e in before if e.kind == "unscale"), None)
            found.append(SkippedUpdate(skip, check, update, unscale))
    return found
