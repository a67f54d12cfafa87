"""The training step, as the training-loop rules (AMP301-AMP304) see it.

One pass over the file's calls classifies the events of a training step (``backward``, GradScaler
``scale`` / ``unscale_`` / ``step`` / ``update``, a direct ``optimizer.step()``, ``zero_grad``,
gradient clipping) and groups them by scope (a function, or module-level code for scripts). Then,
per scope, a small path-sensitive walk over the statements in execution order records which states
reach each event: is there a scaled backward whose gradients were not unscaled yet, a plain
``backward`` while a GradScaler steps, and so on. Branches are followed separately; two ``if``
statements testing the same condition (or conditions on the same AMP switch: ``use_amp``,
``scaler is not None``, ``args.fp16`` ...) are taken the same way on one path, so the common
``if amp: scaled backward ... else: plain backward`` / ``if amp: scaler.step ... else: opt.step()``
shape is not read as mixing the two. Loops are iterated to a fixed point.

Computed once per file (memoised in ``ctx._cache``) and shared by the rules.
"""
from __future__ import annotations

import re
from pathlib import Path
from dataclasses import dataclass, field, replace
from typing import Dict, FrozenSet, Iterable, List, Optional, Set, Tuple

import libcst as cst

from ..discovery import TEST_PATH
from .evidence import DEEPSPEED_FP16, GRAD_SCALER_NAMES, autocast_signal
from .definitions import definition_of
from .imports import dotted_name

CLIP_NAMES = {
    "torch.nn.utils.clip_grad_norm_",
    "torch.nn.utils.clip_grad_value_",
    "torch.nn.utils.clip_grad_norm",
    "torch.nn.utils.clip_grad.clip_grad_norm_",
    "torch.nn.utils.clip_grad.clip_grad_value_",
    "torch.nn.utils.clip_grad.clip_grad_norm",
    # torch >= 2.6: clip with a total norm computed by get_total_norm
    "torch.nn.utils.clip_grads_with_norm_",
    "torch.nn.utils.clip_grad.clip_grads_with_norm_",
    # timm's clipping (timm/utils/clip_grad.py, timm/utils/agc.py): called directly after a scaled
    # backward it clips scaled gradients (timm's NativeScaler unscales before its own clip_grad)
    "timm.utils.dispatch_clip_grad",
    "timm.utils.clip_grad.dispatch_clip_grad",
    "timm.utils.adaptive_clip_grad",
    "timm.utils.agc.adaptive_clip_grad",
}

# ``accelerator.backward(loss)``, ``model_engine.backward(loss)`` (DeepSpeed), ``fabric.backward``:
# a training engine's backward, which scales the loss itself when its precision asks for it.
_ENGINE_RECEIVER = re.compile(r"accel|engine|fabric|deepspeed|trainer|strategy|runner|^ds|^model$", re.I)
_SCALER_NAME = re.compile(r"scaler", re.I)
# Receivers of ``.clip_grad_norm_(...)`` that unscale before they clip (accelerate's Accelerator,
# Lightning Fabric, DeepSpeed / ColossalAI engines and boosters, trainers and strategies).
_SELF_UNSCALING_CLIP = re.compile(r"accel|fabric|engine|trainer|strategy|deepspeed|runner|^ds|booster|plugin|lightning", re.I)
_OPTIMIZER_NAME = re.compile(r"optim|^opt$|^opt_|_opt$|^opt[A-Z0-9]|^optD|^optG", re.I)
_NOT_OPTIMIZER = re.compile(r"sched|lr|ema|swa|warmup", re.I)
# Conditions that switch mixed precision on or off are taken to be one switch.
_AMP_SWITCH = re.compile(r"(^|[._])(use_)?amp($|[._])|amp_|fp16|scaler|grad_scal|mixed_prec|half|autocast", re.I)
_TEST_FUNCTION = re.compile(r"^test")
# A loss whose expression mentions scaling (``loss * self.loss_scale``, ``self.scale_loss(loss)``)
# may be scaled by hand or by a helper: neither plain nor known-scaled.
_MAYBE_SCALED = re.compile(r"scal", re.I)
# ... but a weight of one term of the loss (``kl_scale_factor``, ``aux_loss_scale_factor``) is not
# loss scaling: it stays in the loss the optimizer sees.
_LOSS_WEIGHT = re.compile(r"^(?!(loss|grad|dynamic|cur|init|inv)_scale)\w+_scale_factor$", re.I)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


def _mentions_scale(text: str) -> bool:
    """Does code text name loss scaling: some identifier mentions scaling and is not a term weight."""
    return any(_MAYBE_SCALED.search(w) and not _LOSS_WEIGHT.match(w) for w in _IDENTIFIER.findall(text))

MAX_STATES = 128
# torch.amp.GradScaler's default init_scale (torch/amp/grad_scaler.py): the factor scaled gradients
# carry until the first overflow halves it.
GRAD_SCALER_INIT_SCALE = 2.0 ** 16
# The loss scaler of a framework's backward under its float16 mixed precision (Lightning's
# ``self.manual_backward(loss)`` with ``precision="16-mixed"``, Fabric's and accelerate's
# ``backward(loss)``): it scales the loss like ``scaler.scale(loss).backward()`` and unscales in the
# framework's own optimizer step or clip. Event.scaler of such a backward is "<engine:NAME>".
ENGINE_SCALER = "<engine:{}>"


