"""Matrix products and reductions as the rules see them (AMP203, AMP204, AMP205, AMP401): which
expressions are products and sums, how to see through guards, views and casts to them, and which
products are bounded. The float32 rewrite the fixes attach is amplint.edits.fp32.

Dtypes come from the precision model (amplint.context.precision); nothing here re-derives them.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import libcst as cst

from ..torch_api import autocast as autocast_ops
from .callers import passed_values
from .imports import dotted_name

# Ops whose result is a sum of many products: CUDA autocast runs them in float16.
PRODUCTS = frozenset({"__matmul__", "matmul", "mm", "bmm", "einsum", "mv"})
# Reductions that normalise: sums (autocast runs them in float32, pure half in float16).
SUMS = frozenset({"sum", "cumsum", "nansum"})
# Methods that change a tensor's shape or view but not its values.
VIEWS = frozenset({
    "transpose", "permute", "view", "reshape", "unsqueeze", "squeeze", "contiguous", "flatten",
    "expand", "expand_as", "view_as", "reshape_as", "t", "movedim", "swapaxes", "swapdims",
    "unflatten", "repeat", "repeat_interleave", "detach", "clone",
})
# Casts after the fact: they do not undo an overflow that already happened in float16.
CASTS = frozenset({"float", "double", "half", "to", "type_as", "type"})
# Guards that bound a denominator from below (against 0) but not from above (against inf).
LOWER_GUARDS = frozenset({"clamp", "clamp_min", "clamp_", "clamp_min_", "clip", "clip_"})
# Values bounded by 1 (or unit vectors): their products and sums cannot overflow.
BOUNDED = frozenset({"softmax", "softmin", "sigmoid", "normalize", "tanh", "cosine_similarity"})
# Rows that sum to 1 (softmax) or have norm 1 (normalize): a product with one of them is bounded
# by the size of the other operand, however long the contraction.
CONTRACTING = frozenset({"softmax", "softmin", "normalize"})


def call_op(ctx, pm, call: cst.Call) -> Tuple[Optional[str], bool]:
    """(op name as autocast knows it, whether it is a method on a tensor) for a call:
    ``torch.einsum(...)`` / ``einsum(...)`` (imported from torch) -> ("einsum", False),
    ``x.sum(-1)`` -> ("sum", True), ``self.fc(x)`` with ``nn.Linear`` -> ("linear", False).
    (None, False) for calls of other libraries (``np.sum``) and unknown callables."""
    func = call.func
    name = ctx.call_name(call) or ""
    if name.startswith("torch."):
        short = name.rsplit(".", 1)[-1]
        if ".linalg." in name:
            short = "linalg_" + short
        return autocast_ops.ALIASES.get(short, short), False
    if isinstance(func, cst.Attribute):
        receiver = func.value
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            cls = pm.module_class(func)
            return (autocast_ops.MODULE_OPS.get(cls.rsplit(".", 1)[-1]) if cls else None), False
        head = (dotted_name(receiver) or "").split(".", 1)[0]
        if head and ctx.imports.binds(head):
            return None, False  # np.sum(x), math.sqrt(d), F.something outside torch
        return func.attr.value, True
    if isinstance(func, cst.Name):
        cls = pm.module_class(func)
        if cls:
            return autocast_ops.MODULE_OPS.get(cls.rsplit(".", 1)[-1]), False
    return None, False


def op_of(ctx, pm, expr: cst.CSTNode) -> Optional[str]:
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.MatrixMultiply):
        return "__matmul__"
    if isinstance(expr, cst.Call):
        return call_op(ctx, pm, expr)[0]
    return None


def positional(call: cst.Call) -> List[cst.Arg]:
    return [a for a in call.args if a.keyword is None and a.star == ""]


def tensor_operands(ctx, pm, expr: cst.CSTNode) -> List[cst.BaseExpression]:
    """The tensor operands of a product or a sum: both sides of ``@``, the operands of an einsum
    (after its equation), the arguments of matmul / bmm, the receiver of ``x.sum()``."""
    if isinstance(expr, cst.BinaryOperation):
        return [expr.left, expr.right]
    if not isinstance(expr, cst.Call):
        return []
    op, is_method = call_op(ctx, pm, expr)
    args = positional(expr)
    if any(a.star for a in expr.args):
        return []
    if is_method:
        receiver = expr.func.value  # type: ignore[attr-defined]
        return [receiver] + ([a.value for a in args[:1]] if op in PRODUCTS else [])
    if op == "einsum":
        if args and isinstance(args[0].value, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)):
            if len(args) == 2 and isinstance(args[1].value, (cst.Tuple, cst.List)):
                return [e.value for e in args[1].value.elements]  # einsum(eq, (a, b))
            return [a.value for a in args[1:]]
        return []
    if op in PRODUCTS:
        return [a.value for a in args[:2]]
    if op in SUMS:
        return [a.value for a in args[:1]]
    return []


def through_views(ctx, pm, expr: cst.BaseExpression) -> cst.BaseExpression:
    """``k.transpose(-2, -1)`` -> ``k``; ``x[..., None]`` -> ``x``."""
    for _ in range(12):
        if isinstance(expr, cst.Subscript):
            expr = expr.value
            continue
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT", "H", "mH"):
            expr = expr.value
            continue
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            op, is_method = call_op(ctx, pm, expr)
            if is_method and op in VIEWS:
                expr = expr.func.value
                continue
        break
    return expr


def bounded(ctx, pm, expr: cst.BaseExpression, depth: int = 0, kinds=BOUNDED) -> bool:
    """A value in [-1, 1] or a unit vector: the output of softmax, sigmoid, F.normalize, ...
    (directly or through a local name). For ``kinds=BOUNDED`` also small combinations of such
    values: ``(1 - torch.sigmoid(g)) * p + torch.sigmoid(g) * q`` (ConViT's gated attention)."""
    if depth > 6:
        return False
    expr = through_views(ctx, pm, expr)
    if isinstance(expr, cst.Name):
        bound = pm.binding_at(expr.value, expr)
        if isinstance(bound, tuple) and bound[0] == "aug":
            return _normalised_by_own_sum(ctx, bound[1])
        if isinstance(bound, tuple) and bound[0] == "part":
            # ``probs_sort, probs_idx = torch.sort(probs, descending=True)``: the sorted values
            source = _sorted_values_of(ctx, bound[1], bound[2])
            return source is not None and bounded(ctx, pm, source, depth + 1, kinds)
        if isinstance(bound, tuple) and bound[0] == "param":
            # a helper's parameter is bounded when every caller passes a bounded value (a top-p
            # sampler handed ``torch.softmax(logits / t, dim=-1)``)
            passed = passed_values(pm, bound[1], bound[2].name.value)
            return bool(passed) and all(p.value is not None and bounded(p.model.ctx, p.model, p.value, depth + 1, kinds)
                                        for p in passed)
        if kinds is BOUNDED and _exp_written_into(ctx, pm, expr):
            return True
        value = pm.value_of(expr)
        return value is not None and bounded(ctx, pm, value, depth + 1, kinds)
    if isinstance(expr, cst.Call):
        inner = _bound_preserving_input(ctx, pm, expr)
        if inner is not None:
            return bounded(ctx, pm, inner, depth + 1, kinds)
        # ``attn_map = self.get_attention(x).mean(0)``: a helper of the file whose every ``return``
        # is bounded (ConViT's get_attention returns attention normalised by its own sum)
        returns = pm.returned_values(expr)
        if returns:
            return all(bounded(ctx, pm, r, depth + 1, kinds) for r in returns)
    if kinds is BOUNDED and isinstance(expr, cst.Call) and call_op(ctx, pm, expr)[0] == "exp":
        # ``exp(x - x.max(-1, keepdim=True).values)``: every term is in (0, 1] (a softmax's numerator)
        func = expr.func
        args = positional(expr)
        arg = func.value if isinstance(func, cst.Attribute) and not args else (args[0].value if args else None)
        return arg is not None and _max_shifted(ctx, pm, arg, expr)
    if kinds is BOUNDED:
        v = ctx.number(expr)
        if v is not None:
            return abs(v) <= 1
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return bounded(ctx, pm, expr.expression, depth + 1, kinds)
        if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract, cst.Multiply)):
            return bounded(ctx, pm, expr.left, depth + 1, kinds) and bounded(ctx, pm, expr.right, depth + 1, kinds)
    return op_of(ctx, pm, expr) in kinds


