"""AMP202 bce-under-autocast."""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

import libcst as cst

from ..context.conditions import never_run_by_callers
from ..context.imports import dotted_name
from ..context.precision import F16, precision_model
from ..context.probability import LOG_WORDS, HandwrittenBCE, LogUse, handwritten_bces, trace
from ..edits import find_arg, keyword
from ..edits.logits import bare, functional, logits_at
from ..findings import Applicability, Confidence, Fix, Location, Violation
from .base import Rule, because

BCE_FUNCTIONS = {"torch.nn.functional.binary_cross_entropy"}
# Devices whose autocast refuses binary_cross_entropy (aten/src/ATen/autocast_mode.cpp registers
# the ``binary_cross_entropy_banned`` kernel for AutocastCUDA and AutocastXPU; CPU autocast runs it
# in float32). A region whose device is not a literal (None) is taken to be CUDA.
BANNING_DEVICES = {None, "cuda", "xpu"}
MESSAGE = ("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast")


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _is_bce_class(name: Optional[str]) -> bool:
    return bool(name) and name.startswith("torch.nn.") and name.rsplit(".", 1)[-1] == "BCELoss"


class BceUnderAutocast(Rule):
    code = "AMP202"
    name = "bce-under-autocast"
    summary = "binary_cross_entropy / nn.BCELoss under autocast, or hand-written BCE on float16 probabilities"
    fix_safety = "safe"
    applies_under = "fp16 or bf16 autocast (CUDA); hand-written BCE: fp16, and bf16 for log(1 - p)"
    # the BCE call or class, or the logs of a hand-written BCE
    needs = r"binary_cross_entropy|BCELoss|" + LOG_WORDS

    def check(self, ctx) -> Iterable[Violation]:
        yield from self._banned(ctx)
        yield from self._handwritten(ctx)

    # ---- F.binary_cross_entropy / nn.BCELoss under autocast -------------------------------------
    def _banned(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        object_fixes = {}
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call)
            construct = None
            if name in BCE_FUNCTIONS:
                what = "F.binary_cross_entropy"
            else:
                if isinstance(call.func, cst.Call) and _is_bce_class(ctx.call_name(call.func)):
                    construct = call.func  # nn.BCELoss()(p, y)
                elif _is_bce_class(pm.module_class(call.func)):
                    construct = _construction(ctx, call.func)
                else:
                    construct = _picked_bce(ctx, call.func)
                    if construct is None:
                        continue
                what = "nn.BCELoss"
            state = pm.autocast_at(call)
            if not state.active and state.evidence is None:
                state = pm.launcher_autocast_at(call)  # accelerate launch decides: any CUDA autocast refuses it
            if not state.active or state.device not in BANNING_DEVICES:
                continue
            if never_run_by_callers(ctx, call):
                continue  # a branch no float16 run takes (``if self.sigmoid:``, every such build passes False)
            message = (f"{what} under {state.dtype} autocast: CUDA autocast refuses it with a RuntimeError "
                       f"(\"{MESSAGE}\"), whatever the inputs' dtype")
            help = (f"pass logits to "
                    f"{'binary_cross_entropy_with_logits' if what.startswith('F.') else 'nn.BCEWithLogitsLoss'} "
                    f"(or run the loss under `autocast(enabled=False)` with float32 inputs)")
            if name in BCE_FUNCTIONS:
                fix = _functional_fix(ctx, call)
            else:
                key = id(construct) if construct is not None else id(call)
                if key not in object_fixes:
                    object_fixes[key] = _object_fix(ctx, call, construct)
                fix = object_fixes[key]
            conf = Confidence.of(state)
            yield Violation(call, message, conf, fix, help=help,
                            evidence=[] if state.evidence is None else [Location(
                                state.evidence.path, state.evidence.line, f"{state.dtype} autocast: `{state.evidence.what}`")])

    # ---- -(y * log(p) + (1 - y) * log(1 - p)) ----------------------------------------------------
    def _handwritten(self, ctx) -> Iterable[Violation]:
        for bce in handwritten_bces(ctx):
            if not bce.hazardous():
                continue
            fact = bce.positive.trace.source.fact
            kind = bce.positive.trace.source.kind
            if fact.dtype == F16:
                why = ("p rounds to 0 (a sigmoid for logits below about -17.3) or to 1.0 (above about 8.3) in "
                       "float16, so log(p) or log(1 - p) is -inf and the loss and its gradient NaN")
            else:
                why = (f"p rounds to 1.0 in {fact.dtype} for logits above about 6.2 (only 8 bits of precision), "
                       "so log(1 - p) is -inf and the loss and its gradient NaN")
            guards = [u.guard for u in bce.logs if u.guard is not None]
            if guards:
                why += "; the guard constants round to 0 there and do not help"
            message = f"hand-written binary cross-entropy on {fact.dtype} probabilities ({kind} output): {why}"
            conf = Confidence.of(fact)
            yield Violation(bce.node, message, conf, _handwritten_fix(ctx, bce),
                            help="use F.binary_cross_entropy_with_logits on the logits",
                            evidence=because(fact, ctx, bce.node))


