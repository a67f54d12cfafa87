"""AMP102 fp16-unsafe-epsilon."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, List, Optional, Set

import libcst as cst

from ..context.imports import dotted_name
from ..context.callers import argument_for, only_guessed_in_dead_code, passed_values
from ..context.conditions import known_positive, never_run_by_callers
from ..context.precision import F16, DTypeFact, precision_model
from ..context.project_text import exported
from ..context.sizes import sizes_only
from ..context.probability import clamp_min, in_handwritten_bce, method_of, uniform_draw
from ..edits import append_arg, find_arg, is_number_literal, keyword, number_node
from ..findings import Applicability, Confidence, Fix, Location, Violation
from ..fp16 import FLOAT16, Representation, describe_in_half, fmt
from ..prefilter import words
from .base import Rule, because

# Ops that take a guard as ``eps=`` and apply it in their input's dtype (unless autocast runs them
# in float32): name -> (default eps, position of eps among the positional arguments).
# torch/nn/functional.py: normalize(input, p=2.0, dim=1, eps=1e-12, out=None) divides by
# ``norm.clamp_min(eps)``; cosine_similarity(x1, x2, dim=1, eps=1e-8) clamps the norms with eps.
# The normalisation layers (layer_norm, group_norm, batch_norm, instance_norm, rms_norm) are not
# here: their kernels add eps in float32 (the accumulation type) for float16 inputs.
EPS_OPS = {
    "torch.nn.functional.normalize": (1e-12, 3),
    "torch.nn.functional.cosine_similarity": (1e-8, 3),
    "torch.cosine_similarity": (1e-8, 3),
}
_DIV_FUNCTIONS = {"torch.div", "torch.true_divide", "torch.divide"}
_DIV_METHODS = {"div", "div_", "true_divide", "true_divide_", "divide", "divide_"}
_UNARY = {"log": "log", "log2": "log", "log10": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "reciprocal": "reciprocal"}
_UNARY_FUNCTIONS = {f"torch.{k}": v for k, v in _UNARY.items()}


@dataclass(frozen=True)
class Use:
    """Where a guarded value is applied."""
    kind: str  # denominator | log | sqrt | rsqrt | reciprocal
    node: cst.CSTNode  # the division / call / augmented assignment
    numerator: Optional[cst.BaseExpression] = None  # of a denominator (None for a reciprocal: 1)


def _use(ctx, e: cst.CSTNode) -> Optional[Use]:
    """How the value ``e`` is consumed by its parent, if as a denominator or a log / sqrt argument."""
    parent = ctx.parent(e)
    if isinstance(parent, cst.BinaryOperation):
        if isinstance(parent.operator, cst.Divide) and parent.right is e:
            return Use("denominator", parent, parent.left)
        if isinstance(parent.operator, cst.Power) and parent.left is e:
            exponent = ctx.number(parent.right)
            if exponent == 0.5:
                return Use("sqrt", parent)
            if exponent is not None and exponent < 0:
                return Use("rsqrt" if exponent == -0.5 else "reciprocal", parent)
        return None
    if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.DivideAssign) and parent.value is e:
        return Use("denominator", parent, parent.target)
    if isinstance(parent, cst.Arg) and parent.value is e:
        call = ctx.parent(parent)
        if not isinstance(call, cst.Call):
            return None
        name = ctx.call_name(call) or ""
        positional = [a for a in call.args if a.keyword is None and not a.star]
        if name in _DIV_FUNCTIONS and (parent.keyword is not None and parent.keyword.value == "other"
                                       or len(positional) > 1 and positional[1] is parent):
            numerator = positional[0].value if positional and positional[0] is not parent else None
            return Use("denominator", call, numerator)
        if name in _UNARY_FUNCTIONS and positional and positional[0] is parent:
            return Use(_UNARY_FUNCTIONS[name], call, None)
        m = method_of(ctx, call)
        if m is not None and m[0] in _DIV_METHODS and positional and positional[0] is parent:
            return Use("denominator", call, m[1])
        return None
    if isinstance(parent, cst.Attribute) and parent.value is e:
        call = ctx.parent(parent)
        if isinstance(call, cst.Call) and call.func is parent:
            method = parent.attr.value.rstrip("_")
            if method in _UNARY and not call.args:
                return Use(_UNARY[method], call, None)
            if method == "pow" and len(call.args) == 1:
                exponent = ctx.number(call.args[0].value)
                if exponent == 0.5:
                    return Use("sqrt", call)
                if exponent is not None and exponent < 0:
                    return Use("rsqrt" if exponent == -0.5 else "reciprocal", call)
    return None


def _use_through_sqrt(ctx, e: cst.CSTNode) -> Optional[Use]:
    """``_use``, where a sqrt that is itself a denominator (``x / torch.sqrt(v + eps)``) counts as
    a denominator guard (the guard's purpose there is the division, not the sqrt)."""
    u = _use(ctx, e)
    if u is not None and u.kind == "sqrt":
        outer = _use(ctx, u.node)
        if outer is not None and outer.kind == "denominator":
            return Use("sqrt-denominator", outer.node, outer.numerator)
    return u


def uses(ctx, e: cst.BaseExpression) -> List[Use]:
    """Where the value of ``e`` is applied: directly, or through a local name bound to it."""
    out = []
    direct = _use_through_sqrt(ctx, e)
    if direct is not None:
        out.append(direct)
    parent = ctx.parent(e)
    target = None
    if isinstance(parent, cst.Assign) and parent.value is e and len(parent.targets) == 1:
        target = parent.targets[0].target
    if isinstance(target, cst.Name):
        pm = precision_model(ctx)
        fn = ctx.enclosing_function(parent)
        for n in ctx.nodes(cst.Name):
            if n.value == target.value and n is not target and ctx.enclosing_function(n) is fn \
                    and pm.value_of(n) is e:
                u = _use_through_sqrt(ctx, n)
                if u is not None:
                    out.append(u)
    return out


def aug_uses(ctx, aug: cst.AugAssign) -> List[Use]:
    """Where the name ``aug`` guarded (``n += eps``) is applied while it holds that value."""
    pm = precision_model(ctx)
    fn = ctx.enclosing_function(aug)
    out = []
    for n in ctx.nodes(cst.Name):
        if n.value != aug.target.value or ctx.order(n) <= ctx.order(aug) or ctx.enclosing_function(n) is not fn:
            continue
        bound = pm.binding_at(n.value, n)
        if isinstance(bound, tuple) and bound[0] == "aug" and bound[1] is aug:
            u = _use_through_sqrt(ctx, n)
            if u is not None:
                out.append(u)
    return out


def roots(ctx, expr: cst.CSTNode, depth: int = 0) -> Set[str]:
    """The local names and ``self.`` attributes a value is computed from (through local
    assignments), for telling ``y / (y.sum() + eps)`` (bounded) from ``1 / (y + eps)``."""
    pm = precision_model(ctx)
    out: Set[str] = set()
    stack = [expr]
    while stack:
        n = stack.pop()
        if isinstance(n, cst.Name):
            if n.value in ("self", "True", "False", "None") or ctx.imports.binds(n.value):
                continue
            out.add(n.value)
            if depth < 4:
                v = pm.value_of(n)
                if v is not None:
                    out |= roots(ctx, v, depth + 1)
        elif isinstance(n, cst.Attribute):
            d = dotted_name(n)
            if d is not None and d.startswith("self."):
                out.add(d)
            else:
                stack.append(n.value)
        elif isinstance(n, cst.Call):
            if isinstance(n.func, cst.Attribute) and not (dotted_name(n.func) or "").startswith("self."):
                stack.append(n.func.value)
            stack.extend(a.value for a in n.args)
        else:
            stack.extend(c for c in n.children if isinstance(c, cst.CSTNode))
    return out


def _bounded(ctx, numerator: Optional[cst.BaseExpression], base: cst.CSTNode) -> bool:
    """Is the numerator bounded by the guarded denominator (``y / (y + eps)``,
    ``x / (x.norm(dim=-1) + eps)``, ``w / (w.sum(-1) + eps)``)? Taken to be so when both are
    computed from a common value; a constant numerator (``1 / (x + eps)``) is not bounded."""
    if numerator is None or ctx.number(numerator) is not None:
        return False
    if _weighted_sum(ctx, numerator, base):
        return False
    return bool(roots(ctx, numerator) & roots(ctx, base))


# Sums over an axis or into bins, and the argument that holds what is summed (an index, or a keyword).
_SUMS = {"sum": (0, "input"), "index_add": (2, "source"), "index_add_": (2, "source"), "scatter_add": (2, "src"),
         "scatter_add_": (2, "src"), "scatter": (0, "src"), "scatter_sum": (0, "src"), "segment_sum": (0, "src")}


def _summed(ctx, expr: cst.BaseExpression) -> Optional[cst.BaseExpression]:
    """What the sum ``expr`` adds up (through a local name): ``s * v`` of ``(s * v).sum(-1)``,
    ``zeros.index_add_(0, index, s * v)``, torch_geometric's ``scatter(s * v, index, ..., reduce="sum")``."""
    pm = precision_model(ctx)
    if isinstance(expr, cst.Name):
        expr = pm.value_of(expr) or expr
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if name not in _SUMS:
        return None
    reduce = find_arg(expr, "reduce", 99)
    if name == "scatter" and not (reduce is not None and isinstance(reduce.value, cst.SimpleString)
                                  and reduce.value.evaluated_value in ("sum", "add")):
        return None  # torch's Tensor.scatter writes, PyG's scatter(reduce="mean") averages
    index, keyword = _SUMS[name]
    method_of_tensor = isinstance(func, cst.Attribute) and not (ctx.call_name(expr) or "").startswith("torch.")
    if name == "sum" and method_of_tensor:
        return func.value  # ``(s * v).sum(-1)``
    if method_of_tensor and name not in ("index_add", "index_add_", "scatter_add", "scatter_add_"):
        return None
    if method_of_tensor:
        index -= 0  # ``zeros.index_add_(dim, index, source)``: the receiver is the accumulator
    elif name in ("index_add", "scatter_add"):
        index += 1  # ``torch.index_add(input, dim, index, source)``
    arg = find_arg(expr, keyword, index)
    return arg.value if arg is not None else None


def _weighted_sum(ctx, numerator: cst.BaseExpression, base: cst.CSTNode) -> bool:
    """Is ``numerator / (base + eps)`` a weighted mean, Σ s·v / Σ s: the numerator sums a product one
    of whose factors the denominator sums (graphium's GatedGCN aggregate, PR #426: gates times
    messages over the gates' sum, 1e-6 raised to 1e-3 for float16)? Bounded by max |v|, not by 1,
    and the backward divides the gradient by ``den + eps`` (×1e6 where the gates' sum is 0)."""
    while isinstance(base, cst.BinaryOperation) and isinstance(base.operator, cst.Add):
        base = base.left if ctx.number(base.right) is not None else base.right if ctx.number(base.left) is not None \
            else None  # ``den + 1e-6``: the sum guarded
    top = _through_names(ctx, _summed(ctx, numerator), values=True)
    bottom = _summed(ctx, base) if isinstance(base, cst.BaseExpression) else None
    if not (isinstance(top, cst.BinaryOperation) and isinstance(top.operator, cst.Multiply)) or bottom is None:
        return False
    factors = {_code(ctx, _through_names(ctx, f)) for f in (top.left, top.right)}
    return _code(ctx, _through_names(ctx, bottom)) in factors


def _code(ctx, node: cst.CSTNode) -> str:
    return " ".join(ctx.code(node).split())


def _through_names(ctx, expr: Optional[cst.BaseExpression], values: bool = False) -> Optional[cst.BaseExpression]:
    """``expr`` through local names bound once to another name (``sum_sigma = sigma_ij``), and with
    ``values`` to any expression (``sum_sigma_x = sigma_ij * Bx_j``): graphium writes its weighted sum
    that way."""
    pm = precision_model(ctx)
    for _ in range(4):
        if not isinstance(expr, cst.Name):
            break
        value = pm.value_of(expr)
        if value is None or not (values or isinstance(value, cst.Name)):
            break
        expr = value
    return expr


def _short(ctx, node: cst.CSTNode, limit: int = 40) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_ZERO_CONSEQUENCE = {
    "denominator": "the division gives inf, or NaN for 0/0",
    "sqrt-denominator": "its sqrt is 0 and the division by it gives inf, or NaN for 0/0",
    "reciprocal": "the reciprocal is inf",
    "log": "the log is -inf",
    "sqrt": "the gradient of sqrt at 0 is inf (NaN after backward)",
    "rsqrt": "rsqrt gives inf",
    "clamp": "the clamp lets 0 through to what it guards",
}
_WHERE = {
    "denominator": "a float16 denominator",
    "sqrt-denominator": "a float16 denominator (under a sqrt)",
    "reciprocal": "a float16 reciprocal",
    "log": "the float16 argument of a log",
    "sqrt": "the float16 argument of a sqrt",
    "rsqrt": "the float16 argument of an rsqrt",
    "clamp": "clamp(min=...) of a float16 value",
}


class Fp16UnsafeEpsilon(Rule):
    code = "AMP102"
    name = "fp16-unsafe-epsilon"
    summary = "Guard constant (eps) that rounds to 0, or overflows as a subnormal divisor, in float16"
    fix_safety = "unsafe"
    applies_under = "fp16 (mixed or pure half)"
    # Library code is looked at again as under fp16 autocast (the library policy, docs/precision.md):
    # what this rule reports there is a hazard under any float16 use of the code.
    any_fp16_use = True
    # the guarded sum (``x + eps``, ``x += eps``), the clamp, or normalize / cosine_similarity; the
    # guard's value may come from another module, the float16 from anywhere
    needs = r"\+|clamp|clip|" + words(EPS_OPS)

    def check(self, ctx) -> Iterable[Violation]:
        at_definition = {}  # definition node -> the violation reported there
        for v in (*self._sums(ctx), *self._augmented(ctx), *self._clamps(ctx), *self._eps_ops(ctx)):
            definition = ctx.constant_definition(v.node) if isinstance(v.node, cst.BaseExpression) else None
            if definition is None:
                yield v
                continue
            # ``EPS = 1e-8`` / ``eps=1e-20``: reported (and fixed) once where it is written, its uses
            # as related locations.
            use = Location(ctx.path, ctx.line_of(v.node), f"`{ctx.code(v.node)}` used here")
            first = at_definition.get(definition)
            if first is not None:
                first.related.append(use)
                first.use_lines.append(use.line)
                continue
            value = ctx.number(definition)
            fix = _fix(ctx, definition, value) if value is not None else None
            at_definition[definition] = Violation(definition, v.message, v.confidence, fix, help=v.help,
                                                  evidence=v.evidence, related=[use, *v.related],
                                                  use_lines=[use.line])
        yield from at_definition.values()

    # ---- x + eps ------------------------------------------------------------------------------
    def _sums(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for add in ctx.nodes(cst.BinaryOperation):
            if not isinstance(add.operator, cst.Add):
                continue
            const = None
            for c, other in ((add.right, add.left), (add.left, add.right)):
                v = ctx.number(c)
                if v is not None and 0 < v < FLOAT16.smallest_normal and ctx.number(other) is None:
                    const, value = c, v
                    break
            if const is None:
                continue
            top = add  # climb the sum: ``a - b + eps``, ``eps + a + b``
            parent = ctx.parent(top)
            while isinstance(parent, cst.BinaryOperation) and (
                    isinstance(parent.operator, cst.Add) or isinstance(parent.operator, cst.Subtract) and parent.left is top):
                top, parent = parent, ctx.parent(parent)
            if in_handwritten_bce(ctx, add) is not None or in_handwritten_bce(ctx, top) is not None:
                continue  # AMP202 reports the hand-written binary cross-entropy as a whole
            fact = pm.dtype_of(top)
            if not fact.is_half:
                continue
            v = self._judge(ctx, top, top, const, value, fact, uses(ctx, top))
            if v is not None:
                yield v

    # ---- x += eps -----------------------------------------------------------------------------
    def _augmented(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for aug in ctx.nodes(cst.AugAssign):
            if not isinstance(aug.operator, cst.AddAssign) or not isinstance(aug.target, cst.Name):
                continue
            value = ctx.number(aug.value)
            if value is None or not 0 < value < FLOAT16.smallest_normal:
                continue
            fact = pm.dtype_of(aug.target)  # the value before the addition
            if not fact.is_half:
                continue
            v = self._judge(ctx, aug, aug.target, aug.value, value, fact, aug_uses(ctx, aug))
            if v is not None:
                yield v

    # ---- x.clamp(min=eps) ---------------------------------------------------------------------
    def _clamps(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for call in ctx.nodes(cst.Call):
            cm = clamp_min(ctx, call)
            if cm is None:
                continue
            clamped, const = cm
            value = ctx.number(const)
            if value is None or not 0 < value < FLOAT16.smallest_normal or clamped is None:
                continue
            if in_handwritten_bce(ctx, call) is not None:
                continue
            fact = pm.dtype_of(clamped)
            if not fact.is_half:
                continue
            found = uses(ctx, call)
            if FLOAT16.classify(value) is Representation.ZERO and not found:
                if _feeds_only_bce(ctx, call):
                    continue  # binary_cross_entropy clamps its own log at -100: 0 is fine there
                found = [Use("clamp", call)]
            v = self._judge(ctx, call, clamped, const, value, fact, found)
            if v is not None:
                yield v

    def _judge(self, ctx, guarded, base, const, value, fact, found: List[Use]) -> Optional[Violation]:
        pm = precision_model(ctx)
        plain = _without(ctx, guarded, const) if base is guarded else base
        if found and all(known_positive(ctx, u.node, plain, where=not pm.gradient_flows(u.node)) is not None
                         for u in found):
            return None  # ``if norm > eps: x / (norm + 1e-12)``: the guard is never needed
        fn = ctx.enclosing_function(guarded)
        if pm.half_unsupported_call(fn) is not None or fn is not None and pm.only_called_in_float32(fn):
            return None  # ``.inverse()`` of what it computes, or only called after one: never run in float16
        if uniform_draw(ctx, plain):
            return None  # Gumbel / exponential sampling noise: a 0 draw only keeps one candidate unsampled
        if never_run_by_callers(ctx, guarded):
            return None  # ``elif type == 'cube':`` of a helper every caller calls with type='sphere'
        if sizes_only(ctx, plain):
            return None  # ``(hw - 1).clamp(eps)`` of image sizes: 0 for a one-pixel image whatever the data
        relying = _default_used_in_half(ctx, const, base)
        if not relying:
            return None  # ``def log(t, eps=1e-20)`` whose float16 callers all pass an eps of their own
        if isinstance(relying, DTypeFact):
            fact = relying  # cite the caller that relies on the default, not any float16 caller
        # sqrt(0) = 0 is fine forward; its hazard is the inf gradient, so it needs a backward
        # through this code (not a frozen extractor under no_grad, not library code whose float16
        # use may be inference)
        found = [u for u in found if u.kind != "sqrt" or pm.gradient_flows(u.node)]
        kind = FLOAT16.classify(value)
        base_text = _short(ctx, base if base is not guarded else _without(ctx, guarded, const))
        if kind is Representation.ZERO:
            if ctx.regime is not None and ctx.regime.any_fp16_use:
                # Library code: float32 gives about c / eps at 0 where the numerator does not vanish
                # with the denominator (a degenerate input's infinite answer, kornia's depth from zero
                # disparity); the hazard under any float16 use is 0/0, 0 in float32 and NaN in float16.
                found = [u for u in found if u.kind not in ("denominator", "sqrt-denominator", "reciprocal")
                         or _bounded(ctx, u.numerator, base)]
            if not found:
                return None
            use = found[0]
            message = (f"{fmt(value)} guards {_WHERE[use.kind]} but {describe_in_half(value)}: where "
                       f"`{base_text}` is 0, {_ZERO_CONSEQUENCE[use.kind]}")
            return Violation(const, message, Confidence.of(fact), _fix(ctx, const, value),
                             help=f"use a guard >= {fmt(FLOAT16.smallest_normal)} (e.g. {_safe(ctx)}) or compute this in float32",
                             evidence=because(fact, ctx, const))
        # A subnormal guard keeps 0/0 and log(0) away; only c / eps can overflow.
        if ctx.regime is not None and ctx.regime.any_fp16_use:
            return None  # whether c / eps overflows depends on c: not a hazard under any float16 use
        for use in found:
            if use.kind not in ("denominator", "reciprocal"):
                continue
            if use.kind == "denominator" and _bounded(ctx, use.numerator, base):
                continue
            target = use.node.target if isinstance(use.node, cst.AugAssign) else use.node
            div = pm.dtype_of(target)
            if not div.is_half:
                continue  # e.g. 1 / (x + eps) under autocast: __rtruediv__ runs in float32
            stored = FLOAT16.round(value)
            c = 1.0 if use.numerator is None else ctx.number(use.numerator)
            weighted = use.numerator is not None and _weighted_sum(ctx, use.numerator, base)
            if weighted and not pm.gradient_flows(use.node):
                continue  # forward, it is bounded by the largest value averaged: the hazard is the backward's
            if weighted:
                overflow = ""
            elif c is not None:
                overflow = f"{_g(c)} / {_g(stored)} ≈ {_g(c / stored)} overflows to inf"
            else:
                overflow = (f"`{_short(ctx, use.numerator, 30)}` / {_g(stored)} overflows to inf once the "
                            f"numerator exceeds {_g(FLOAT16.max * stored)}")
            message = (f"{describe_in_half(value)}: it keeps `{base_text}` off 0, but in the float16 division "
                       f"{overflow} (float16's largest value is {fmt(FLOAT16.max)})")
            if weighted:
                message = (f"{describe_in_half(value)}: `{_short(ctx, use.numerator, 30)}` / (`{base_text}` + eps) is a "
                           f"weighted mean, and where the weights sum to 0 its backward multiplies the gradient by "
                           f"1 / {_g(stored)} ≈ {_g(1 / stored)}, beyond float16's {fmt(FLOAT16.max)} (inf)")
            return Violation(const, message, Confidence.LIKELY, _fix(ctx, const, value),
                             help=f"use a guard >= {fmt(FLOAT16.smallest_normal)} (e.g. {_safe(ctx)}) or divide in float32",
                             evidence=because(div, ctx, const))
        return None

    # ---- F.normalize(x, eps=...) --------------------------------------------------------------
    def _eps_ops(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call)
            if name not in EPS_OPS:
                continue
            default, position = EPS_OPS[name]
            arg = find_arg(call, "eps", position)
            if arg is None and any(a.star for a in call.args):
                continue
            value = default if arg is None else ctx.number(arg.value)
            if value is None or FLOAT16.classify(value) is not Representation.ZERO:
                continue  # a subnormal eps still keeps x / max(|x|, eps) bounded by 1
            if arg is not None and call.args and not _default_used_in_half(ctx, arg.value, call.args[0].value):
                continue
            if never_run_by_callers(ctx, call):
                continue  # (solo-learn's ``if simplified: return ...`` before it: no caller gets here)
            fact = pm.dtype_of(call)
            if not fact.is_half:
                continue  # under autocast normalize / cosine_similarity run in float32
            short = name.rsplit(".", 1)[-1]
            where = "eps" if arg is not None else "the default eps"
            message = (f"{short} with {where}={fmt(value)} runs in float16, where {describe_in_half(value)}: "
                       f"the norm is clamped to 0, so a zero vector gives 0/0 = NaN")
            fix = _fix(ctx, arg.value, value) if arg is not None else _fix_default(ctx, call, value)
            yield Violation(arg.value if arg is not None else call.func, message, Confidence.of(fact), fix,
                            help=f"pass eps >= {fmt(FLOAT16.smallest_normal)} (e.g. {_safe(ctx)}) or normalise in float32",
                            evidence=because(fact, ctx, call))


def _default_used_in_half(ctx, const: cst.CSTNode, base: cst.CSTNode):
    """For a guard that is a parameter's default (``def log(t, eps=1e-20)``): does a caller that
    reaches the helper in float16 rely on that default? The calls seen (this file, and the files
    importing a module-level helper) that leave ``eps`` out are asked what they pass for the
    parameters the guarded value is computed from: a float16 value, or a value of unknown dtype at
    a call that itself runs in float16, relies on the default there; that caller's fact is returned
    (the finding cites it: DALLE's reinmax ``log(π1)``, not its Gumbel noise ``log(noise)``, which
    is no hazard). With no call in sight (a library's helper, a forward) the default is what every
    use gets: True. Any other guard: True."""
    if not isinstance(const, cst.Name):
        return True
    fn = ctx.enclosing_function(const)
    if fn is None:
        return True
    params = fn.params
    names = [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]
    if const.value not in names or ctx.constant_definition(const) is None:
        return True
    regime = ctx.regime
    if regime is not None and regime.any_fp16_use and ctx.parent(fn) is ctx.module and not fn.name.value.startswith("_") \
            and exported(ctx, fn.name.value):
        # library code: its public functions are called by its users, with the default (kornia's
        # rgb_to_hsv(image, eps=1e-8), whose own wrapper RgbToHsv passes 1e-6)
        return True
    pm = precision_model(ctx)
    passed = passed_values(pm, fn, const.value)
    if not passed:
        return True
    method = isinstance(ctx.parent(ctx.parent(fn)), cst.ClassDef)
    tensors = [n for n in roots(ctx, base) if n in names and n != const.value]
    for p in passed:
        if p.value is not None:
            continue  # this caller passes its own eps (judged, if at all, where it is written)
        if not tensors:
            return True
        for name in tensors:
            known, value = argument_for(p.call, fn, name, method)
            if not known or value is None:
                return True
            if uniform_draw(p.model.ctx, value):
                continue  # ``log(noise)`` of Gumbel sampling: see uniform_draw
            fact = p.model.passed_dtype(p.call, value)
            if only_guessed_in_dead_code(p, fact, passed):
                continue  # (a call in a method nothing calls, of an argument only guessed float16)
            where = f"{p.path}:{p.model.ctx.line_of(p.call)}"
            if fact.is_half:
                return DTypeFact(F16, fact.confidence, f"`{name}` of `{fn.name.value}` is passed a float16 value "
                                                       f"with the default `{const.value}` at {where} ({fact.why})"
                                 .replace(" ()", ""), fact.evidence, assumed=fact.assumed)
            if fact.dtype is None and not p.model.not_floating(value):
                state = p.model.fp16_status(p.call)
                if state.fp16:
                    return DTypeFact(F16, state.confidence, f"`{fn.name.value}` is called with the default "
                                                            f"`{const.value}` in float16 code at {where}", state.evidence)
    return False


# torch.nn.functional.binary_cross_entropy (BCELoss) clamps its log outputs at -100 (torch docs,
# "BCELoss clamps its log function outputs to be greater than or equal to -100"): an input of 0 or 1
# gives a loss of 100, not inf.
_BCE = {"torch.nn.functional.binary_cross_entropy", "torch.binary_cross_entropy"}
_SHAPE_ONLY = {"torch.zeros_like", "torch.ones_like", "torch.empty_like", "torch.full_like"}


def _feeds_only_bce(ctx, clamp: cst.Call) -> bool:
    """``p = x.clamp(min=eps)`` whose value reaches binary_cross_entropy (its input) and otherwise only
    a power or a product (``p ** gamma * F.binary_cross_entropy(p, t)``, mmdet's FreeAnchor)."""
    parent = ctx.parent(clamp)
    if not (isinstance(parent, cst.Assign) and parent.value is clamp and len(parent.targets) == 1
            and isinstance(parent.targets[0].target, cst.Name)):
        return False
    pm = precision_model(ctx)
    name = parent.targets[0].target.value
    fn = ctx.enclosing_function(clamp)
    reads = [n for n in ctx.nodes(cst.Name) if n.value == name and ctx.enclosing_function(n) is fn
             and ctx.order(n) > ctx.order(clamp) and not ctx.is_ancestor(clamp, n) and pm.value_of(n) is clamp]
    bce = False
    for n in reads:
        arg = ctx.parent(n)
        call = ctx.parent(arg) if isinstance(arg, cst.Arg) else None
        if isinstance(call, cst.Call) and ctx.call_name(call) in _BCE and call.args and call.args[0] is arg:
            bce = True
            continue
        if isinstance(call, cst.Call) and ctx.call_name(call) in _SHAPE_ONLY:
            continue  # torch.zeros_like(p): its shape
        op = ctx.parent(n)
        if isinstance(op, cst.BinaryOperation) and (isinstance(op.operator, cst.Multiply)
                                                    or isinstance(op.operator, cst.Power) and op.left is n):
            continue
        return False
    return bce


def _safe(ctx) -> str:
    """The guard the fixes write (``safe-eps``), as they write it."""
    return ctx.code(number_node(ctx.settings.safe_eps)) if ctx.settings is not None else "1e-4"


def _g(x: float) -> str:
    """Three significant digits, written as ``fmt`` writes numbers (1.01e-6, 9.87e5, 0.00781)."""
    return fmt(float(f"{x:.3g}"))


def _without(ctx, top: cst.CSTNode, const: cst.CSTNode) -> cst.CSTNode:
    """The guarded sum without the guard, for messages: ``y`` of ``y + eps``."""
    if isinstance(top, cst.BinaryOperation):
        if top.right is const:
            return top.left
        if top.left is const:
            return top.right
    return top


def _safe_value(ctx, value: float) -> Optional[float]:
    safe = getattr(getattr(ctx, "settings", None), "safe_eps", 1e-4)
    if FLOAT16.classify(safe) is not Representation.NORMAL or safe <= value:
        return None  # a configured value that would not clear the finding
    return safe


def _fix(ctx, const: cst.BaseExpression, value: float) -> Optional[Fix]:
    """The guard raised to ``safe-eps``: a literal is replaced; a name (``self.eps``, a module
    constant, a parameter's default) becomes ``max(<name>, 1e-4)`` so that a larger value passed
    in is kept."""
    safe = _safe_value(ctx, value)
    if safe is None:
        return None
    literal = number_node(safe)
    text = cst.Module([]).code_for_node(literal)
    if is_number_literal(const):
        new = literal.with_changes(lpar=const.lpar, rpar=const.rpar) if getattr(const, "lpar", None) else literal
        return Fix(f"Raise the guard to {text}", Applicability.UNSAFE, replacements=[(const, new)])
    bounded = cst.Call(func=cst.Name("max"), args=[
        cst.Arg(const.deep_clone(), comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), cst.Arg(literal)])
    return Fix(f"Raise the guard to at least {text}: `max(..., {text})`", Applicability.UNSAFE,
               replacements=[(const, bounded)])


def _fix_default(ctx, call: cst.Call, value: float) -> Optional[Fix]:
    safe = _safe_value(ctx, value)
    if safe is None:
        return None
    literal = number_node(safe)
    text = cst.Module([]).code_for_node(literal)
    return Fix(f"Pass `eps={text}`", Applicability.UNSAFE, replacements=[(call, append_arg(call, keyword("eps", literal)))])
