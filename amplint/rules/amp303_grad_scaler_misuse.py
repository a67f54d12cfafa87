"""AMP303 grad-scaler-misuse."""
from __future__ import annotations

import re
from typing import Iterable, Optional, Set, Tuple

import libcst as cst

from ..context.conditions import fails_at, holds_at
from ..context.loss_scaling_optimizers import bypassed_backwards
from ..context.nonfinite_stops import skipped_updates
from ..context.project_text import grep, strip_comment
from ..context.training import (GRAD_SCALER_INIT_SCALE, Step, bf16_only, innermost_loop, insertion_anchor, is_grad_scaler,
                                repeated_updates, training_steps, wrapper_steps_after_plain_backward)
from ..findings import Location, Applicability, Confidence, Fix, Violation
from .base import Rule


# What GradScaler.unscale_ raises for an optimizer already unscaled since the last update().
ALREADY_UNSCALED = 'RuntimeError "unscale_() has already been called on this optimizer since the last update()"'


def scaler_updated_somewhere(ctx, scaler: str) -> bool:
    """``<scaler>.update()`` is called somewhere in the project (this file included): by the last
    name of the scaler, since another file may reach it as ``trainer.scaler`` or ``self.scaler``."""
    last = re.escape(scaler.rsplit(".", 1)[-1])
    pattern = rf"\b{last}\s*\.\s*update\s*\("
    rx = re.compile(pattern)
    return any(rx.search(strip_comment(line)) for _, _, line in grep(ctx, pattern))


def any_scaler_updated(ctx) -> bool:
    """Some ``*scaler*.update(...)`` anywhere in the project."""
    pattern = r"scaler\w*\s*\.\s*update\s*\("
    rx = re.compile(pattern, re.I)
    return any(rx.search(strip_comment(line)) for _, _, line in grep(ctx, pattern))


def update_statement(scaler: str) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Expr(value=cst.parse_expression(f"{scaler}.update()"))])


def _after_anchor(ctx, call: cst.Call) -> Optional[cst.CSTNode]:
    """Where a statement right after ``call`` goes: ``call`` must be a whole expression statement
    (``x = scaler.step(opt)`` keeps the update after it too)."""
    parent = ctx.parent(call)
    if not isinstance(parent, (cst.Expr, cst.Assign)):
        return None
    return insertion_anchor(ctx, parent)