def _max_shifted(ctx, pm, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    """``x - x.max(dim, keepdim=True).values`` (or ``x`` after ``x.sub_(x.max(...)[0].unsqueeze(-1))``
    earlier in the function): values at most 0, whose exp is at most 1."""
    for _ in range(3):
        if isinstance(expr, cst.Name) and pm.value_of(expr) is not None:
            value = pm.value_of(expr)
            if isinstance(value, cst.BinaryOperation):
                expr = value
                continue
        break
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Subtract):
        return _max_of(ctx, pm, expr.right, ctx.code(expr.left))
    if isinstance(expr, cst.Name):
        # shifted in place before the exp: ``logits.sub_(logits_max.unsqueeze(dim=-1))``
        fn = ctx.enclosing_function(at)
        for call in ctx.nodes(cst.Call):
            func = call.func
            if isinstance(func, cst.Attribute) and func.attr.value == "sub_" and ctx.code(func.value) == expr.value \
                    and ctx.enclosing_function(call) is fn and ctx.order(call) < ctx.order(at) and positional(call) \
                    and _max_of(ctx, pm, positional(call)[0].value, expr.value):
                return True
    return False


def _exp_written_into(ctx, pm, name: cst.Name) -> bool:
    """``torch.exp(logits, out=exp_logits)`` earlier in the function, of max-shifted logits
    (gpt-neox's vocab-parallel cross entropy: ``logits.sub_(max)``; ``exp_logits = logits``;
    ``torch.exp(logits, out=exp_logits)``)."""
    writes = ctx._cache.get("exp_out_calls")
    if writes is None:  # the file's ``torch.exp(..., out=...)`` calls, found once
        writes = ctx._cache["exp_out_calls"] = [
            c for c in ctx.nodes(cst.Call)
            if any(a.keyword is not None and a.keyword.value == "out" for a in c.args) and ctx.call_name(c) == "torch.exp"]
    fn = ctx.enclosing_function(name)
    for call in writes:
        if ctx.enclosing_function(call) is not fn or ctx.order(call) > ctx.order(name):
            continue
        out = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "out"), None)
        args = positional(call)
        if isinstance(out, cst.Name) and out.value == name.value and args and _max_shifted(ctx, pm, args[0].value, call):
            return True
    return False