# ---- fixes ----------------------------------------------------------------------------------------
def _sigmoid_logits(ctx, expr: cst.BaseExpression, at: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """The logits ``z`` when ``expr`` is ``sigmoid(z)`` (directly, or a local name bound to it
    whose ``z`` still means the same at ``at``)."""
    t = trace(ctx, expr)
    if t is None or t.complement or t.source.kind != "sigmoid" or t.crossed:
        return None  # (crossed: the logits lie in another function)
    return logits_at(ctx, t, at)


def _input_arg(call: cst.Call) -> Optional[cst.Arg]:
    return find_arg(call, "input", 0)


def _functional_fix(ctx, call: cst.Call) -> Optional[Fix]:
    """``F.binary_cross_entropy(torch.sigmoid(z), y, ...)`` -> ``F.binary_cross_entropy_with_logits(z, y, ...)``
    (the same arguments: weight, reduction; safe: the same loss, computed from the logits)."""
    arg = _input_arg(call)
    if arg is None or any(a.star for a in call.args):
        return None
    logits = _sigmoid_logits(ctx, arg.value, call)
    if logits is None:
        return None
    imports: List[str] = []
    if isinstance(call.func, cst.Attribute):
        func = call.func.with_changes(attr=cst.Name("binary_cross_entropy_with_logits"))
    else:
        named = functional(ctx, "binary_cross_entropy_with_logits")
        if named is None:
            return None
        func, imports = named
    args = [a.with_changes(value=bare(logits)) if a is arg else a for a in call.args]
    new = call.with_changes(func=func, args=args)
    return Fix(f"Use `{_text(new.func)}` on the logits", Applicability.SAFE, replacements=[(call, new)],
               imports=imports)


def _construction(ctx, func: cst.BaseExpression) -> Optional[cst.Call]:
    """The ``nn.BCELoss(...)`` call that built the object being called (``self.crit`` /
    ``crit``), when it is in this file."""
    pm = precision_model(ctx)
    value = None
    if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
        value = pm.init_attribute(func, func.attr.value)
    elif isinstance(func, cst.Name):
        value = pm.value_of(func)
    return value if isinstance(value, cst.Call) and _is_bce_class(ctx.call_name(value)) else None


def _picked_bce(ctx, func: cst.BaseExpression) -> Optional[cst.Call]:
    """The ``nn.BCELoss()`` one side of a conditional expression builds, when the local being called may
    hold it: sentence-transformers' ``loss_fct = nn.BCELoss() if self.num_labels == 1 else
    nn.CrossEntropyLoss()`` (bug set 12), also as the fallback of a ``loss_fct=None`` parameter."""
    if not isinstance(func, cst.Name):
        return None
    for b in ctx.semantic.reaching(func.value, func):
        value = b.value if b.kind == "assign" and not b.part else None
        if isinstance(value, cst.IfExp):
            for side in (value.body, value.orelse):
                if isinstance(side, cst.Call) and _is_bce_class(ctx.call_name(side)):
                    return side
    return None


def _object_calls(ctx, construct: cst.Call) -> Optional[List[cst.Call]]:
    """Every call of the loss object built by ``construct``; None when the object is used in any
    other way (passed elsewhere, rebound), so that changing its class could change other code."""
    pm = precision_model(ctx)
    assign = ctx.parent(construct)
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
        return None
    target = assign.targets[0].target
    calls: List[cst.Call] = []
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        attr = target.attr.value
        cls = ctx.enclosing_class(assign)
        for node in ctx.nodes(cst.Attribute):
            if node is target or node.attr.value != attr or dotted_name(node) != f"self.{attr}":
                continue
            if ctx.enclosing_class(node) is not cls:
                continue
            parent = ctx.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                calls.append(parent)
            else:
                return None
    elif isinstance(target, cst.Name):
        for node in ctx.nodes(cst.Name):
            if node is target or node.value != target.value:
                continue
            if pm.binding_at(node.value, node) is not construct:
                continue
            parent = ctx.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                calls.append(parent)
            else:
                return None
    else:
        return None
    return calls


def _object_fix(ctx, call: cst.Call, construct: Optional[cst.Call]) -> Optional[Fix]:
    """``nn.BCELoss(...)`` -> ``nn.BCEWithLogitsLoss(...)`` with the sigmoid dropped from each of
    its calls, when every call passes ``sigmoid(z)`` (safe: the same loss from the logits)."""
    if construct is None:
        return None
    if construct is call.func:
        calls = [call]  # nn.BCELoss()(torch.sigmoid(z), y)
    else:
        calls = _object_calls(ctx, construct)
    if not calls:
        return None
    replacements: List[Tuple[cst.CSTNode, cst.CSTNode]] = []
    for c in calls:
        arg = _input_arg(c)
        if arg is None or any(a.star for a in c.args):
            return None
        logits = _sigmoid_logits(ctx, arg.value, c)
        if logits is None:
            return None
        replacements.append((arg.value, bare(logits)))
    imports: List[str] = []
    func = construct.func
    if isinstance(func, cst.Attribute):
        new_func = func.with_changes(attr=cst.Name("BCEWithLogitsLoss"))
    else:
        new_func = cst.Name("BCEWithLogitsLoss")
        if ctx.imports.binds("BCEWithLogitsLoss") and ctx.imports.resolve("BCEWithLogitsLoss") != "torch.nn.BCEWithLogitsLoss":
            return None
        imports = ["from torch.nn import BCEWithLogitsLoss"]
    if construct is call.func:
        arg = _input_arg(call)
        logits = replacements[0][1]
        new_call = call.with_changes(func=construct.with_changes(func=new_func),
                                     args=[a.with_changes(value=logits) if a is arg else a for a in call.args])
        return Fix("Use `nn.BCEWithLogitsLoss` on the logits", Applicability.SAFE,
                   replacements=[(call, new_call)], imports=imports)
    replacements.append((func, new_func))
    return Fix("Use `nn.BCEWithLogitsLoss` on the logits", Applicability.SAFE, replacements=replacements,
               imports=imports)


def _strip(expr: cst.BaseExpression) -> str:
    return " ".join(cst.Module([]).code_for_node(expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr).split())


def _term(ctx, expr: cst.BaseExpression, uses) -> Optional[Tuple[bool, cst.BaseExpression, LogUse]]:
    """``(negated, factor, log)`` of ``factor * log(...)``, ``log(...) * factor``, ``-(...)``,
    ``-factor * log(...)``."""
    neg = False
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = _term(ctx, expr.expression, uses)
        return (not inner[0], inner[1], inner[2]) if inner is not None else None
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Multiply)):
        return None
    for log_side, factor in ((expr.right, expr.left), (expr.left, expr.right)):
        use = uses.get(id(log_side))
        if use is not None:
            if isinstance(factor, cst.UnaryOperation) and isinstance(factor.operator, cst.Minus):
                neg, factor = True, factor.expression
            return neg, factor, use
    return None