class GradScalerMisuse(Rule):
    code = "AMP303"
    name = "grad-scaler-misuse"
    summary = ("optimizer.step() on scaled gradients, scaler.step() without scaler.update(), or an "
               "unscaled backward stepped by a GradScaler")
    fix_safety = "safe"
    applies_under = "any precision with a GradScaler"
    needs = r"backward|step|unscale|update"  # the step, update, unscale_ or backward reported

    def check(self, ctx) -> Iterable[Violation]:
        for scope, step in training_steps(ctx).items():
            if bf16_only(ctx, scope):
                continue
            yield from self._direct_steps(ctx, step)
            yield from self._missing_update(ctx, step)
            yield from self._unscaled_backward(ctx, step)
            yield from self._wrapper_step_on_plain_backward(ctx, step)
            yield from self._backward_around_loss_scaling_optimizer(ctx, step)
            yield from self._double_unscale(ctx, step)
            yield from self._unscale_without_step(ctx, step)
            yield from self._update_twice(ctx, step)
            yield from self._step_of_another_object(ctx, step)
            yield from self._update_skipped_on_overflow(ctx, step)

    # optimizer.step() while the loss was scaled -------------------------------------------------
    def _direct_steps(self, ctx, step: Step) -> Iterable[Violation]:
        for e in step.of_kind("opt_step"):
            scalers, every = step.scaled_at(e)
            if not scalers:
                continue
            scaler = sorted(scalers)[0]
            if scaler in step.entry_scaled and any(x.kind == "scaler_step" and x.scaler == scaler
                                                   for x in step.events):
                # gradients scaled by the caller, and this function also steps through the scaler:
                # the direct step is most likely the no-scaler branch under a test not seen as one
                continue
            optimizer = ctx.code(e.target)
            still_scaled = any(scaler in s.unscale_due for s in step.reaching(e))
            if not still_scaled and not is_grad_scaler(ctx, scaler):
                continue  # a project's own scaler may unscale and check by itself
            if still_scaled:
                why = (f"applies gradients that `{scaler}.scale(loss).backward()` multiplied by the loss "
                       f"scale ({GRAD_SCALER_INIT_SCALE:g} at the start), so the update is that many times "
                       f"too large, and inf/NaN gradients of overflowing steps are applied instead of skipped")
            else:
                why = (f"bypasses `{scaler}`'s inf/NaN check after `unscale_`: the gradients of an "
                       f"overflowing step are applied instead of the step being skipped")
            message = f"`{optimizer}.step()` {why}"
            help = f"use `{scaler}.step({optimizer})` and `{scaler}.update()`"
            fix = None
            if len(scalers) == 1 and every and not e.call.args:
                new = cst.Call(func=cst.parse_expression(f"{scaler}.step"), args=[cst.Arg(value=e.target.deep_clone())])
                fix = Fix(f"Route the step through the scaler: `{scaler}.step({optimizer})`", Applicability.SAFE,
                          replacements=[(e.call, new)])
                if not step.following(e, "update", scaler) and not scaler_updated_somewhere(ctx, scaler):
                    stmt = _after_anchor(ctx, e.call)
                    if stmt is not None:
                        fix.insert_after.append((stmt, [update_statement(scaler)]))
                        fix.description += f" followed by `{scaler}.update()`"
                    else:
                        fix = None
            yield Violation(e.call, message, Confidence.CERTAIN, fix=fix, help=help)

    # scaler.step(...) and no scaler.update() ----------------------------------------------------
    def _missing_update(self, ctx, step: Step) -> Iterable[Violation]:
        last_step = {}
        for e in step.of_kind("scaler_step"):
            last_step[e.scaler] = e
        for scaler, e in last_step.items():
            if step.following(e, "update", scaler) or scaler_updated_somewhere(ctx, scaler):
                continue
            if (not is_grad_scaler(ctx, scaler) or _received(ctx, scaler, e.call)) and any_scaler_updated(ctx):
                # a wrapper whose step() updates the GradScaler it holds, or a scaler this function
                # receives from a caller that may update it under its own name
                continue
            message = (f"`{scaler}.step(...)` with no `{scaler}.update()` anywhere in the project: the loss "
                       f"scale never adapts and the next `step` raises \"step() has already been called since the last update()\"")
            fix = None
            stmt = _after_anchor(ctx, e.call)
            if stmt is not None:
                fix = Fix(f"Insert `{scaler}.update()` after `{scaler}.step(...)`", Applicability.SAFE,
                          insert_after=[(stmt, [update_statement(scaler)])])
            yield Violation(e.call, message, Confidence.CERTAIN, fix=fix,
                            help=f"call `{scaler}.update()` once per iteration, after the step(s)")

    # loss.backward() unscaled, then scaler.step(...) ----------------------------------------------
    def _unscaled_backward(self, ctx, step: Step) -> Iterable[Violation]:
        seen: Set[int] = set()
        for e in step.of_kind("scaler_step"):
            for bw in step.plain_backwards_before(e):
                if bw.index in seen:
                    continue
                seen.add(bw.index)
                message = (f"`{ctx.code(bw.call)}` is not scaled but `{e.scaler}.step(...)` unscales its "
                           f"gradients: they are divided by the loss scale ({GRAD_SCALER_INIT_SCALE:g} at the "
                           f"start), so the update is that many times too small, and small float16 gradients "
                           f"underflow")
                yield Violation(bw.call, message, Confidence.CERTAIN, help=f"use `{e.scaler}.scale(loss).backward()`",
                                related=[Location(ctx.path, ctx.line_of(e.call), f"`{e.scaler}.step(...)` unscales")])

    # mmengine: loss.backward() then optim_wrapper.step() ------------------------------------------------
    def _wrapper_step_on_plain_backward(self, ctx, step: Step) -> Iterable[Violation]:
        seen: Set[int] = set()
        for w in wrapper_steps_after_plain_backward(ctx, step):
            if w.backward.index in seen:
                continue
            seen.add(w.backward.index)
            bw = w.backward.call
            loss = bw.func.value if isinstance(bw.func, cst.Attribute) else None
            how = "is an `AmpOptimWrapper`" if w.bound_here else "may be an `AmpOptimWrapper` (the project uses one)"
            message = (f"`{ctx.code(bw)}` is not scaled, but `{w.wrapper}` {how}, whose `step()` is its "
                       f"GradScaler's: it divides these gradients by the loss scale ({GRAD_SCALER_INIT_SCALE:g} at "
                       f"the start), so the update is that many times too small, and small float16 gradients "
                       f"underflow")
            fix = None
            if loss is not None and not bw.args:
                new = cst.parse_expression(f"{w.wrapper}.backward({ctx.code(loss)})")
                fix = Fix(f"Use `{w.wrapper}.backward({ctx.code(loss)})`", Applicability.SAFE, replacements=[(bw, new)])
            yield Violation(bw, message, Confidence.CERTAIN if w.bound_here else Confidence.LIKELY, fix,
                            help=f"use `{w.wrapper}.backward(loss)` (or `{w.wrapper}.update_params(loss)`)",
                            related=[Location(ctx.path, ctx.line_of(w.step), f"`{w.wrapper}.step()` unscales")])

    # loss.backward() in an agent whose backward(loss) scales through the project's fp16 optimizer -------
    def _backward_around_loss_scaling_optimizer(self, ctx, step: Step) -> Iterable[Violation]:
        for b in bypassed_backwards(ctx, step):
            bw = b.backward.call
            loss = ctx.code(bw.func.value)
            message = (f"`{ctx.code(bw)}` goes around `self.backward({loss})` (`{b.route}`), which hands the loss to "
                       f"`{b.optimizer}.backward`; when `{b.optimizer}` is the loss-scaling `{b.scaler_class}`, whose "
                       f"`backward` multiplies the loss by the loss scale and whose step divides the gradients by it, "
                       f"these gradients were never scaled: small float16 gradients underflow to zero and the update "
                       f"is divided by the loss scale")
            new = cst.parse_expression(f"self.backward({loss})")
            fix = Fix(f"Use `self.backward({loss})`", Applicability.SAFE, replacements=[(bw, new)])
            yield Violation(bw, message, Confidence.LIKELY, fix, help=f"call `self.backward({loss})`",
                            related=[Location(b.route_at[0], b.route_at[1], f"`{b.route}` scales through `{b.optimizer}`"),
                                     Location(b.scaler_at[0], b.scaler_at[1], f"`{b.scaler_class}.backward` scales the loss"),
                                     Location(ctx.path, ctx.line_of(b.step), "the step")])

    # scaler.unscale_(opt) twice before the step -----------------------------------------------------
    def _double_unscale(self, ctx, step: Step) -> Iterable[Violation]:
        for e in step.of_kind("unscale"):
            if not step.unscaled_again(e, ctx) or not is_grad_scaler(ctx, e.scaler):
                continue
            target = ctx.code(e.target)
            if _new_each_iteration(ctx, step, e):
                continue  # ``for opt in optimizers: scaler.unscale_(opt)``: a new optimizer each time
            skipped = _conditional_update(ctx, step, e)
            if skipped is None and _updated_in_the_same_iteration(ctx, step, e) \
                    and all(u.index >= e.index for u in step.unscaled_before(e, ctx)):
                # only an earlier iteration's unscale_ reaches it, and the update after it runs
                # whenever it does (``if amp: if apex: ... else: unscale_`` then ``if amp and not apex:
                # update()``): the paths that skip the update are paths that skipped the unscale_
                continue
            if skipped is not None and _accumulation_boundary(ctx, skipped[2]):
                # the if is a gradient-accumulation boundary: the unscale_ belongs under it
                message = (f"`{e.scaler}.unscale_({target})` runs on every micro-batch but `{e.scaler}.step` / "
                           f"`update()` only under `if {skipped[1]}:`: the second micro-batch's unscale_ raises "
                           f"{ALREADY_UNSCALED}")
                yield Violation(e.call, message, Confidence.CERTAIN,
                                help=f"move the unscale_ (and the clipping) under `if {skipped[1]}:`, right before "
                                     f"`{e.scaler}.step({target})`",
                                related=[Location(ctx.path, ctx.line_of(skipped[0].call), f"`{e.scaler}.update()`")])
                continue
            if skipped is not None:
                # the update, not the unscale_, is what to move: report it there
                update, condition, _ = skipped
                message = (f"`{e.scaler}.update()` runs only under `if {condition}:`, but "
                           f"`{e.scaler}.unscale_({target})` is not: the next iteration's unscale_ raises "
                           f"{ALREADY_UNSCALED}")
                yield Violation(update.call, message, Confidence.CERTAIN,
                                help=f"call `{e.scaler}.update()` on every iteration that unscaled, outside the `if` "
                                     f"(`{e.scaler}.step` already skips a step whose gradients are inf/NaN)",
                                related=[Location(ctx.path, ctx.line_of(e.call), f"`{e.scaler}.unscale_({target})`")])
                continue
            message = (f"`{e.scaler}.unscale_({target})` may run a second time before `{e.scaler}.step` / "
                       f"`{e.scaler}.update()` (in a loop over micro-batches, or after an earlier unscale_): it "
                       f"raises {ALREADY_UNSCALED}")
            yield Violation(e.call, message, Confidence.CERTAIN,
                            help=f"unscale once per optimizer step, right before clipping and `{e.scaler}.step({target})`")


    # if not torch.isfinite(grad_norm): continue  (before scaler.update()) -----------------------------
    def _update_skipped_on_overflow(self, ctx, step: Step) -> Iterable[Violation]:
        for s in skipped_updates(ctx, step):
            scaler = s.update.scaler
            message = (f"`continue` under a non-finite check skips `{scaler}.update()` on exactly the steps whose "
                       f"gradients overflowed, where update() would halve the loss scale: the scale never backs "
                       f"off, so while it is too large ({GRAD_SCALER_INIT_SCALE:g} at the start) every step "
                       f"overflows and is skipped")
            if s.unscale is not None:
                target = ctx.code(s.unscale.target) if s.unscale.target is not None else "optimizer"
                message += (f", and the next iteration's `{scaler}.unscale_({target})` raises {ALREADY_UNSCALED}")
            yield Violation(s.skip, message, Confidence.CERTAIN if s.unscale is not None else Confidence.LIKELY,
                            help=f"drop the check: `{scaler}.step(...)` already skips a step whose gradients are "
                                 f"inf/NaN, and `{scaler}.update()` then lowers the scale",
                            related=[Location(ctx.path, ctx.line_of(s.update.call), f"`{scaler}.update()` skipped")])

    # scaler.unscale_(opt) on micro-batches that do not step ------------------------------------------
    def _unscale_without_step(self, ctx, step: Step) -> Iterable[Violation]:
        """OneTrainer's accumulation (fixed upstream): ``scaler.scale(loss).backward()``,
        ``scaler.unscale_(opt)``, clip, ``if update_step: scaler.step(opt)``, ``scaler.update()``.
        Nothing raises (update() every iteration resets the unscale_ state), but the next micro-batch's
        scaled gradients are added to unscaled ones, and its unscale_ divides the earlier ones by
        the scale again: the accumulated gradient is mostly the last micro-batch's."""
        reported = set()
        for bw in step.of_kind("backward"):
            for e in step.unscaled_into(bw, ctx):
                if e.index in reported or step.unscaled_again(e, ctx) or not is_grad_scaler(ctx, e.scaler):
                    continue  # a second unscale_ that raises is reported as such
                reported.add(e.index)
                target = ctx.code(e.target) if e.target is not None else "optimizer"
                stepped = self._stepped_after(ctx, step, e, bw)
                if stepped is not None:
                    # autogluon's TabM loop: zero_grad, loss, unscale_ + clip, then the scaled backward and step
                    step_code = ctx.code(stepped.call)
                    message = (f"`{e.scaler}.unscale_({target})` runs before this iteration's scaled backward: it "
                               f"unscales (and the clip sees) the gradients zero_grad left, and `{step_code}` then "
                               f"skips its own unscale_ (already done this iteration), so the optimizer steps with "
                               f"gradients multiplied by the loss scale (65536 at the start) and an overflow of the "
                               f"backward is never detected")
                    help = (f"move `{e.scaler}.unscale_({target})` and the clip after "
                            f"`{e.scaler}.scale(loss).backward()`, right before `{step_code}`")
                    related = [Location(ctx.path, ctx.line_of(bw.call), "the scaled backward, after it"),
                               Location(ctx.path, ctx.line_of(stepped.call), "the step")]
                else:
                    message = (f"`{e.scaler}.unscale_({target})` runs on iterations that do not step: the next "
                               f"`{e.scaler}.scale(loss).backward()` adds scaled gradients to these unscaled ones, and "
                               f"the next unscale_ divides them by the loss scale again (65536 at the start), so "
                               f"the accumulated gradient is mostly the last micro-batch's")
                    help = (f"unscale (and clip) only on the iterations that call `{e.scaler}.step({target})`, "
                            f"right before it; call `{e.scaler}.update()` on those iterations only")
                    related = [Location(ctx.path, ctx.line_of(bw.call), "the next scaled backward")]
                yield Violation(e.call, message, Confidence.CERTAIN, help=help, related=related)

    @staticmethod
    def _stepped_after(ctx, step: Step, unscale, bw):
        """The ``scaler.step(...)`` of the same scaler that follows the scaled backward ``bw`` in the same iteration
        as ``unscale`` (which comes before ``bw``): the unscale_ belongs to that step's iteration, too early."""
        loop = innermost_loop(ctx, unscale.call, step.scope)
        if loop is None or ctx.line_of(unscale.call) > ctx.line_of(bw.call) or innermost_loop(ctx, bw.call, step.scope) is not loop:
            return None
        return next((s for s in step.of_kind("scaler_step") if s.scaler == unscale.scaler
                     and ctx.line_of(s.call) > ctx.line_of(bw.call) and innermost_loop(ctx, s.call, step.scope) is loop), None)

    # scaler.update() after each of two optimizers' steps ------------------------------------------
    def _update_twice(self, ctx, step: Step) -> Iterable[Violation]:
        for first, between, second in repeated_updates(ctx, step):
            if not is_grad_scaler(ctx, second.scaler):
                continue
            scaler = second.scaler
            message = (f"`{scaler}.update()` runs a second time in the same iteration (after "
                       f"`{ctx.code(between.call)}`): the loss scale is updated once per stepped optimizer, so it "
                       f"grows and backs off twice as fast, and an overflow in one optimizer's gradients halves "
                       f"the scale the other one uses")
            yield Violation(second.call, message, Confidence.CERTAIN,
                            help=f"call `{scaler}.update()` once per iteration, after `{scaler}.step(...)` of every "
                                 f"optimizer (or give each optimizer its own GradScaler)",
                            related=[Location(ctx.path, ctx.line_of(first.call), f"first `{scaler}.update()`")])


    # scaler.unscale_(opt) then scaler.step(opt.optimizer) -------------------------------------------
    def _step_of_another_object(self, ctx, step: Step) -> Iterable[Violation]:
        for e in step.of_kind("scaler_step"):
            unscaled = step.unscaled_through_another_object(e)
            if not unscaled or not is_grad_scaler(ctx, e.scaler):
                continue
            stepped, target = ctx.code(e.target), ctx.code(unscaled[0].target)
            message = (f"`{e.scaler}.step({stepped})` steps another object than `{e.scaler}.unscale_({target})` "
                       f"unscaled: GradScaler keeps its unscale_ state per optimizer object, so step() unscales "
                       f"the same gradients a second time and the optimizer gets them divided by the loss scale "
                       f"({GRAD_SCALER_INIT_SCALE:g} at the start) once too often")
            yield Violation(e.call, message, Confidence.CERTAIN,
                            help=f"pass the same object to both: `{e.scaler}.step({target})`",
                            related=[Location(ctx.path, ctx.line_of(u.call), f"`{e.scaler}.unscale_({ctx.code(u.target)})`")
                                     for u in unscaled])