def _max_of(ctx, pm, expr: cst.BaseExpression, of: str, depth: int = 0) -> bool:
    """Is ``expr`` a maximum of the value written ``of`` (``x.max(-1, keepdim=True).values``,
    ``torch.max(x, dim=-1)[0].unsqueeze(-1)``, ``x.amax(...)``, or a name bound to one)?"""
    if depth > 6:
        return False
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        return value is not None and _max_of(ctx, pm, value, of, depth + 1)
    if isinstance(expr, cst.Attribute) and expr.attr.value == "values":
        return _max_of(ctx, pm, expr.value, of, depth + 1)
    if isinstance(expr, cst.Subscript):
        return _max_of(ctx, pm, expr.value, of, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        name = ctx.call_name(expr) or ""
        args = positional(expr)
        if name in ("torch.max", "torch.amax") and args:
            return ctx.code(args[0].value) == of
        if isinstance(func, cst.Attribute):
            if func.attr.value in ("max", "amax"):
                return ctx.code(func.value) == of
            if func.attr.value in VIEWS or func.attr.value == "detach":
                return _max_of(ctx, pm, func.value, of, depth + 1)
    return False


# Calls whose output is bounded where their input is: a mean of values in [-1, 1] (or of rows that
# sum to 1, over another axis) stays so; dropout zeroes entries and rescales the rest by 1/(1-p).
_BOUND_PRESERVING = frozenset({"mean", "nanmean", "dropout", "Dropout"})


def _bound_preserving_input(ctx, pm, call: cst.Call) -> Optional[cst.BaseExpression]:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in ("mean", "nanmean") \
            and not (isinstance(func.value, cst.Name) and ctx.imports.binds(func.value.value)):
        return func.value  # x.mean(0)
    name = ctx.call_name(call) or ""
    cls = pm.module_class(func) or ""
    short = (cls or name).rsplit(".", 1)[-1]
    if short in _BOUND_PRESERVING and (cls or name.startswith("torch.")):
        args = positional(call)
        return args[0].value if args else None
    return None


def _sorted_values_of(ctx, value: cst.BaseExpression, target: cst.CSTNode) -> Optional[cst.BaseExpression]:
    """What ``target`` holds the sorted values of, when it is the first of the names unpacked from
    ``torch.sort(x)`` / ``x.sort()`` / ``torch.topk(x, k)`` / ``x.topk(k)`` (values, then indices)."""
    element = ctx.parent(target)
    tup = ctx.parent(element) if isinstance(element, cst.Element) else None
    if not isinstance(tup, (cst.Tuple, cst.List)) or not tup.elements or tup.elements[0] is not element:
        return None
    if not isinstance(value, cst.Call) or not isinstance(value.func, (cst.Attribute, cst.Name)):
        return None
    method = value.func.attr.value if isinstance(value.func, cst.Attribute) else value.func.value
    if method not in ("sort", "topk"):
        return None
    if (ctx.call_name(value) or "").startswith("torch."):
        args = positional(value)
        return args[0].value if args else None
    return value.func.value if isinstance(value.func, cst.Attribute) else None


def _normalised_by_own_sum(ctx, aug: cst.AugAssign) -> bool:
    """``attn /= attn.sum(dim=-1, keepdim=True)`` (or ``.unsqueeze(-1)`` of it): rows that sum to 1."""
    if not isinstance(aug.operator, cst.DivideAssign) or not isinstance(aug.target, cst.Name):
        return False
    value = aug.value
    while isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in VIEWS:
        value = value.func.value
    return (isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in SUMS and isinstance(value.func.value, cst.Name)
            and value.func.value.value == aug.target.value)


def weight_product(ctx, pm, product: cst.CSTNode) -> bool:
    """A product with a learnable weight (``einsum(x, self.query_proj)`` with
    ``self.query_proj = nn.Parameter(...)``): a projection layer. Its output is what a following
    q·kᵀ uses, so scaling it afterwards is how such layers are written (and what AMP204's own fix
    produces: ``einsum(..., q * self.scale, k)`` must not be flagged again)."""
    for o in tensor_operands(ctx, pm, product):
        if isinstance(o, cst.Attribute) and isinstance(o.value, cst.Name) and o.value.value == "self":
            value = pm.init_attribute(o, o.attr.value)
            if isinstance(value, cst.Call) and (ctx.call_name(value) or "").endswith("Parameter"):
                return True
    return False


def bounded_product(ctx, pm, product: cst.CSTNode) -> bool:
    """A product that cannot grow with its contraction length: one operand is a softmax or a
    unit vector (``F.normalize(q) @ k.T`` is at most ``|k|``), or all are bounded by 1."""
    operands = tensor_operands(ctx, pm, product)
    if not operands:
        return False
    return any(bounded(ctx, pm, o, kinds=CONTRACTING) for o in operands) or all(bounded(ctx, pm, o) for o in operands)


def standardised_contraction(ctx, pm, product: cst.CSTNode) -> bool:
    """A product of two 2-D operands contracted over the axis each was standardised along (zero
    mean and unit variance per column over the batch: ``nn.BatchNorm1d(d, affine=False)``,
    ``(z - z.mean(0)) / z.std(0)``): a cross-correlation matrix, Barlow Twins' ``bn(z1).T @ bn(z2)``
    or ``einsum("bi,bj->ij", z1, z2)`` (unseen set 15, T15-2). By Cauchy–Schwarz every entry is at
    most the length of the contracted axis, |Σ_b a_bi·b_bj| ≤ ‖a_·i‖·‖b_·j‖ = N, whatever the
    embeddings: no batch is anywhere near 65504. A covariance of centred values that are not
    scaled (``x = x - x.mean(0)``; ``x.T @ x / (n - 1)``) grows with their variance: not this."""
    operands = tensor_operands(ctx, pm, product)
    if len(operands) != 2:
        return False
    axes = _contracted_axes(ctx, pm, product, operands)
    return axes is not None and all(_standardised_along(ctx, pm, base, axis, 0) for base, axis in axes)


def _contracted_axes(ctx, pm, product, operands) -> Optional[List[Tuple[cst.BaseExpression, int]]]:
    """(operand without its transposes, the axis of it the product sums over) for a 2-D product:
    ``a @ b`` sums over a's axis 1 and b's axis 0 (``a.T`` / ``a.t()`` / ``a.transpose(0, 1)``
    swap them); ``einsum("bi,bj->ij", a, b)`` over the one index both terms share and the output
    drops. None for anything else (a batched product, an equation it cannot read)."""
    op = op_of(ctx, pm, product)
    if op in ("__matmul__", "matmul", "mm"):
        out = []
        for operand, axis in zip(operands, (1, 0)):
            base, swapped = _untransposed(ctx, operand)
            out.append((base, 1 - axis if swapped else axis))
        return out
    if op == "einsum" and isinstance(product, cst.Call):
        equation = positional(product)[0].value if positional(product) else None
        if not isinstance(equation, cst.SimpleString) or not isinstance(equation.evaluated_value, str):
            return None
        inputs, arrow, output = equation.evaluated_value.replace(" ", "").partition("->")
        terms = inputs.split(",")
        if not arrow or len(terms) != 2 or any(len(t) != 2 or len(set(t)) != 2 for t in terms):
            return None
        summed = (set(terms[0]) & set(terms[1])) - set(output)
        if len(summed) != 1 or (set(terms[0]) | set(terms[1])) - summed - set(output):
            return None
        letter = summed.pop()
        return [(operand, term.index(letter)) for operand, term in zip(operands, terms)]
    return None


def _untransposed(ctx, expr: cst.BaseExpression) -> Tuple[cst.BaseExpression, bool]:
    """``z.T`` -> (z, True); ``z.t().contiguous()``, ``z.transpose(0, 1)``, ``z.permute(1, 0)`` too."""
    swapped = False
    for _ in range(6):
        if isinstance(expr, cst.Attribute) and expr.attr.value in ("T", "mT"):
            expr, swapped = expr.value, not swapped
            continue
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            name = expr.func.attr.value
            args = [ctx.number(a.value) for a in positional(expr)]
            if name == "t" and not args or name in ("transpose", "swapaxes") and sorted(args) in ([0, 1], [-2, -1]) \
                    or name == "permute" and args == [1, 0]:
                expr, swapped = expr.func.value, not swapped
                continue
            if name in ("contiguous", "detach") and not args:
                expr = expr.func.value
                continue
        break
    return expr, swapped


def _standardised_along(ctx, pm, expr: cst.BaseExpression, axis: int, depth: int) -> bool:
    """Is the 2-D ``expr`` standardised along ``axis`` (each column, for axis 0, with zero mean and
    unit variance): the output of an ``nn.BatchNorm1d(..., affine=False)`` (batch statistics over
    axis 0; a learnable affine would rescale it), or ``(z - z.mean(0)) / z.std(0)`` (an eps added to
    the spread, ``sqrt(var + eps)``, included), directly or through local names."""
    if depth > 4:
        return False
    if isinstance(expr, cst.Name):
        value = pm.value_of(expr)
        return value is not None and _standardised_along(ctx, pm, value, axis, depth + 1)
    if isinstance(expr, cst.Call):
        built = pm.module_built(expr.func)
        if built is None or (ctx.call_name(built) or "").rsplit(".", 1)[-1] != "BatchNorm1d" or axis != 0:
            return False
        affine = next((a.value for a in built.args if a.keyword is not None and a.keyword.value == "affine"), None)
        return isinstance(affine, cst.Name) and affine.value == "False"
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide)):
        return False
    spread = _spread_of(ctx, expr.right)
    if spread is None or spread[1] != axis:
        return False
    centred, own = expr.left, None
    if isinstance(centred, cst.Name):
        # ``zc = z - z.mean(0)``; ``zc / zc.std(0)`` (or ``/ z.std(0)``: the same spread)
        own, centred = centred.value, pm.value_of(centred)
    of = _centred(ctx, centred, axis) if isinstance(centred, cst.BinaryOperation) else None
    return of is not None and spread[0] in (of, own)