@dataclass(frozen=True)
class Event:
    index: int  # position among the file's events, source order
    kind: str  # backward | unscale | scaler_step | update | opt_step | zero_grad | clip
    call: cst.Call
    scaler: Optional[str] = None  # dotted text of the GradScaler (scaler, self.scaler, ...)
    target: Optional[cst.BaseExpression] = None  # the optimizer argument / receiver
    # backward only: "scaled" (GradScaler), "plain" (a loss computed here, unscaled), "engine"
    # (accelerator / DeepSpeed / Lightning), "apex" (amp.scale_loss), "maybe_scaled" (its
    # expression mentions scaling), "unknown"
    how: str = ""
    # backward only: the branch conditions under which its loss was scaled (``if self.scaler is not
    # None: loss = self.scaler.scale(loss)`` then ``loss.backward()``): on a path that took the
    # other way the backward is plain
    scaled_when: Tuple[Tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class _State:
    scaled: FrozenSet[str] = frozenset()  # scalers with a scaled backward since their last step
    unscale_due: FrozenSet[str] = frozenset()  # scalers whose scaled grads were not unscaled yet
    plain_backward: FrozenSet[int] = frozenset()  # plain backward events since the last step
    # conditions taken on this path; an atom that is a frozenset of such facts is a conjunction
    # (``(parts, False)``: not all of them hold)
    assume: FrozenSet[Tuple[object, bool]] = frozenset()
    # (scaler, optimizer, index of the unscale_ event) for the pairs unscale_'d since that scaler's
    # last step / update: a second unscale_ of the same optimizer raises
    unscaled: FrozenSet[Tuple[str, str, int]] = frozenset()
    # (scaler, index of the unscale_ event) for gradients unscaled and not yet stepped or zeroed:
    # a scaled backward of that scaler now adds scaled gradients to unscaled ones
    unstepped: FrozenSet[Tuple[str, int]] = frozenset()


@dataclass
class Step:
    """The training-step facts of one scope (a function, or the module's top level)."""
    scope: cst.CSTNode  # FunctionDef or Module
    events: List[Event] = field(default_factory=list)
    states: Dict[int, Set[_State]] = field(default_factory=dict)  # event index -> states reaching it
    # scaler -> (path, line) of a caller's scaled backward: gradients that arrive already scaled
    # (a function that receives the GradScaler and steps it, see ``_scaled_on_entry``)
    entry_scaled: Dict[str, Tuple[str, int]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.scope.name.value if isinstance(self.scope, cst.FunctionDef) else "<module>"

    def of_kind(self, *kinds: str) -> List[Event]:
        return [e for e in self.events if e.kind in kinds]

    @property
    def backwards(self) -> List[Event]:
        return self.of_kind("backward")

    @property
    def is_test(self) -> bool:
        return bool(_TEST_FUNCTION.match(self.name))

    def reaching(self, event: Event) -> Set[_State]:
        return self.states.get(event.index, set())

    # ---- questions the rules ask --------------------------------------------------------------
    def clip_before_unscale(self, event: Event) -> FrozenSet[str]:
        """Scalers whose scaled gradients may reach this clip without ``unscale_``."""
        out: Set[str] = set()
        for s in self.reaching(event):
            out |= s.unscale_due
        return frozenset(out)

    def scaled_at(self, event: Event) -> Tuple[FrozenSet[str], bool]:
        """Scalers that may have scaled the gradients this event sees (since their last step), and
        whether every path reaching it carries exactly those."""
        states = self.reaching(event)
        union: Set[str] = set()
        for s in states:
            union |= s.scaled
        every = bool(states) and all(s.scaled == frozenset(union) for s in states)
        return frozenset(union), every

    def plain_backwards_before(self, event: Event) -> List[Event]:
        """Plain (unscaled) backward events that reach this ``scaler.step`` (since the last step): the
        step unscales what they accumulated too, a scaled backward beside them on the same path or not
        (``l_percep.backward(retain_graph=True)`` then ``scaler.scale(l_total).backward()``, neosr, B16-3)."""
        found: Set[int] = set()
        for s in self.reaching(event):
            found |= s.plain_backward
        return [e for e in self.events if e.index in found]

    def unscaled_again(self, event: Event, ctx) -> bool:
        """This ``scaler.unscale_(optimizer)`` may run when the same optimizer was already unscaled
        since the scaler's last step / update (a second unscale_ raises). An unscale_ on the other
        branch of an ``if`` around this one does not count: reaching it takes the condition to change
        between iterations (``if accumulation_steps > 1: ... else: unscale_, step, update``), which
        a configuration value does not."""
        return bool(self.unscaled_before(event, ctx))

    def unscaled_before(self, event: Event, ctx) -> List[Event]:
        """The unscale_ events of the same scaler and optimizer whose unscaling may still hold when
        ``event`` runs (``unscaled_again``); one at or after ``event`` in source order came around
        the loop."""
        key = unscale_key(event)
        if key is None:
            return []
        by_index = {e.index: e for e in self.events}
        found = {k[2] for s in self.reaching(event) for k in s.unscaled
                 if k[:2] == key and not _exclusive(ctx, by_index[k[2]].call, event.call)}
        return [by_index[i] for i in sorted(found)]

    def unscaled_through_another_object(self, event: Event) -> List[Event]:
        """For ``scaler.step(X)``: the unscale_ events of that scaler, not undone by a step / update,
        whose argument is ``X`` seen through or as the object wrapping it (``unscale_(opt)`` then
        ``step(opt.optimizer)``, or the other way round). GradScaler keeps its per-optimizer state by
        object, so ``step`` finds ``X`` not unscaled and unscales the same gradients a second time."""
        stepped = dotted_name(event.target) if event.kind == "scaler_step" and event.target is not None else None
        if not stepped or not event.scaler:
            return []
        by_index = {e.index: e for e in self.events}
        found = {i for s in self.reaching(event) for scaler, target, i in s.unscaled
                 if scaler == event.scaler and (stepped.rpartition(".")[0] == target or target.rpartition(".")[0] == stepped)}
        if any((event.scaler, stepped) == k[:2] for s in self.reaching(event) for k in s.unscaled):
            return []  # the stepped object itself was unscaled too
        return [by_index[i] for i in sorted(found)]

    def unscaled_into(self, backward: Event, ctx) -> List[Event]:
        """The unscale_ events of the scaler of this scaled ``backward`` whose gradients may not
        have been stepped or zeroed when it runs: it adds scaled gradients to unscaled ones
        (gradient accumulation that unscales every micro-batch and steps only on some)."""
        if backward.kind != "backward" or backward.how != "scaled" or not backward.scaler:
            return []
        by_index = {e.index: e for e in self.events}
        found = {i for s in self.reaching(backward) for scaler, i in s.unstepped
                 if scaler == backward.scaler and not _exclusive(ctx, by_index[i].call, backward.call)
                 and not any((atom, not v) in s.assume for atom, v in backward.scaled_when)}
        return [by_index[i] for i in sorted(found)]

    def backward_losses(self, ctx) -> Set[str]:
        """The code of what this scope backpropagates: ``X`` of ``X.backward()`` and of
        ``scaler.scale(X).backward()`` (traiNNer's generator loss is called ``l_g_total``)."""
        out: Set[str] = set()
        for e in self.of_kind("backward"):
            func = e.call.func
            target = func.value if isinstance(func, cst.Attribute) else None
            if isinstance(target, cst.Call) and isinstance(target.func, cst.Attribute) \
                    and target.func.attr.value == "scale" and target.args:
                target = target.args[0].value
            if target is not None:
                out.add(ctx.code(target))
        return out

    def following(self, event: Event, kind: str, scaler: Optional[str] = None) -> List[Event]:
        """Events of ``kind`` (of the same scaler) after ``event`` in source order."""
        return [e for e in self.events if e.index > event.index and e.kind == kind
                and (scaler is None or e.scaler == scaler)]


# ---- classification of calls ------------------------------------------------------------------

def _last(dotted: Optional[str]) -> str:
    return dotted.rsplit(".", 1)[-1] if dotted else ""


def _text(ctx, expr: cst.CSTNode) -> str:
    name = dotted_name(expr) if isinstance(expr, cst.BaseExpression) else None
    return name if name is not None else ctx.code(expr)


def is_test_file(ctx) -> bool:
    """A test module of the project (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``,
    judged on the path inside the project root): its training steps and models are fixtures
    exercising code, not training runs. Worked out once per context (rules and the dtype model ask
    it again and again; the path is resolved each time)."""
    known = ctx.__dict__.get("_is_test_file") if hasattr(ctx, "__dict__") else None
    if known is not None and known[0] == ctx.path:
        return known[1]
    found = bool(TEST_PATH.search(_path_in_project(ctx)))
    if hasattr(ctx, "__dict__"):
        ctx.__dict__["_is_test_file"] = (ctx.path, found)
    return found


def _path_in_project(ctx) -> str:
    """The file's path inside the project root (as given where it lies outside), POSIX-style."""
    path = Path(ctx.path)
    root = getattr(ctx.project, "root", None)
    if root is not None:
        try:
            path = path.resolve().relative_to(root)
        except ValueError:
            pass
    return path.as_posix()


def is_benchmark_step(ctx, scope: cst.CSTNode) -> bool:
    """A training step that times or profiles (a benchmark's script or directory, ``profiling/``; a function
    named for it, ``benchmark_step`` / ``measure_perf``): its steps measure speed on a few batches, they
    are no training run (the same words give precision evidence the benchmark role)."""
    from ..precision_facts import _BENCHMARK, _benchmark_file  # noqa: PLC0415 (one vocabulary for both)
    if _benchmark_file(_path_in_project(ctx)):
        return True
    names = [a.name.value for a in (scope, *ctx.ancestors(scope)) if isinstance(a, (cst.FunctionDef, cst.ClassDef))]
    return any(_BENCHMARK.search(n) or _PERF.search(n) for n in names)


_PERF = re.compile(r"(?i)(^|_)perf(_|$)")


def scope_of(ctx, node: cst.CSTNode) -> cst.CSTNode:
    """The function holding ``node`` (lambdas and classes are seen through), or the module."""
    for a in ctx.ancestors(node):
        if isinstance(a, cst.FunctionDef):
            return a
    return ctx.module


def _assigned_targets(ctx, wanted) -> Set[str]:
    """Dotted targets (``scaler``, ``self.opt``) assigned the result of a call whose name
    ``wanted(name)`` accepts."""
    out: Set[str] = set()
    for call in ctx.nodes(cst.Call):
        if not wanted(ctx.call_name(call) or ""):
            continue
        parent = ctx.parent(call)
        targets = [t.target for t in parent.targets] if isinstance(parent, cst.Assign) else \
            [parent.target] if isinstance(parent, cst.AnnAssign) else []
        out.update(d for d in map(dotted_name, targets) if d)
    return out


def _known_scalers(ctx) -> Set[str]:
    """Dotted targets assigned a GradScaler in this file (``scaler``, ``self.scaler``)."""
    return _assigned_targets(ctx, lambda name: name in GRAD_SCALER_NAMES
                             or (name.startswith("torch.") and name.endswith(".GradScaler")))


def _is_scaler(receiver: Optional[str], known: Set[str]) -> bool:
    if not receiver:
        return False
    return receiver in known or bool(_SCALER_NAME.search(_last(receiver)))


def _is_optimizer(receiver: Optional[str], known_optimizers: Set[str]) -> bool:
    if not receiver:
        return False
    if receiver in known_optimizers:
        return True
    last = _last(receiver)
    return bool(_OPTIMIZER_NAME.search(last)) and not _NOT_OPTIMIZER.search(last)


def _known_optimizers(ctx) -> Set[str]:
    return _assigned_targets(ctx, lambda name: name.startswith("torch.optim.") and name.count(".") <= 3
                             and "lr_scheduler" not in name)


def _scale_call_scaler(ctx, expr: cst.CSTNode, known: Set[str]) -> Optional[str]:
    """``S`` when ``expr`` is (or wraps) ``S.scale(...)``: ``scaler.scale(loss)``,
    ``scaler.scale(loss) / accum``, ``(scaler.scale(loss))``."""
    while True:
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "scale":
            receiver = _text(ctx, expr.func.value)
            return receiver
        if isinstance(expr, cst.BinaryOperation):
            expr = expr.left
            continue
        return None


class _Bindings:
    """Per scope: local names assigned from ``S.scale(...)``, names assigned anything else, and
    ``with amp.scale_loss(...) as name`` (apex)."""

    def __init__(self) -> None:
        self.scaled: Dict[str, str] = {}
        self.scaled_when: Dict[str, Tuple[Tuple[str, bool], ...]] = {}
        self.assigned: Set[str] = set()
        self.maybe: Set[str] = set()  # assigned from something that mentions scaling
        self.apex: Set[str] = set()
        self.params: Set[str] = set()


def _bindings(ctx, known: Set[str]) -> Dict[cst.CSTNode, _Bindings]:
    """Per function (and the module): how its names are bound, from the semantic model (any
    binding in the scope counts, wherever it is: a loss scaled in one branch is scaled)."""
    out: Dict[cst.CSTNode, _Bindings] = {}
    for scope in ctx.semantic.scopes():
        if scope.kind not in ("function", "module"):
            continue
        b = out.setdefault(scope.node, _Bindings())
        for name, bound in scope.bindings.items():
            for binding in bound:
                stmt = binding.statement
                if binding.kind == "param":
                    b.params.add(name)
                elif binding.kind == "assign" and isinstance(stmt, cst.Assign) \
                        and any(t.target is binding.node for t in stmt.targets):
                    scaler = _scale_call_scaler(ctx, stmt.value, known)
                    if scaler is not None:
                        # a second scaled binding of the name: scaled whatever the branch
                        b.scaled_when[name] = () if name in b.scaled else _branch_facts(ctx, stmt, scope.node)
                        b.scaled[name] = scaler
                    elif _mentions_scaling(ctx, stmt.value):
                        b.maybe.add(name)
                    else:
                        b.assigned.add(name)
                elif binding.kind == "augassign":
                    if isinstance(stmt.operator, (cst.MultiplyAssign, cst.DivideAssign)) \
                            and _mentions_scale(ctx.code(stmt.value)):
                        b.maybe.add(name)
                    else:
                        b.assigned.add(name)
                elif binding.kind == "with" and isinstance(binding.value, cst.Call) and not binding.part \
                        and _last(ctx.call_name(binding.value)) == "scale_loss":
                    b.apex.add(name)
    return out


def _branch_facts(ctx, stmt: cst.CSTNode, scope: cst.CSTNode) -> Tuple[Tuple[str, bool], ...]:
    """What a path that runs ``stmt`` knows of the ``if`` tests around it, up to its scope."""
    facts: List[Tuple[str, bool]] = []
    child = stmt
    for node in ctx.ancestors(stmt):
        if node is scope:
            break
        if isinstance(node, cst.If) and child is not node.test:
            if child is node.body:
                facts += _facts(ctx, node.test, True)
            elif isinstance(node.orelse, cst.Else) and child is node.orelse:
                facts += _facts(ctx, node.test, False)
        child = node
    return tuple(facts)


def _mentions_scaling(ctx, expr: cst.BaseExpression) -> bool:
    """``loss * self.loss_scale``, ``loss / scale``, ``self.scale_loss(loss)``: the value is
    scaled by hand or by a helper (only the top-level operation counts, so
    ``F.cross_entropy(logits * self.logit_scale, y)`` is not)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Multiply, cst.Divide)):
        return _mentions_scale(ctx.code(expr.left)) or _mentions_scale(ctx.code(expr.right))
    if isinstance(expr, cst.Call):
        name = dotted_name(expr.func)
        return bool(name and _mentions_scale(name.rsplit(".", 1)[-1]))
    return False


def _root_name(expr: cst.BaseExpression) -> Optional[str]:
    """``loss`` for ``loss``, ``loss.mean()``, ``loss / accum``, ``(loss * w).sum()``."""
    while True:
        if isinstance(expr, cst.Name):
            return expr.value
        if isinstance(expr, cst.Attribute):
            expr = expr.value
        elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            expr = expr.func.value
        elif isinstance(expr, cst.BinaryOperation):
            expr = expr.left
        else:
            return None


def _classify_backward(ctx, call: cst.Call, known: Set[str], bind: _Bindings) -> Tuple[str, Optional[str]]:
    """(how, scaler) of a ``X.backward(...)`` call."""
    receiver = call.func.value  # type: ignore[union-attr]
    scaler = _scale_call_scaler(ctx, receiver, known)
    if scaler is not None:
        return "scaled", scaler
    positional = [a for a in call.args if a.keyword is None and not a.star]
    given = positional[:1] or [a for a in call.args if a.keyword is not None and a.keyword.value == "gradient"]
    if given:
        # ``features.backward(scaler.scale(x_grad))``: the gradient injected into the graph is scaled,
        # which is loss scaling (d(s*L)/dfeatures = s * x_grad; insightface's Partial FC)
        scaler = _scale_call_scaler(ctx, given[0].value, known)
        if scaler is not None and scaler in known:
            return "scaled", scaler
    rtext = dotted_name(receiver)
    if positional and rtext is not None:
        first = ctx.code(positional[0].value)
        if _ENGINE_RECEIVER.search(_last(rtext)) or "loss" in first.lower():
            return "engine", None
    root = _root_name(receiver)
    if root is not None and root in bind.scaled:
        return "scaled", bind.scaled[root]
    if _mentions_scaling(ctx, receiver) or (root is not None and root in bind.maybe):
        return "maybe_scaled", None
    if root is not None:
        if root in bind.apex:
            return "apex", None
        if root in bind.assigned and root not in bind.params:
            return "plain", None
    return "unknown", None


def _classify(ctx, call: cst.Call, known: Set[str], optimizers: Set[str],
              bindings: Dict[cst.CSTNode, _Bindings]) -> Optional[Tuple[str, Optional[str], Optional[cst.BaseExpression], str]]:
    func = call.func
    if isinstance(func, cst.Attribute):
        method = func.attr.value
        receiver = dotted_name(func.value)
        if method == "backward":
            bind = bindings.get(scope_of(ctx, call)) or _Bindings()
            how, scaler = _classify_backward(ctx, call, known, bind)
            if how == "engine" and receiver:
                engine = re.search(r"accelerator|fabric", _last(receiver), re.I)
                scaler = _engine_scaler(ctx, engine.group(0).lower()) if engine else \
                    _deepspeed_scaler(ctx) if _deepspeed_engine(ctx, func.value, call) else None
            return "backward", scaler, None, how
        if method == "step" and not call.args and _deepspeed_engine(ctx, func.value, call):
            return "opt_step", None, func.value, ""  # (the engine unscales, clips and steps)
        if method == "manual_backward":
            return "backward", _engine_scaler(ctx, "lightning"), None, "engine"
        if method == "zero_grad":
            return "zero_grad", None, None, ""
        if "unscale" in method and not (method == "unscale_" and _is_scaler(receiver, known)):
            return "unscale", None, None, ""  # a helper that unscales (``self._unscale_grads()``)
        if method in ("unscale_", "step", "update") and _is_scaler(receiver, known):
            target = call.args[0].value if call.args and call.args[0].keyword is None else None
            if target is None:  # ``scaler.step(optimizer=self.optimizer)`` (ml-cvnets)
                target = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "optimizer"), None)
            if method == "unscale_":
                return "unscale", receiver, target, ""
            if method == "step" and target is not None:
                return "scaler_step", receiver, target, ""
            if method == "update":
                return "update", receiver, None, ""
            return None
        if method == "step" and _is_optimizer(receiver, optimizers) and not _is_scaler(receiver, known):
            return "opt_step", None, func.value, ""
    if isinstance(func, cst.Name) and "unscale" in func.value:
        return "unscale", None, None, ""
    engine = _engine_event(ctx, call)
    if engine is not None:
        kind, scaler, optimizer = engine
        return ("backward", scaler, None, "scaled") if kind == "backward" else ("scaler_step", scaler, optimizer, "")
    name = ctx.call_name(call)
    if name in CLIP_NAMES or _named_clip(ctx, call):
        return "clip", None, None, ""
    if same_file_function(ctx, call) is not None:
        return ("clip", None, None, "helper") if _clipping_helper(ctx, call) else None
    if _clipping_method_of_another_object(ctx, call) or _clipping_callable_attribute(ctx, call):
        return "clip", None, None, "helper"
    if isinstance(func, cst.Attribute) and func.attr.value == "clip_grad_norm_" and isinstance(func.value, (cst.Name, cst.Attribute)):
        receiver = dotted_name(func.value)
        # FSDP's ``model.clip_grad_norm_(max_norm)`` clips what it holds; accelerate's and Fabric's
        # (and other engines') clip methods unscale first, and an optimizer's is its own protocol.
        if receiver and not _SELF_UNSCALING_CLIP.search(_last(receiver)) and not _is_optimizer(receiver, optimizers) \
                and not _is_scaler(receiver, known):
            return "clip", None, None, "method"
    if name == "torch.autograd.backward":
        return "backward", None, None, "unknown"
    return None


def _engine_scaler(ctx, engine: str) -> Optional[str]:
    """``ENGINE_SCALER`` for ``engine`` when the code runs under a float16 flag of a trainer or
    accelerator (``precision="16-mixed"``, ``mixed_precision="fp16"``: they bring a GradScaler) and
    its parameters are not half (pure half has no loss scaler); None otherwise."""
    regime = ctx.regime
    if regime is None or regime.half_params is not None:
        return None
    if regime.override == "fp16-mixed" or any(sig.kind == "flag" and sig.dtype == "float16" and sig.enabled
                                              for sig, _ in regime.signals):
        # (a configured fp16-mixed is the user's trainer flag, set where amplint does not see it)
        return ENGINE_SCALER.format(engine)
    return None


def _deepspeed_scaler(ctx) -> Optional[str]:
    """``ENGINE_SCALER`` for DeepSpeed when the code runs under a DeepSpeed fp16 config (dynamic loss
    scaling in the engine's ``backward``, unscaling in its ``step``) and no optimizer steps float16
    parameters itself; None otherwise (bf16, no config seen)."""
    regime = ctx.regime
    if regime is None or regime.half_optimizer is not None:
        return None
    if any(sig.kind == "flag" and sig.dtype == "float16" and sig.enabled and sig.note.startswith(DEEPSPEED_FP16)
           for sig, _ in regime.signals):
        return ENGINE_SCALER.format("deepspeed")
    return None


def _deepspeed_engine(ctx, receiver: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``receiver`` is a DeepSpeed engine: a name (or ``self.<attr>``) bound from
    ``deepspeed.initialize(...)`` (``model_engine, optimizer, _, _ = deepspeed.initialize(...)``)."""
    if isinstance(receiver, cst.Name):
        bindings = ctx.semantic.reaching(receiver.value, at)
    elif isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self":
        cls = ctx.enclosing_class(at)
        bindings = ctx.semantic.attribute_bindings(cls, receiver.attr.value) if cls is not None else []
    else:
        return False
    for b in bindings:
        value = b.value
        if isinstance(value, cst.Subscript):  # ``deepspeed.initialize(...)[0]``
            value = value.value
        if isinstance(value, cst.Call) and ctx.call_name(value) == "deepspeed.initialize":
            return True
    return False


def engine_loss_scaling(ctx):
    """The evidence (a context ``Evidence``) that code on a known training path runs under a
    framework's float16 mixed precision, which brings a loss scaler (Fabric / Lightning
    ``precision="16-mixed"``, accelerate ``mixed_precision="fp16"``, a configured fp16-mixed),
    with parameters not half; None otherwise (bf16, fp32, pure half, library code)."""
    regime = ctx.regime
    if regime is None or not regime.backward_known or _engine_scaler(ctx, "any") is None:
        return None
    if regime.override == "fp16-mixed":
        return regime.fp16_autocast
    return next((ev for sig, ev in regime.signals if sig.kind == "flag" and sig.dtype == "float16" and sig.enabled),
                None)


_ENGINE_LINE = r"^\s*(async\s+)?def\s|\.scale\s*\(.*\)\s*\.\s*backward\s*\(|\bself\.\w+\.step\s*\("
_DEF_LINE = re.compile(r"^(\s*)(?:async\s+)?def\s+(\w+)")
_SELF_SCALE = re.compile(r"\bself\.(\w+)\.scale\s*\(")
_SELF_STEP = re.compile(r"\bself\.(\w+)\.step\s*\(")


def _engine_methods(ctx) -> Dict[str, Tuple[str, str]]:
    """Methods of the project's classes that run their GradScaler for a caller: name -> ("backward",
    attr) for ``self.<attr>.scale(loss).backward()``, ("step", attr) for ``self.<attr>.step(opt)`` of
    such an attribute (catalyst's AMPEngine.backward_loss / optimizer_step). From a line grep of the
    project (the objects are reached through arguments: the call graph does not follow them)."""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    lines = grep(ctx, _ENGINE_LINE)  # (cached per project; noted for the results cache on each call)
    # grouped once per project, not once per file asking: the lines are every ``def`` of the project,
    # and only this file's own (as the context has them, an editor's buffer) can differ between files
    here = str(Path(ctx.path).resolve())
    key = (len(lines), tuple(text for path, _, text in lines if path == here))
    memo = ctx.project.memo("engine_methods") if ctx.project is not None else ctx._cache.setdefault("engine_methods", {})
    cached = memo.get(key)
    if cached is not None:
        return cached
    by_file: Dict[str, List[Tuple[int, str]]] = {}
    for path, line, text in lines:
        by_file.setdefault(path, []).append((line, strip_comment(text)))
    found: Dict[str, Tuple[str, str]] = {}
    for rows in by_file.values():
        rows.sort()
        owners: List[Tuple[str, str, str]] = []  # (kind, attr, method)
        for i, (_, text) in enumerate(rows):
            scale, step = _SELF_SCALE.search(text), _SELF_STEP.search(text)
            if _DEF_LINE.match(text) or (scale is None and step is None):
                continue
            indent = len(text) - len(text.lstrip())
            for _, before in reversed(rows[:i]):
                d = _DEF_LINE.match(before)
                if d is not None and len(d.group(1)) < indent:
                    if scale is not None:
                        owners.append(("backward", scale.group(1), d.group(2)))
                    else:
                        owners.append(("step", step.group(1), d.group(2)))
                    break
        scalers = {attr for kind, attr, _ in owners if kind == "backward"}
        for kind, attr, method in owners:
            if attr in scalers and method not in ("backward", "step", "__init__"):
                found.setdefault(method, (kind, attr))
    memo[key] = found
    return found


def _engine_event(ctx, call: cst.Call) -> Optional[Tuple[str, str, Optional[cst.BaseExpression]]]:
    """(kind, scaler, optimizer) for ``runner.engine.backward_loss(loss, model, optimizer)`` /
    ``runner.engine.optimizer_step(loss, model, optimizer)`` where a project method of that name
    scales the backward / steps the scaler (``_engine_methods``): the scaler is ``runner.engine.
    scaler``. None for other calls, and for calls on ``self`` (a method of this object is a step of
    its own)."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    receiver = dotted_name(func.value)
    if receiver is None or receiver.split(".", 1)[0] in ("self", "cls"):
        return None
    method = func.attr.value
    if "backward" not in method and "step" not in method:
        return None
    found = _engine_methods(ctx).get(method)
    if found is None:
        return None
    kind, attr = found
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    optimizer = next((a for a in positional if _OPTIMIZER_NAME.search(_last(dotted_name(a) or ""))), None)
    return kind, f"{receiver}.{attr}", optimizer


def _named_clip(ctx, call: cst.Call) -> bool:
    """A callable named for gradient clipping applied to parameters: ``self.grad_clip_fn(self.model
    .parameters())`` (catalyst's callback holds ``partial(clip_grad_norm_, ...)`` from a registry)."""
    func = call.func
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    if not re.search(r"grad_clip|clip_grad", last, re.I) or last in ("clip_grad_norm_", "clip_grad_value_"):
        return False
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    first = positional[0] if positional else None
    return isinstance(first, cst.Call) and isinstance(first.func, cst.Attribute) and first.func.attr.value == "parameters"


def same_file_function(ctx, call: cst.Call) -> Optional[cst.FunctionDef]:
    """The function of this file that ``call`` runs: ``f(...)`` of a module-level ``def f``, or
    ``self.m(...)`` of a method ``m`` of the calling method's own class."""
    func = call.func
    table = ctx._cache.get("training_local_functions")
    if table is None:
        table = {}
        for fn in ctx.nodes(cst.FunctionDef):
            parent = ctx.parent(fn)
            owner = ctx.parent(parent) if isinstance(parent, cst.IndentedBlock) else parent
            if parent is ctx.module or owner is ctx.module:
                table[(None, fn.name.value)] = fn
            elif isinstance(owner, cst.ClassDef):
                table[(owner, fn.name.value)] = fn
        ctx._cache["training_local_functions"] = table
    if isinstance(func, cst.Name):
        # a function defined in the calling function (a closure: ``def _maybe_clip(m): ...`` in the
        # training step), else a module-level one
        caller = ctx.enclosing_function(call)
        binding = ctx.semantic.lookup(func.value, call) if caller is not None else None
        if binding is not None and binding.kind == "def" and isinstance(binding.node, cst.FunctionDef) \
                and ctx.enclosing_function(binding.node) is caller:
            return binding.node
        return table.get((None, func.value))
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        cls = ctx.enclosing_class(call)
        return table.get((cls, func.attr.value)) if cls is not None else None
    return None


def _clipping_helper(ctx, call: cst.Call) -> bool:
    """``call`` runs a function of this file that clips gradients and does nothing else of a
    training step (no backward, unscale_, step or update): ``self._clip_gradients()`` between a
    scaled backward and ``scaler.step`` clips scaled gradients like the clip written in place.
    A clip under an AMP switch in the helper (``if not self.use_amp:``) is not counted."""
    fn = same_file_function(ctx, call)
    if fn is None or fn is scope_of(ctx, call):
        return False
    return _clips_only(ctx, fn)


# The names of hook methods worth opening another file for (each costs a parse).
_CLIP_HOOK_NAME = re.compile(r"(?i)clip|optimi[sz]")


def _clipping_method_of_another_object(ctx, call: cst.Call) -> bool:
    """``task.on_before_optimization(i)``: a method of another object (the task a trainer was handed)
    whose every definition in the project's classes clips gradients and does nothing else of a
    training step (``_clips_only``). NATSpeech's trainer calls it between ``scaler.scale(loss)
    .backward()`` and ``scaler.step``, and both of its definitions clip (unseen set 20, M20-1).
    Only methods named for clipping or the optimizer step are opened; at most four definitions."""
    func = call.func
    if not isinstance(func, cst.Attribute) or not _CLIP_HOOK_NAME.search(func.attr.value):
        return False
    receiver = dotted_name(func.value)
    index = ctx.project_index
    if receiver is None or receiver.split(".", 1)[0] in ("self", "cls") or index is None:
        return False
    methods = index.methods_named(func.attr.value)
    if not methods or len(methods) > 4:
        return False
    for sym in methods:
        opened = definition_of(ctx, sym)
        if opened is None or not _clips_only(*opened):
            return False
    return True


def _clipping_callable_attribute(ctx, call: cst.Call) -> bool:
    """``self.clip_gard(self.model)``: a call of an object the class holds in an attribute, assigned
    in the class only instances of project classes (``self.clip_gard = NoOp()``, then under an option
    ``self.clip_gard = ClipGrad(...)``), one of whose ``__call__`` clips gradients and does nothing else
    of a training step (``_clips_only``), the others nothing of a step either (a no-op). OpenStereo's
    trainer calls it between ``scaler.scale(loss).backward()`` and ``scaler.step`` (set 16, B16-1,
    fixed upstream by an ``unscale_`` first). At most four assignments; a value that is no
    construction of a project class (a function's result, a lambda) leaves the call unknown."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"):
        return False
    cls = ctx.enclosing_class(call)
    index = ctx.project_index
    if cls is None or index is None:
        return False
    values = []
    for assign in ctx.nodes(cst.Assign):
        for t in assign.targets:
            target = t.target
            if isinstance(target, cst.Attribute) and target.attr.value == func.attr.value \
                    and isinstance(target.value, cst.Name) and target.value.value == "self" \
                    and ctx.enclosing_class(assign) is cls:
                values.append(assign.value)
    if not values or len(values) > 4:
        return False
    clips = False
    for value in values:
        name = dotted_name(value.func) if isinstance(value, cst.Call) else None
        if name is None or not name.rsplit(".", 1)[-1][:1].isupper():
            return False
        sym = index.resolve(f"{ctx.imports.resolve(name)}.__call__", ctx.imports.module_name or "")
        opened = definition_of(ctx, sym) if sym is not None and sym.kind == "function" else None
        if opened is None:
            return False
        other, fn = opened
        if _clips_only(other, fn):
            clips = True
        elif _steps_in(other, fn):
            return False
    return clips


def _steps_in(ctx, fn: cst.FunctionDef) -> bool:
    """``fn`` runs a backward, unscale_, step, update or scale of its own."""
    for inner in ctx.nodes(cst.Call):
        if scope_of(ctx, inner) is fn and isinstance(inner.func, cst.Attribute):
            method = inner.func.attr.value
            if "unscale" in method or method in ("backward", "step", "update", "scale"):
                return True
    return False


def _clips_only(ctx, fn: cst.FunctionDef) -> bool:
    """``fn`` (a function of ``ctx``'s file) clips gradients, not only under an AMP switch, and makes
    no backward, unscale_, step or update."""
    cache = ctx._cache.setdefault("training_clipping_helpers", {})
    if fn not in cache:
        clips = False
        others = False
        by_scope = ctx._cache.get("training_calls_by_scope")
        if by_scope is None:
            by_scope = {}
            for c in ctx.nodes(cst.Call):
                by_scope.setdefault(scope_of(ctx, c), []).append(c)
            ctx._cache["training_calls_by_scope"] = by_scope
        for inner in by_scope.get(fn, ()):
            name = ctx.call_name(inner) or ""
            method = inner.func.attr.value if isinstance(inner.func, cst.Attribute) else \
                inner.func.value if isinstance(inner.func, cst.Name) else ""
            if name in CLIP_NAMES:
                switched = any(isinstance(a, cst.If) and _AMP_SWITCH.search(ctx.code(a.test))
                               for a in ctx.ancestors(inner) if ctx.is_ancestor(fn, a))
                clips = clips or not switched
            elif "unscale" in method or method in ("backward", "step", "update", "scale"):
                others = True
        cache[fn] = clips and not others
    return cache[fn]


def clamping_gradient_hook(ctx, call: cst.Call) -> Optional[cst.Call]:
    """The ``tensor.register_hook(lambda grad: grad.clamp(-c, c))`` that ``call`` is, or that the
    function of this file it runs registers (allennlp's ``enable_gradient_clipping(model, c)``):
    such a hook clamps every gradient while the backward runs, so under ``scaler.scale(loss)
    .backward()`` it clamps the gradients multiplied by the loss scale. None otherwise."""
    if _clamping_hook(ctx, call):
        return call
    fn = same_file_function(ctx, call)
    if fn is not None:
        if fn is scope_of(ctx, call):
            return None
        return next((c for c in ctx.nodes(cst.Call) if ctx.is_ancestor(fn, c) and _clamping_hook(ctx, c)), None)
    return _other_file_clamping_hook(ctx, call)


def _other_file_clamping_hook(ctx, call: cst.Call) -> Optional[cst.Call]:
    """The clamping hook a module-level function of another project file registers
    (``training_util.enable_gradient_clipping(model, c)``, allennlp's layout): resolved by the
    project index, that file parsed. None when it is not one."""
    index = ctx.project_index
    name = ctx.call_name(call)
    if index is None or not name or not re.search(r"(?i)clip|clamp|hook", name.rsplit(".", 1)[-1]):
        return None  # (only helpers named for what they do are opened: each costs a parse)
    sym = index.resolve(name, ctx.imports.module_name or "")
    if sym is None or sym.kind != "function" or sym.is_method:
        return None
    opened = definition_of(ctx, sym)
    if opened is None:
        return None
    other, fn = opened
    hook = next((c for c in other.nodes(cst.Call) if other.is_ancestor(fn, c) and _clamping_hook(other, c)), None)
    return call if hook is not None else None


def _clamping_hook(ctx, call: cst.Call) -> bool:
    """``p.register_hook(hook)`` where the hook (a lambda, or a def of this file) clamps or clips its
    argument: ``grad.clamp(-c, c)``, ``torch.clamp(grad, ...)``, ``util.clamp_tensor(grad, ...)``."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "register_hook" and len(call.args) == 1):
        return False
    hook = call.args[0].value
    if isinstance(hook, cst.Name):
        hook = next((f for f in ctx.nodes(cst.FunctionDef) if f.name.value == hook.value), hook)
    return isinstance(hook, (cst.Lambda, cst.FunctionDef)) and _clamps_argument(ctx, hook)


# ---- the path-sensitive walk ------------------------------------------------------------------

def _owner(ctx, call: cst.Call) -> cst.CSTNode:
    """The statement line, one-line suite, or compound statement header evaluating ``call``."""
    cur = ctx.parent(call)
    while cur is not None and not isinstance(cur, (cst.SimpleStatementLine, cst.SimpleStatementSuite,
                                                   cst.BaseCompoundStatement)):
        cur = ctx.parent(cur)
    return cur if cur is not None else ctx.module


def _facts(ctx, test: cst.BaseExpression, truth: bool) -> List[Tuple[str, bool]]:
    """What a path that took ``test`` as ``truth`` knows."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _facts(ctx, test.expression, not truth)
    if isinstance(test, cst.BooleanOperation):
        if isinstance(test.operator, cst.And) and truth:
            return _facts(ctx, test.left, True) + _facts(ctx, test.right, True)
        if isinstance(test.operator, cst.Or) and not truth:
            return _facts(ctx, test.left, False) + _facts(ctx, test.right, False)
        if isinstance(test.operator, cst.And):
            # ``not (a and b)``: not all of a's and b's facts hold (the else of ``if fp16 and
            # amp == "pytorch":`` is no path that went through ``if fp16: if amp == "pytorch":``)
            parts = frozenset(_facts(ctx, test, True))
            if len(parts) == 1:
                # ``if use_fp16 and scaler is not None:``: both name the AMP switch, so its else is the
                # switch off (FunASR's trainer: the else's ``loss.backward()`` / ``optim.step()``)
                [(atom, value)] = parts
                return [(atom, not value)]
            return [(parts, False)] if parts else []
        return []
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        comp = test.comparisons[0]
        if isinstance(comp.comparator, cst.Name) and comp.comparator.value == "None":
            if isinstance(comp.operator, (cst.IsNot, cst.NotEqual)):
                return _facts(ctx, test.left, truth)
            if isinstance(comp.operator, (cst.Is, cst.Equal)):
                return _facts(ctx, test.left, not truth)
    text = " ".join(ctx.code(test).split())
    if _AMP_SWITCH.search(text) and not isinstance(test, cst.Comparison) and not _amp_namespace_option(test):
        text = "<amp>"
    return [(text, truth)]


# The last name of ``<amp namespace>.<name>`` when that name is the switch itself (``cfg.amp.enabled``)
_SWITCH_LEAF = re.compile(r"^(enabled?|on|active|use)$", re.I)


def _amp_namespace_option(test: cst.BaseExpression) -> bool:
    """``config.amp.clip_grad``: another option of an AMP configuration namespace, not the AMP switch
    (``config.amp.enabled``, ``args.fp16``, ``self.use_amp``): the name after the last dot neither
    names AMP nor says "enabled". Taking it for the switch would make ``if config.amp.clip_grad:``
    inside ``if config.amp.enabled:`` the same test again, and prune its False branch."""
    name = dotted_name(test)
    if not name or "." not in name:
        return False
    leaf = name.rsplit(".", 1)[1]
    return not (_AMP_SWITCH.search(leaf) or _SWITCH_LEAF.match(leaf))


def _assume(states: Iterable[_State], facts: List[Tuple[str, bool]]) -> Set[_State]:
    out: Set[_State] = set()
    for s in states:
        if any((atom, not v) in s.assume for atom, v in facts):
            continue  # this path took the other way at an earlier test of the same condition
        assume = s.assume | frozenset(facts)
        if any(isinstance(atom, frozenset) and atom <= assume for atom, _ in facts) or \
                (facts and any(isinstance(atom, frozenset) and atom <= assume for atom, _ in s.assume)):
            continue  # every part of a conjunction known false holds on this path
        out.add(replace(s, assume=assume))
    return out


def _parts(atom: object) -> List[object]:
    """The conditions an atom of a path's facts names: itself, or those of a conjunction known false."""
    if isinstance(atom, frozenset):
        return [p for inner, _ in atom for p in _parts(inner)]
    return [atom]


def _exclusive(ctx, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` lie on different branches of one ``if`` (its body and its else / elif)."""
    for node in ctx.ancestors(a):
        if isinstance(node, cst.If) and ctx.is_ancestor(node, b):
            in_body_a, in_body_b = ctx.is_ancestor(node.body, a), ctx.is_ancestor(node.body, b)
            return in_body_a != in_body_b
    return False


def repeated_updates(ctx, step: "Step") -> List[Tuple[Event, Event, Event]]:
    """(first update, the scaler step after it, second update) of one GradScaler that both run in one
    pass of the same code: ``scaler.step(opt_g); scaler.update()`` then ``scaler.step(opt_d);
    scaler.update()`` (neosr's GAN step). Updates on the two sides of one ``if``, or in different
    loops of the scope, are not paired."""
    out = []
    updates = [e for e in step.events if e.kind == "update" and e.scaler]
    for i, first in enumerate(updates):
        loop = innermost_loop(ctx, first.call, step.scope)
        for second in updates[i + 1:]:
            if second.scaler != first.scaler or innermost_loop(ctx, second.call, step.scope) is not loop \
                    or _exclusive(ctx, first.call, second.call) or _branch_leaves(ctx, first.call, second.call):
                continue
            between = next((e for e in step.events if e.kind == "scaler_step" and e.scaler == first.scaler
                            and first.index < e.index < second.index), None)
            if between is not None:
                out.append((first, between, second))
                break
    return out


def _branch_leaves(ctx, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` sits in an ``if`` branch (one not holding ``b``) that ends in ``return`` / ``raise`` /
    ``continue`` / ``break``: the code after the ``if`` runs only when that branch did not."""
    for node in ctx.ancestors(a):
        if isinstance(node, cst.If) and not ctx.is_ancestor(node, b):
            block = node.body if ctx.is_ancestor(node.body, a) else getattr(node.orelse, "body", None)
            last = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else None
            if isinstance(last, cst.SimpleStatementLine) and any(
                    isinstance(small, (cst.Return, cst.Raise, cst.Continue, cst.Break)) for small in last.body):
                return True
        if ctx.is_ancestor(node, b):
            return False
    return False


def innermost_loop(ctx, node: cst.CSTNode, scope: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The innermost ``for`` / ``while`` around ``node`` inside ``scope`` (None when there is none)."""
    for a in ctx.ancestors(node):
        if a is scope:
            return None
        if isinstance(a, (cst.For, cst.While)):
            return a
    return None


def unscale_key(e: Event) -> Optional[Tuple[str, str]]:
    """(scaler, optimizer) of a ``scaler.unscale_(optimizer)`` event, when both are plain names."""
    if e.kind != "unscale" or not e.scaler or e.target is None:
        return None
    target = dotted_name(e.target)
    return (e.scaler, target) if target else None


def _forget(states: Iterable[_State], keep_amp: bool = True, invariant: FrozenSet[object] = frozenset()) -> Set[_State]:
    """Drop the conditions a loop iteration may change (all but the AMP switch and ``invariant``). A conjunction
    known false is kept when each of its parts is (the else of ``if cfg.mixed_precision and not cfg.use_deepspeed:``
    holds on the next iteration too)."""
    def kept(atom: object) -> bool:
        return atom == "<amp>" or atom in invariant or \
            isinstance(atom, frozenset) and all(p == "<amp>" or p in invariant for p in _parts(atom))
    return {replace(s, assume=frozenset(a for a in s.assume if keep_amp and kept(a[0]))) for s in states}


# Names that count steps or batches: a test on them changes between iterations even when the loop
# body does not assign them (``self.global_step`` advanced by a helper).
_COUNTER = re.compile(r"step|iter|count|accum|epoch|batch|idx|index|global|^[ijkn]$", re.I)


def _loop_invariant(ctx, loop: cst.CSTNode, atoms: Iterable[object]) -> FrozenSet[object]:
    """The atoms (condition texts) no iteration of ``loop`` can change: no call, no ``%``, no name that
    counts, and no name the loop assigns (``if precision == "float16" and scaler is not None:`` around
    the scaled backward and again around the step, with gradient accumulation between: a
    configuration value, PhysicsNeMo's trainers). An attribute the loop assigns changes itself and what
    lies below it, not its siblings: ``cfg.environment._curr_step += n`` leaves ``cfg.environment
    .mixed_precision`` as it was (h2o-llmstudio, T21-1)."""
    assigned: Set[str] = set()
    for node in ctx.nodes(cst.AssignTarget) + ctx.nodes(cst.AugAssign) + ctx.nodes(cst.AnnAssign) + \
            ctx.nodes(cst.NamedExpr) + ctx.nodes(cst.AsName) + ctx.nodes(cst.For):
        if node is not loop and not ctx.is_ancestor(loop, node):
            continue  # (the loop's own target changes each iteration: ``for itr, data in ...``)
        target = node.name if isinstance(node, cst.AsName) else node.target
        assigned.update(_DOTTED.findall(ctx.code(target)))
    def changed(name: str) -> bool:
        return any(name == t or name.startswith(t + ".") or t.startswith(name + ".") for t in assigned) \
            or any(_COUNTER.search(w) for w in name.split("."))
    keep = set()
    for atom in atoms:
        parts = _parts(atom)
        # (the AMP switch is kept by itself; in a conjunction it is as invariant as the other parts)
        if all(isinstance(p, str) and (p == "<amp>" and len(parts) > 1 or p != "<amp>"
                                       and "(" not in _PURE_CALL.sub(r"\1", p) and "%" not in p
                                       and not any(changed(n) for n in _DOTTED.findall(_strip_strings(p))))
               for p in parts):
            keep.add(atom)
    return frozenset(keep)


# A name or an attribute chain (``cfg.environment.mixed_precision``).
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*")


# Builtins whose result a loop cannot change when their argument does not change (``len(cfg.gpus)``).
_PURE_CALL = re.compile(r"\b(?:len|bool|isinstance|hasattr)\(([^()]*)\)")


def _strip_strings(text: str) -> str:
    return re.sub(r"(\"[^\"]*\"|'[^']*')", "", text)


def _bound(states: Set[_State], first_kept: FrozenSet[object] = frozenset()) -> Set[_State]:
    """At most MAX_STATES paths: past it, forget the conditions other than the AMP switch (many
    independent ``if cfg.log_x:`` in a loop body multiply the paths), and only then that switch, whose
    branches must stay apart (``if cfg.use_fp16: scaler...`` / ``else: optimizer.step()``). Conditions
    in ``first_kept`` (the test of an ``if`` around a scaled backward) go last but for the switch: a long
    training function passes MAX_STATES, and its plain arm must still not follow the scaled one (T21-1)."""
    if len(states) <= MAX_STATES:
        return states
    if first_kept:
        kept = frozenset(a for s in states for a, _ in s.assume
                         if all(p == "<amp>" or p in first_kept for p in _parts(a)))
        fewer = _forget(states, keep_amp=True, invariant=kept)
        if len(fewer) <= MAX_STATES:
            return fewer
    states = _forget(states, keep_amp=True)
    return states if len(states) <= MAX_STATES else _forget(states, keep_amp=False)


class _Walk:
    def __init__(self, ctx, step: Step, by_owner: Dict[cst.CSTNode, List[Event]]) -> None:
        self.ctx = ctx
        self.step = step
        self.by_owner = by_owner
        self.loop_exits: List[Tuple[Set[_State], Set[_State]]] = []  # (continue, break) per loop
        # Scalers this function updates: only for those is the whole protocol in sight, so that an
        # unscale_ is known to stay in force until their update() (a GradScaler's per-optimizer
        # state goes back to "ready" at update() only, not at step() or zero_grad()). For the
        # others, a step / zero_grad ends what this function can say.
        self.updated_here = frozenset(e.scaler for e in step.events if e.kind == "update" and e.scaler)
        self._relevant_atoms: Optional[Set[object]] = None
        self._scaled_arm_atoms: Optional[FrozenSet[object]] = None

    # events ----------------------------------------------------------------------------------
    def events(self, owner: cst.CSTNode, states: Set[_State]) -> Set[_State]:
        for e in self.by_owner.get(owner, ()):
            self.step.states.setdefault(e.index, set()).update(states)
            states = {self.apply(e, s) for s in states}
        return states

    def apply(self, e: Event, s: _State) -> _State:
        if e.kind == "backward":
            if e.how == "scaled" and e.scaler and any((atom, not v) in s.assume for atom, v in e.scaled_when):
                # this path skipped the branch that scaled the loss: a plain backward
                return replace(s, plain_backward=s.plain_backward | {e.index})
            if e.how == "scaled" and e.scaler:
                # the path that scaled knows the conditions it scaled under (an engine's scaled
                # backward is its AMP path: ``if hasattr(runner.engine, "scaler"):`` holds after it)
                return replace(s, scaled=s.scaled | {e.scaler}, unscale_due=s.unscale_due | {e.scaler},
                               assume=s.assume | frozenset(e.scaled_when))
            if e.how == "plain":
                return replace(s, plain_backward=s.plain_backward | {e.index})
            if e.how == "engine" and e.scaler:
                # scaled by the framework, unscaled by its optimizer step or clip: only a clip of
                # this code's own sees the scaled gradients
                return replace(s, unscale_due=s.unscale_due | {e.scaler})
            return s
        if e.kind == "unscale":
            due = s.unscale_due - {e.scaler} if e.scaler else frozenset()
            key = unscale_key(e)
            return replace(s, unscale_due=due,
                           unscaled=s.unscaled | {(*key, e.index)} if key is not None else s.unscaled,
                           unstepped=s.unstepped | {(e.scaler, e.index)} if e.scaler else s.unstepped)
        if e.kind == "scaler_step" and e.scaler:
            return replace(s, scaled=s.scaled - {e.scaler}, unscale_due=s.unscale_due - {e.scaler},
                           plain_backward=frozenset(),
                           unscaled=frozenset(k for k in s.unscaled if k[0] != e.scaler or e.scaler in self.updated_here),
                           unstepped=frozenset(k for k in s.unstepped if k[0] != e.scaler))
        if e.kind == "update" and e.scaler:
            return replace(s, unscaled=frozenset(k for k in s.unscaled if k[0] != e.scaler))
        if e.kind in ("opt_step", "zero_grad"):
            return _State(frozenset(), frozenset(), frozenset(), s.assume,
                          frozenset(k for k in s.unscaled if k[0] in self.updated_here))
        return s

    # statements ------------------------------------------------------------------------------
    def block(self, body, states: Set[_State]) -> Set[_State]:
        if isinstance(body, cst.SimpleStatementSuite):
            return self.simple(body, states)
        stmts = body.body if isinstance(body, (cst.IndentedBlock, cst.Module)) else body
        for stmt in stmts:
            if not states:
                break
            states = _bound(self.statement(stmt, states), self._scaled_arm_tests())
        return states

    def simple(self, line, states: Set[_State]) -> Set[_State]:
        states = self.events(line, states)
        for small in line.body:
            if isinstance(small, (cst.Return, cst.Raise)):
                return set()
            if isinstance(small, cst.Continue) and self.loop_exits:
                self.loop_exits[-1][0].update(states)
                return set()
            if isinstance(small, cst.Break) and self.loop_exits:
                self.loop_exits[-1][1].update(states)
                return set()
        return states

    def statement(self, stmt: cst.CSTNode, states: Set[_State]) -> Set[_State]:
        if isinstance(stmt, cst.SimpleStatementLine):
            return self.simple(stmt, states)
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            return states  # its own scope
        if isinstance(stmt, cst.If):
            return self.if_(stmt, states)
        if isinstance(stmt, (cst.For, cst.While)):
            return self.loop(stmt, states)
        if isinstance(stmt, cst.With):
            return self.block(stmt.body, self.events(stmt, states))
        if isinstance(stmt, cst.Try) or type(stmt).__name__ == "TryStar":
            body = self.block(stmt.body, states)
            out = set()
            for h in stmt.handlers:
                out |= self.block(h.body, states | body)
            if stmt.orelse is not None:
                body = self.block(stmt.orelse.body, body)
            out |= body
            if stmt.finalbody is not None:
                out = self.block(stmt.finalbody.body, out)
            return out
        if type(stmt).__name__ == "Match":
            states = self.events(stmt, states)
            out = set(states)
            for case in stmt.cases:  # type: ignore[attr-defined]
                out |= self.block(case.body, states)
            return out
        return self.events(stmt, states)

    def _relevant(self) -> Set[object]:
        """The conditions a path's facts about can matter: those tested more than once in the scope
        (``if self.do_grad_scaling:`` ... ``elif self.do_grad_scaling:``) and those a scaled backward
        depends on. A condition tested once (``if args.log_a: print(...)``) tells paths apart that
        meet again right after: kept, k of them make 2**k paths that say nothing more, and past
        MAX_STATES the walk forgets the conditions that did matter (ChatGLM's Trainer copy, T6-1)."""
        if self._relevant_atoms is None:
            counts: Dict[object, int] = {}
            tests = []
            for node in self.ctx.nodes(cst.If) + self.ctx.nodes(cst.While):
                if not self.ctx.is_ancestor(self.step.scope, node):
                    continue
                tests.append({p for truth in (True, False) for a, _ in _facts(self.ctx, node.test, truth)
                              for p in _parts(a)})
                for part in tests[-1]:
                    counts[part] = counts.get(part, 0) + 1
            keep = {a for a, n in counts.items() if n > 1}
            keep |= {a for e in self.step.events for a, _ in e.scaled_when}
            keep |= self._scaled_arm_tests()
            keep.add("<amp>")
            # a condition joined to one that matters (``if precision == "float16" and scaler is not
            # None:``): its else holds the other part false only where this one is known
            keep |= {p for parts in tests if len(parts) > 1 and parts & keep for p in parts}
            self._relevant_atoms = keep
        return self._relevant_atoms

    def _scaled_arm_tests(self) -> FrozenSet[object]:
        """The conditions of each ``if`` a scaled backward sits under (``if cfg.mixed_precision and ...:
        scaler.scale(loss).backward() ... else: loss.backward(); clip; optimizer.step()``): a path through
        one arm on one iteration does not take the other on the next when the test cannot change (T21-1,
        h2o-llmstudio)."""
        if self._scaled_arm_atoms is None:
            atoms: Set[object] = set()
            for node in self.ctx.nodes(cst.If):
                if self.ctx.is_ancestor(self.step.scope, node) and any(
                        e.kind == "backward" and e.how == "scaled" and self.ctx.is_ancestor(node.body, e.call)
                        for e in self.step.events):
                    atoms |= {p for truth in (True, False) for a, _ in _facts(self.ctx, node.test, truth) for p in _parts(a)}
            self._scaled_arm_atoms = frozenset(atoms)
        return self._scaled_arm_atoms

    def _kept(self, facts: List[Tuple[object, bool]]) -> List[Tuple[object, bool]]:
        relevant = self._relevant()
        return [(atom, v) for atom, v in facts if any(part in relevant for part in _parts(atom))]

    def if_(self, stmt: cst.If, states: Set[_State]) -> Set[_State]:
        states = self.events(stmt, states)
        out = self.block(stmt.body, _assume(states, self._kept(_facts(self.ctx, stmt.test, True))))
        other = _assume(states, self._kept(_facts(self.ctx, stmt.test, False)))
        if isinstance(stmt.orelse, cst.If):
            out |= self.if_(stmt.orelse, other)
        elif isinstance(stmt.orelse, cst.Else):
            out |= self.block(stmt.orelse.body, other)
        else:
            out |= other
        return out

    def loop(self, stmt, states: Set[_State]) -> Set[_State]:
        if isinstance(stmt, cst.For):
            states = self.events(stmt, states)
        invariant = _loop_invariant(self.ctx, stmt, {a for st in states for a, _ in st.assume} | self._relevant())
        entry = _forget(states, invariant=invariant)
        breaks: Set[_State] = set()
        ran: Set[_State] = set()  # states after at least one iteration
        for _ in range(4):
            if isinstance(stmt, cst.While):
                entry = self.events(stmt, entry)
            self.loop_exits.append((set(), set()))
            body = self.block(stmt.body, entry)
            cont, brk = self.loop_exits.pop()
            breaks |= brk
            ran |= _forget(body | cont, invariant=invariant)
            new = _bound(entry | _forget(body | cont, invariant=invariant), self._scaled_arm_tests())
            if new == entry:
                break
            entry = new
        if isinstance(stmt, cst.For) and self._unscales_each(stmt):
            # ``for opt in optimizers: scaler.unscale_(opt)``: the collection is the optimizers the
            # scaler steps, never empty; the path that skips the loop is not a real one.
            entry = _bound(ran, self._scaled_arm_tests())
        out = entry | breaks
        if stmt.orelse is not None:
            out = self.block(stmt.orelse.body, entry) | breaks
        return out

    def _unscales_each(self, stmt: cst.For) -> bool:
        """The loop unscales the gradients of each element it iterates over."""
        target = dotted_name(stmt.target) if isinstance(stmt.target, cst.Name) else None
        if target is None:
            return False
        return any(e.kind == "unscale" and e.target is not None and dotted_name(e.target) == target
                   and self.ctx.is_ancestor(stmt.body, e.call) for e in self.step.events)


def training_steps(ctx) -> Dict[cst.CSTNode, Step]:
    """Scope -> Step, for every scope of the file with training-step events. Memoised."""
    cached = ctx._cache.get("training_steps")
    if cached is not None:
        return cached  # type: ignore[return-value]
    known = _known_scalers(ctx)
    # Receivers of ``S.scale(...)`` and ``S.unscale_(...)`` are scalers whatever their name.
    for call in ctx.nodes(cst.Call):
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("unscale_",):
            d = dotted_name(call.func.value)
            if d:
                known.add(d)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value == "backward":
            s = _scale_call_scaler(ctx, call.func.value, known)
            if s:
                known.add(s)
    optimizers = _known_optimizers(ctx)
    bindings = _bindings(ctx, known)
    steps: Dict[cst.CSTNode, Step] = {}
    by_owner: Dict[cst.CSTNode, List[Event]] = {}
    index = 0
    for call in ctx.nodes(cst.Call):
        c = _classify(ctx, call, known, optimizers, bindings)
        if c is None:
            continue
        kind, scaler, target, how = c
        when = ()
        if kind == "backward" and how == "scaled" and scaler is not None and call.func.attr.value != "backward":  # type: ignore[union-attr]
            when = (("<amp>", True),)  # an engine's scaled backward (``_engine_scaled_backward``)
        elif kind == "backward" and how == "scaled":
            root = _root_name(call.func.value)  # type: ignore[union-attr]
            bind = bindings.get(scope_of(ctx, call))
            when = bind.scaled_when.get(root, ()) if bind is not None and root is not None else ()
        event = Event(index, kind, call, scaler, target, how, when)
        index += 1
        scope = scope_of(ctx, call)
        steps.setdefault(scope, Step(scope)).events.append(event)
        by_owner.setdefault(_owner(ctx, call), []).append(event)
    for scope, step in steps.items():
        walk = _Walk(ctx, step, by_owner)
        body = scope.body if isinstance(scope, cst.FunctionDef) else scope
        start = {_State()}
        step.entry_scaled = _scaled_on_entry(ctx, step)
        if step.entry_scaled:
            # The path where the scaler is in use (``if grad_scaler is not None:``) starts with its
            # scaled gradients; the path without it starts plain.
            held = frozenset(step.entry_scaled)
            start.add(_State(held, held, frozenset(), frozenset({("<amp>", True)})))
        walk.block(body, start)
    ctx._cache["training_steps"] = steps
    return steps


# ---- gradients scaled by the caller ------------------------------------------------------------

_NOT_A_STEP_RECEIVER = re.compile(r"scal|optim|^opt|sched|lr|ema|swa|warmup", re.I)


def _scaled_on_entry(ctx, step: Step) -> Dict[str, Tuple[str, int]]:
    """Scalers whose scaled gradients reach the function ``step`` is the scope of, from a caller.

    A function that receives the GradScaler (a parameter ``grad_scaler``, or an attribute
    ``self.scaler``) and steps, unscales or updates it without a backward of its own (returnn's ``Updater.step(self, *,
    grad_scaler=None)``: clip, then ``grad_scaler.step(self.optimizer)``) sees the gradients its
    caller left: scaled when a call of it (passing a scaler, for a parameter) follows a
    ``S.scale(loss).backward()`` in the calling function with no ``unscale_`` between. The callers
    are found by a line grep of the project (calls through an attribute, ``self._updater.step(...)``,
    are not resolved by the call graph): the calling function is the nearest ``def`` above the call
    indented less than it."""
    fn = step.scope
    if not isinstance(fn, cst.FunctionDef) or step.of_kind("backward") or not step.of_kind("clip", "opt_step"):
        return {}
    params = {p.name.value for p in (*fn.params.params, *fn.params.posonly_params, *fn.params.kwonly_params)}
    wanted = {e.scaler for e in step.of_kind("scaler_step", "unscale", "update")
              if e.scaler and (e.scaler in params or re.fullmatch(r"self\.\w+", e.scaler))}
    if not wanted:
        return {}
    passes_scaler = any(s in params for s in wanted)
    evidence = _caller_scaled_backward(ctx, fn.name.value, passes_scaler, _function_call_sites(ctx, fn))
    return {s: evidence for s in sorted(wanted)} if evidence is not None else {}


def _function_call_sites(ctx, fn: cst.FunctionDef) -> Optional[Set[Tuple[str, int]]]:
    """The (resolved path, line) of every call of ``fn`` when it is a module-level function: the
    bare calls of its own file and the calls the project index resolves to it in other files. None
    for a method, whose calls through an attribute (``self._updater.step(...)``) the index does not
    resolve. Without this a monorepo's ``gen.train()`` in another model's script was taken for a
    call of a ``def train(..., scaler, ...)`` (DeepLearningExamples: Transformer-XL's clip judged by
    HiFiGAN's scaled backward)."""
    if ctx.parent(fn) is not ctx.module:
        return None
    here = str(Path(ctx.path).resolve())
    sites = {(here, ctx.line_of(c)) for c in ctx.nodes(cst.Call)
             if isinstance(c.func, cst.Name) and c.func.value == fn.name.value}
    project, module = ctx.project, ctx.imports.module_name
    if project is not None and module and hasattr(project, "callers"):
        sites.update((str(Path(s.path).resolve()), s.line) for s in project.callers(f"{module}.{fn.name.value}"))
    return sites


def _caller_scaled_backward(ctx, name: str, passes_scaler: bool,
                            sites: Optional[Set[Tuple[str, int]]] = None) -> Optional[Tuple[str, int]]:
    """(path, line) of a scaled backward followed, in the same function, by a call of ``name``
    with no ``unscale_`` between; None if there is none. ``sites``: the lines that call the
    function, when they are known (see ``_function_call_sites``)."""
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    call = re.compile(rf"(?:([\w.]+)\s*\.\s*)?\b{re.escape(name)}\s*\((.*)")
    pattern = rf"^\s*(async\s+)?def\s|unscale|\.scale\s*\(|\b{re.escape(name)}\s*\("
    by_file: Dict[str, List[Tuple[int, str]]] = {}
    for path, line, text in grep(ctx, pattern):
        by_file.setdefault(path, []).append((line, strip_comment(text)))
    for path, rows in by_file.items():
        rows.sort()
        for i, (line, text) in enumerate(rows):
            m = call.search(text)
            if m is None or re.match(r"\s*(async\s+)?def\s", text):
                continue
            if sites is not None and (path, line) not in sites:
                continue  # the line calls another function of that name
            receiver, rest = m.group(1), m.group(2)
            if receiver and _NOT_A_STEP_RECEIVER.search(_last(receiver)):
                continue  # ``scaler.step(opt)``, ``optimizer.step()``: not a call of this function
            if passes_scaler and not (re.search(r"scal", rest, re.I) or not rest.strip()
                                      or rest.rstrip().endswith(",")):
                continue  # the call passes no scaler (``f()`` passes nothing; a call over several lines may)
            indent = len(text) - len(text.lstrip())
            scaled = None
            for before, btext in reversed(rows[:i]):
                if re.match(r"\s*(async\s+)?def\s", btext) and len(btext) - len(btext.lstrip()) < indent:
                    break
                if "unscale" in btext:
                    break
                if re.search(r"\.scale\s*\(.*\)\s*\.\s*backward\s*\(", btext):
                    scaled = before
                    break
            if scaled is not None:
                return path, scaled
    return None


def in_training_loop(ctx, holder: cst.CSTNode) -> bool:
    """The innermost loop around ``holder`` (in its function) runs the training step: it holds a
    backward or an optimizer / scaler step."""
    loop = None
    for a in ctx.ancestors(holder):
        if isinstance(a, (cst.For, cst.While)):
            loop = a
            break
        if isinstance(a, (cst.FunctionDef, cst.Lambda)):
            return False
    step = training_steps(ctx).get(scope_of(ctx, holder)) if loop is not None else None
    return step is not None and any(e.kind in ("backward", "scaler_step", "opt_step") and ctx.is_ancestor(loop, e.call)
                                    for e in step.events)


# ---- precision of a scope ---------------------------------------------------------------------

@dataclass(frozen=True)
class ScopeRegion:
    region: object  # PrecisionRegion
    call: Optional[cst.Call]  # the autocast call (None for a decorator region found otherwise)
    dtype_literal: bool  # the dtype was written (or is the device default), or resolved by the project to float16 options


def scope_regions(ctx, scope: cst.CSTNode) -> List[ScopeRegion]:
    """The autocast regions whose code is run by ``scope`` itself (not by nested functions):
    ``with`` blocks in its body and an autocast decorator on it."""
    table = ctx._cache.get("training_scope_regions")
    if table is None:
        table = {}
        for owner, region in ctx.regions().items():
            if isinstance(owner, cst.FunctionDef):
                call = None
                for dec in owner.decorators:
                    if isinstance(dec.decorator, cst.Call) and autocast_signal(ctx.call_facts(dec.decorator)):
                        call = dec.decorator
                sc = owner
            else:
                call = None
                for item in owner.items:  # type: ignore[attr-defined]
                    opened = ctx.with_item_call(item)
                    if opened is not None and _opened_signal(ctx, opened) is not None:
                        call = opened
                sc = scope_of(ctx, owner)
            literal = True
            if call is not None:
                sig = _opened_signal(ctx, call)
                literal = sig is not None and ("dtype not a literal" not in sig.note or _resolved_to_float16(ctx, call))
            table.setdefault(sc, []).append(ScopeRegion(region, call, literal))
        ctx._cache["training_scope_regions"] = table
    return table.get(scope, [])


def _opened_signal(ctx, call: cst.Call):
    """The autocast signal of a ``with`` item's call: an autocast, or a project helper that opens one
    (``with get_autocast_context(device, precision):``, the helper in another module)."""
    sig = autocast_signal(ctx.call_facts(call))
    if sig is None:
        from .autocast_helpers import helper_autocast
        helper = helper_autocast(ctx, call)
        sig = helper[0] if helper is not None else None
    return sig


def _resolved_to_float16(ctx, call: cst.Call, assumed: bool = False) -> bool:
    """The project's precision facts resolved this autocast's dtype variable to values that include
    float16 (traiNNer's ``self.amp_dtype = torch.bfloat16 if opt.amp_bf16 else torch.float16``): the
    float16 option is one the project runs, as if written. ``assumed``: also when they could not
    resolve it and assumed float16 (not when they resolved it to bfloat16)."""
    regime = ctx.regime
    if regime is None or call is None:
        return False
    line, here = ctx.line_of(call), Path(ctx.path).resolve()
    return any(sig.kind == "autocast" and sig.dtype == "float16" and (assumed or "dtype not a literal" not in sig.note)
               and ev.line == line and Path(ev.path).resolve() == here for sig, ev in regime.signals)


def may_be_float16(ctx, region: ScopeRegion) -> bool:
    """An enabled autocast region whose dtype may be float16: written so, or a variable the
    project's facts resolve to float16 or could not resolve (never one they resolve to bfloat16)."""
    reg = region.region
    return bool(reg.enabled and reg.dtype == "float16" and (region.dtype_literal or _resolved_to_float16(ctx, region.call, True)))


def bf16_only(ctx, scope) -> bool:
    """The scope's autocast regions are all bfloat16 (a GradScaler there is normally disabled)."""
    regions = [r for r in scope_regions(ctx, scope) if r.region.enabled]
    return bool(regions) and all(r.region.dtype == "bfloat16" and r.dtype_literal for r in regions)


def fp16_region_before(ctx, scope: cst.CSTNode, node: cst.Call) -> Optional[ScopeRegion]:
    """An enabled float16 autocast region of ``scope`` that holds ``node`` or opens before it (where
    its ``with`` statement is: an autocast held in a variable opens where ``with ctx:`` enters it,
    not where the variable is assigned)."""
    at = ctx.order(node)
    for r in scope_regions(ctx, scope):
        reg = r.region
        if not (reg.enabled and reg.dtype == "float16" and r.dtype_literal):  # type: ignore[attr-defined]
            continue
        if isinstance(reg.node, cst.FunctionDef):  # type: ignore[attr-defined]
            return r
        if r.call is not None and ctx.order(reg.node) < at:  # type: ignore[attr-defined]
            return r
    return None


def insertion_anchor(ctx, node: cst.CSTNode) -> Optional[cst.CSTNode]:
    """The statement next to which code running right before / after ``node`` can be inserted:
    its statement line in a block, the small statement of a one-line suite (``if ok: step()``),
    or a compound statement whose header holds it; None where no such place exists (an ``elif``
    test, a lambda, a comprehension)."""
    cur = node
    parent = ctx.parent(cur)
    while parent is not None:
        if isinstance(parent, (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
            return None
        if isinstance(cur, cst.BaseSmallStatement) and isinstance(parent, cst.SimpleStatementSuite):
            return cur
        if isinstance(cur, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            return cur if isinstance(parent, (cst.IndentedBlock, cst.Module)) else None
        cur, parent = parent, ctx.parent(parent)
    return None


# torch.amp.GradScaler's public methods (torch/amp/grad_scaler.py).
GRAD_SCALER_METHODS = frozenset({
    "scale", "unscale_", "step", "update", "get_scale", "get_growth_factor", "set_growth_factor",
    "get_backoff_factor", "set_backoff_factor", "get_growth_interval", "set_growth_interval",
    "is_enabled", "state_dict", "load_state_dict",
})


def _speaks_grad_scaler(ctx, scaler: str) -> bool:
    """Every method this file calls on ``scaler`` is one of GradScaler's (``unscale_grads`` is not)."""
    for call in ctx.nodes(cst.Call):
        func = call.func
        if isinstance(func, cst.Attribute) and dotted_name(func.value) == scaler \
                and func.attr.value not in GRAD_SCALER_METHODS:
            return False
    return True


def is_grad_scaler(ctx, scaler: str) -> bool:
    """``scaler`` (``scaler``, ``self.scaler``) is bound to a torch GradScaler: in this file, or by a
    line of the project assigning that name a ``GradScaler(...)`` or annotating it as one
    (``scaler: GradScaler`` as a parameter: a scaler that arrives as an argument or attribute). A
    receiver only named like a scaler may be a project's own class (a wrapper whose ``step`` also
    updates, a hand-written dynamic loss scaler), whose protocol differs; where the project
    defines no class of its own called ``*Scaler*``, a scaler is torch's."""
    cached = ctx._cache.setdefault("training_is_grad_scaler", {})
    if scaler in cached:
        return cached[scaler]
    if scaler in _known_scalers(ctx):
        cached[scaler] = True
        return True
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    last = re.escape(_last(scaler))
    pattern = rf"\b{last}\s*(:[^=]*)?=\s*[\w.]*GradScaler\s*\(|\b{last}\s*:\s*[\w.\[]*GradScaler\b"
    rx = re.compile(pattern)
    found = any(rx.search(strip_comment(line)) for _, _, line in grep(ctx, pattern))
    if not found and _SCALER_NAME.search(_last(scaler)) and _speaks_grad_scaler(ctx, scaler):
        own = r"\bclass\s+\w*[Ss]caler\w*\s*[(:]"
        found = not any(re.search(own, line) for _, _, line in grep(ctx, own))
    cached[scaler] = found
    return found


# ---- gradient hooks registered for a training in another file ----------------------------------

_CLAMPS = re.compile(r"(?i)clamp|clip")


@dataclass(frozen=True)
class ClampingHook:
    """``p.register_hook(lambda grad: grad.clamp(-c, c))``: a hook that clamps (clips) each gradient
    as backward computes it. Under ``scaler.scale(loss).backward()`` those are scaled gradients."""
    call: cst.Call  # the register_hook call
    # (path, line, what): a GradScaler-scaled backward run after the registration ("the scaled
    # backward"), or the GradScaler the training builds ("the GradScaler")
    backward: Tuple[str, int, str]


def _clamps_argument(ctx, fn) -> bool:
    """A hook (a lambda, or a def of this file) whose body clamps or clips its first argument:
    ``grad.clamp(...)``, ``torch.clamp(grad, ...)``, ``util.clamp_tensor(grad, ...)``."""
    params = fn.params.params
    if not params:
        return False
    name = params[0].name.value
    for node in ctx.nodes(cst.Call):
        if not ctx.is_ancestor(fn, node):
            continue
        callee = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
            node.func.value if isinstance(node.func, cst.Name) else ""
        if not _CLAMPS.search(callee):
            continue
        operands = [a.value for a in node.args]
        if isinstance(node.func, cst.Attribute):
            operands.append(node.func.value)
        if any(isinstance(o, cst.Name) and o.value == name for o in operands):
            return True
    return False


def clamping_hooks_elsewhere(ctx) -> List[ClampingHook]:
    """The file's gradient-clamping hooks registered by a module-level function that another file's
    training calls: from a class whose other method runs the GradScaler-scaled backward, or that
    builds a GradScaler for its training (allennlp's
    ``training_util.enable_gradient_clipping(self.model, ...)`` in ``_try_train``, the scaled
    backward in ``_train_epoch``)."""
    found = ctx._cache.get("training_clamping_hooks_elsewhere")
    if found is not None:
        return found  # type: ignore[return-value]
    found = []
    for call in ctx.nodes(cst.Call):
        if not _clamping_hook(ctx, call):
            continue
        fn = ctx.enclosing_function(call)
        backward = _scaled_backward_after(ctx, fn, call)
        if backward is not None:
            found.append(ClampingHook(call, backward))
    ctx._cache["training_clamping_hooks_elsewhere"] = found
    return found


def _scaled_backward_after(ctx, fn: Optional[cst.FunctionDef], call: cst.Call) -> Optional[Tuple[str, int, str]]:
    """(path, line, what) of a GradScaler-scaled backward beside a call of ``fn`` in another file,
    in another method of the calling class, or of the GradScaler that class builds; a call in the
    step that runs the scaled backward itself is AMP302's ordinary case, reported at the call."""
    # (a registration in the step's own file is clamping_gradient_hook's: reported at the call)
    if fn is None or ctx.parent(fn) is not ctx.module or ctx.project is None or not hasattr(ctx.project, "callers"):
        return None
    here = Path(ctx.path).resolve()
    for site in ctx.project.callers(f"{ctx.imports.module_name}.{fn.name.value}")[:8]:
        other = None if site.path == here else ctx.other_file(site.path)
        if other is None:
            continue
        for c in other.nodes(cst.Call):
            if other.on_lines(c, {site.line}) and (other.call_name(c) or "").rsplit(".", 1)[-1] == fn.name.value:
                step = training_steps(other).get(scope_of(other, c))
                if step is not None and any(e.how == "scaled" for e in step.of_kind("backward")):
                    continue  # a call in the step that runs the scaled backward: reported at the call
                found = _scaled_backward_near(other, c)
                if found is not None:
                    return found
    return None


def _scaled_backward_near(ctx, node: cst.CSTNode) -> Optional[Tuple[str, int, str]]:
    """A GradScaler-scaled backward in the function holding ``node`` or in a method of its class;
    else the GradScaler such a class builds for its training (allennlp's trainer builds
    ``self._scaler = amp.GradScaler()`` and runs the scaled backward in a callback)."""
    scope = scope_of(ctx, node)
    cls = ctx.enclosing_class(node)
    here = str(Path(ctx.path).resolve())

    def near(n: cst.CSTNode) -> bool:
        return scope_of(ctx, n) is scope or (cls is not None and ctx.enclosing_class(n) is cls)

    for other_scope, step in training_steps(ctx).items():
        if not near(other_scope.body if isinstance(other_scope, cst.FunctionDef) else other_scope):
            continue
        for e in step.of_kind("backward"):
            if e.how == "scaled" and e.scaler and is_grad_scaler(ctx, e.scaler):
                return here, ctx.line_of(e.call), "the scaled backward"
    if cls is not None:
        for c in ctx.nodes(cst.Call):
            if ctx.call_name(c) in GRAD_SCALER_NAMES and near(c) and isinstance(ctx.parent(c), (cst.Assign, cst.IfExp)):
                return here, ctx.line_of(c), "the GradScaler"
    return None


# ---- mmengine optimizer wrappers ------------------------------------------------------------------

# mmengine's name for the optimizer wrapper a model's ``train_step(self, data, optim_wrapper)`` gets
# (``optim_wrapper``, ``optim_wrapper["generator"]``, ``self.optim_wrapper``).
_OPTIM_WRAPPER = re.compile(r"optim_wrapper", re.I)
_AMP_OPTIM_WRAPPER = re.compile(r"\bAmpOptimWrapper\b")


@dataclass(frozen=True)
class WrapperStep:
    """``<wrapper>.step()`` of an mmengine optimizer wrapper after a plain ``loss.backward()``."""
    backward: Event
    step: cst.Call
    wrapper: str  # the wrapper as written (``optim_wrapper["disc"]``)
    bound_here: bool  # the wrapper is built as ``AmpOptimWrapper(...)`` in this file


def wrapper_steps_after_plain_backward(ctx, step: Step) -> List[WrapperStep]:
    """mmengine: ``loss.backward()`` then ``optim_wrapper.step()`` with no ``optim_wrapper.backward(loss)``
    (or ``update_params``) between, in a project where the wrapper may be an ``AmpOptimWrapper`` (built
    as one, named in a config, or chosen by tools/train.py's ``--amp``). An AmpOptimWrapper's
    ``step`` is its GradScaler's ``step``: it unscales gradients that the plain backward never scaled.
    """
    plain = [e for e in step.backwards if e.how in ("plain", "unknown")]
    if not plain:
        return []
    from .project_text import grep, strip_comment  # noqa: PLC0415 (a leaf module, imported late)
    if not any(_AMP_OPTIM_WRAPPER.search(strip_comment(line)) for _, _, line in grep(ctx, r"AmpOptimWrapper")):
        return []
    calls = [c for c in ctx.nodes(cst.Call) if isinstance(c.func, cst.Attribute) and scope_of(ctx, c) is step.scope
             and _OPTIM_WRAPPER.search(ctx.code(c.func.value))]
    out = []
    for call in calls:
        if call.func.attr.value != "step" or call.args:  # type: ignore[attr-defined]
            continue
        wrapper = ctx.code(call.func.value)  # type: ignore[attr-defined]
        line = ctx.line_of(call)
        # the wrapper's own backward / update_params since the last plain backward before this step
        before = [e for e in plain if ctx.line_of(e.call) < line]
        if not before:
            continue
        last = before[-1]
        scaled_by_wrapper = any(
            c.func.attr.value in ("backward", "update_params") and ctx.code(c.func.value) == wrapper  # type: ignore[attr-defined]
            and ctx.line_of(last.call) <= ctx.line_of(c) < line for c in calls)
        if scaled_by_wrapper:
            continue
        out.append(WrapperStep(last, call, wrapper, _built_as_amp_wrapper(ctx, wrapper)))
    return out


def _built_as_amp_wrapper(ctx, wrapper: str) -> bool:
    """``<wrapper> = AmpOptimWrapper(...)`` in this file."""
    for call in ctx.nodes(cst.Call):
        if (ctx.call_name(call) or "").rsplit(".", 1)[-1] != "AmpOptimWrapper":
            continue
        parent = ctx.parent(call)
        if isinstance(parent, cst.Assign) and any(ctx.code(t.target) == wrapper for t in parent.targets):
            return True
    return False


def exclusive_branches(ctx, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """Do ``a`` and ``b`` lie on the two sides of one ``if`` (``if scaler is not None:
    scaler.scale(loss).backward() else: loss.backward()``), so that no run takes both?"""
    above_b = set(map(id, ctx.ancestors(b)))
    child = a
    for anc in ctx.ancestors(a):
        if id(anc) in above_b:
            if isinstance(anc, cst.If) and child is not anc.test:
                other_side = anc.orelse if child is anc.body else anc.body
                return other_side is not None and ctx.is_ancestor(other_side, b)
            return False
        child = anc
    return False