def _updated_in_the_same_iteration(ctx, step: Step, unscale) -> bool:
    """A ``scaler.update()`` follows ``unscale`` inside the innermost loop around it (not only
    after a loop over micro-batches)."""
    loop = next((a for a in ctx.ancestors(unscale.call) if isinstance(a, (cst.For, cst.While))), None)
    return loop is not None and any(ctx.is_ancestor(loop, u.call) for u in step.following(unscale, "update", unscale.scaler))


def _received(ctx, scaler: str, at: cst.CSTNode) -> bool:
    """``scaler`` is a parameter of the function it is used in."""
    binding = ctx.semantic.lookup(scaler, at) if "." not in scaler else None
    return binding is not None and binding.kind == "param"


def _new_each_iteration(ctx, step: Step, unscale) -> bool:
    """The optimizer ``unscale`` unscales is another one on each iteration of a loop around it: a
    name in it holds a new value each time round (``for name, opt in optimizers.items()``,
    ``opt = self.optimizers[group]`` in its body, ``scaler.unscale_(optimizers[i])``), and the loop's
    body does not unscale it already before (twice in one iteration raises)."""
    text = ctx.code(unscale.target)
    for loop in (a for a in ctx.ancestors(unscale.call) if isinstance(a, (cst.For, cst.While))):
        if ctx.semantic.reads_new_each_iteration(unscale.target, unscale.call, loop):
            return not any(o.kind == "unscale" and o.index < unscale.index and o.scaler == unscale.scaler
                           and o.target is not None and ctx.code(o.target) == text
                           and ctx.is_ancestor(loop.body, o.call) for o in step.events)
    return False