def _axis_of(ctx, call: cst.Call, receiver_is_arg: bool) -> Optional[int]:
    """The reduced axis of ``z.mean(0)`` / ``z.std(dim=0, keepdim=True)`` / ``torch.mean(z, 0)`` (2-D: -1 is 1)."""
    args = positional(call)[1:] if receiver_is_arg else positional(call)
    dim = next((a.value for a in call.args if a.keyword is not None and a.keyword.value in ("dim", "axis")),
               args[0].value if args else None)
    n = ctx.number(dim) if dim is not None else None
    if n is None or n not in (0, 1, -1):
        return None
    return 1 if n == -1 else int(n)


def _reduction(ctx, expr: cst.BaseExpression, names) -> Optional[Tuple[str, int]]:
    """(the reduced value's code, axis) of a ``mean`` / ``std`` / ``var`` named in ``names``."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    name = ctx.call_name(expr) or ""
    if name.startswith("torch.") and name.rsplit(".", 1)[-1] in names and positional(expr):
        axis = _axis_of(ctx, expr, True)
        return (ctx.code(positional(expr)[0].value), axis) if axis is not None else None
    if isinstance(func, cst.Attribute) and func.attr.value in names and not name.startswith(("torch.", "np.", "numpy.")):
        axis = _axis_of(ctx, expr, False)
        return (ctx.code(func.value), axis) if axis is not None else None
    return None


def _centred(ctx, sub: cst.BinaryOperation, axis: int) -> Optional[str]:
    """``z - z.mean(0)``: the code of ``z`` when ``sub`` subtracts its own mean along ``axis``."""
    if not isinstance(sub.operator, cst.Subtract):
        return None
    mean = _reduction(ctx, sub.right, ("mean",))
    return mean[0] if mean is not None and mean == (ctx.code(sub.left), axis) else None


def _spread_of(ctx, expr: cst.BaseExpression) -> Optional[Tuple[str, int]]:
    """``z.std(0)``, ``z.std(0) + eps``, ``torch.sqrt(z.var(0) + eps)``, ``(z.var(0) + eps).sqrt()``,
    ``(z.var(0) + eps) ** 0.5``: (the code of ``z``, axis)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Add) \
            and (ctx.number(expr.right) is not None or isinstance(expr.right, (cst.Name, cst.Attribute))):
        expr = expr.left  # ``z.std(0) + eps``
    std = _reduction(ctx, expr, ("std",))
    if std is not None:
        return std
    inner = None
    if isinstance(expr, cst.Call) and (ctx.call_name(expr) or "") == "torch.sqrt" and positional(expr):
        inner = positional(expr)[0].value
    elif isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "sqrt" \
            and not expr.args and not (ctx.call_name(expr) or "").startswith(("math.", "np.", "numpy.")):
        inner = expr.func.value
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Power) and ctx.number(expr.right) == 0.5:
        inner = expr.left
    if isinstance(inner, cst.BinaryOperation) and isinstance(inner.operator, cst.Add):
        inner = inner.left  # ``var + eps``
    return _reduction(ctx, inner, ("var",)) if inner is not None else None