def _handwritten_fix(ctx, bce: HandwrittenBCE) -> Optional[Fix]:
    """``-(y * log(p) + (1 - y) * log(1 - p))`` with ``p = sigmoid(z)`` ->
    ``F.binary_cross_entropy_with_logits(z, y, reduction="none")``. Unsafe: the library function
    requires ``y`` to be a float tensor of ``z``'s shape, where the hand-written form broadcasts."""
    uses = {id(u.call): u for u in bce.logs}
    combine = bce.combine
    outer_neg = bce.node is not combine
    a = _term(ctx, combine.left, uses)
    b = _term(ctx, combine.right, uses)
    if a is None or b is None:
        return None
    if isinstance(combine.operator, cst.Subtract):
        b = (not b[0], b[1], b[2])
    # the loss must be -(f1 * log(p) + f2 * log(1 - p)), each term with the same sign
    signs = {a[0] != outer_neg, b[0] != outer_neg}
    if signs != {True}:
        return None
    pos, negt = (a, b) if not a[2].trace.complement else (b, a)
    if pos[2] is not bce.positive or negt[2] is not bce.negative or pos[2].guard or negt[2].guard:
        return None
    target = pos[1]
    complement = negt[1]
    if not (isinstance(complement, cst.BinaryOperation) and isinstance(complement.operator, cst.Subtract)
            and ctx.number(complement.left) == 1.0 and _strip(complement.right) == _strip(target)):
        return None
    if dotted_name(target) is None:
        return None  # a computed target would be written once instead of twice: fine, but keep it simple
    logits_pos = logits_at(ctx, bce.positive.trace, bce.node)
    logits_neg = logits_at(ctx, bce.negative.trace, bce.node)
    if logits_pos is None or logits_neg is None or _strip(logits_pos) != _strip(logits_neg):
        return None
    named = functional(ctx, "binary_cross_entropy_with_logits")
    if named is None:
        return None
    func, imports = named
    new = cst.Call(func=func, args=[
        cst.Arg(bare(logits_pos), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
        cst.Arg(bare(target), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
        keyword("reduction", cst.SimpleString('"none"')),
    ])
    node = bce.node
    if node is combine or node.expression is combine:
        replacement = new.with_changes(lpar=node.lpar, rpar=node.rpar) if getattr(node, "lpar", None) else new
    else:
        # -(...).mean(): the minus goes, the reductions stay around the library loss
        replacement = node.expression.visit(_Swap(combine, new))
        if getattr(node, "lpar", None):
            replacement = replacement.with_changes(lpar=node.lpar, rpar=node.rpar)
    return Fix(f"Use `{_text(new)}`", Applicability.UNSAFE, replacements=[(node, replacement)], imports=imports)


class _Swap(cst.CSTTransformer):
    """Replace one node (by identity) in a subtree."""

    def __init__(self, old: cst.CSTNode, new: cst.CSTNode) -> None:
        super().__init__()
        self.old, self.new = old, new

    def on_leave(self, original_node, updated_node):
        return self.new if original_node is self.old else updated_node