# An if on the micro-batch counter: ``(idx + 1) % accum == 0``, ``step % grad_accum_steps``.
_ACCUMULATION = re.compile(r"%|accum", re.I)


def _conditional_update(ctx, step: Step, unscale) -> Optional[Tuple[object, str, cst.BaseExpression]]:
    """The ``scaler.update()`` after ``unscale`` that an ``if`` around it (not around the unscale_)
    may skip, with that ``if``'s condition. An ``if`` whose test holds wherever the unscale_ runs
    (``if amp: unscale_`` ... ``if amp: update()``) skips nothing the unscale_ did."""
    for update in step.following(unscale, "update", unscale.scaler):
        for a in ctx.ancestors(update.call):
            if isinstance(a, cst.If) and not ctx.is_ancestor(a, unscale.call) \
                    and not (ctx.is_ancestor(a.body, update.call) and holds_at(ctx, unscale.call, a.test)) \
                    and not _alternative_step(ctx, a, update.call, unscale.call):
                return update, ctx.code(a.test), a.test
    return None


def _alternative_step(ctx, branch: cst.If, update: cst.Call, unscale: cst.Call) -> bool:
    """Is ``update`` in an ``elif`` of ``branch`` whose own test holds wherever the unscale_ runs, with
    ``branch``'s body stepping the optimizer another way, or ``branch``'s test false wherever the unscale_
    runs? ``if on_tpu(): xm.optimizer_step(opt)`` / ``elif use_amp: scaler.step(opt); scaler.update()`` (HF
    Trainer 4.x): the earlier branch is another backend's step, not a condition on the update; ``if
    self.deepspeed: pass`` after an unscale_ under ``not self.deepspeed`` is never taken where it ran (HF
    Trainer copies, ProphetNet's JGR; unseen set 19, T19-1)."""
    inner = branch.orelse
    while isinstance(inner, cst.If) and not ctx.is_ancestor(inner.body, update):
        inner = inner.orelse
    if not isinstance(inner, cst.If) or not holds_at(ctx, unscale, inner.test):
        return False
    if fails_at(ctx, unscale, branch.test):
        return True
    def name(c: cst.Call) -> str:
        return c.func.attr.value if isinstance(c.func, cst.Attribute) else getattr(c.func, "value", "")
    return any(ctx.is_ancestor(branch.body, c) and str(name(c)).endswith("step") for c in ctx.nodes(cst.Call))


def _accumulation_boundary(ctx, test: cst.BaseExpression) -> bool:
    """The ``if`` test is a gradient-accumulation boundary: ``step % accum == 0``, or a name computed
    from one (``is_update_step = (step + 1) % accumulation_steps == 0``)."""
    return bool(_ACCUMULATION.search(ctx.code(test))) or any(
        _ACCUMULATION.search(n) for n in ctx.semantic.computed_from(test, test))