def short_code(ctx, node: cst.CSTNode, limit: int = 60) -> str:
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def single_binding(ctx, pm, name: cst.Name) -> Optional[Tuple[cst.BaseExpression, cst.SimpleStatementLine]]:
    """``(value, statement)`` when ``name`` was last bound by a plain ``name = value`` statement
    (not an unpacking, not a parameter)."""
    value = pm.value_of(name)
    if value is None:
        return None
    assign = ctx.parent(value)
    if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1
            and isinstance(assign.targets[0].target, cst.Name) and assign.targets[0].target.value == name.value):
        return None
    line = ctx.parent(assign)
    if not isinstance(line, cst.SimpleStatementLine):
        return None
    return value, line


def reaching_bindings(ctx, pm, name: cst.Name) -> List[Tuple[cst.BaseExpression, cst.SimpleStatementLine]]:
    """``single_binding``'s ``(value, statement)`` for every plain ``name = value`` that may be the
    one seen at ``name`` (newest first): ``if not causal: d = q @ (k.T @ ones)`` / ``else: x, d =
    helper()`` then ``x / d``: the branch's product reaches the division (xformers' FAVOR)."""
    out = []
    seen = set()
    for b in ctx.semantic.reaching(name.value, name):
        if b.kind != "assign" or b.part or not isinstance(b.value, cst.BaseExpression):
            continue
        assign = b.statement
        if not (isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.value is b.value
                and isinstance(assign.targets[0].target, cst.Name)):
            continue
        line = ctx.parent(assign)
        if isinstance(line, cst.SimpleStatementLine) and id(line) not in seen:
            seen.add(id(line))
            out.append((b.value, line))
    return out


def perspective_divide(ctx, numerator: cst.BaseExpression, divisor: cst.BaseExpression) -> bool:
    """``uvz[:2] / uvz[2:3]``, ``uvz[:, :2] / uvz[:, 2:3]``, ``uvz[0] / uvz[2]``: image coordinates (the rows
    up to 2) divided by their depth row (the row from 2) of the same homogeneous coordinates. (Linear
    attention divides by its last row, ``out[..., :-1] / out[..., -1:]``: not this.)"""
    if not (isinstance(numerator, cst.Subscript) and isinstance(divisor, cst.Subscript)
            and len(numerator.slice) == len(divisor.slice)):
        return False
    for top, bottom in zip(numerator.slice, divisor.slice):
        t, b = top.slice, bottom.slice
        b_first = b.value if isinstance(b, cst.Index) else b.lower if isinstance(b, cst.Slice) else None
        if b_first is None or ctx.number(b_first) != 2:
            continue
        if isinstance(t, cst.Slice) and t.upper is not None and ctx.number(t.upper) == 2 \
                and (t.lower is None or ctx.number(t.lower) == 0):
            return True
        if isinstance(t, cst.Index) and ctx.number(t.value) in (0, 1):
            return True
    return False
