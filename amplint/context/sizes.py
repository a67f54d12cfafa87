"""Values computed only from sizes: shapes, lengths, ``int`` parameters and literals.

``(hw - 1).clamp(eps)`` with ``hw = torch.tensor([width, height])`` (kornia's
normalize_pixel_coordinates) is 0 only for a one-pixel image, the same for every input: whether
the guard acts is a matter of the sizes the caller picks, not of the data flowing through, so a
float16 rounding of the guard is no data-dependent hazard. A count of data (``mask.sum()``) is
not a size: it is 0 whenever no element is selected.
"""
from __future__ import annotations

import libcst as cst

from .precision import precision_model
from .probability import method_of

# Calls whose result is a size of their argument.
_SIZE_CALLS = {"len", "torch.numel"}
_SIZE_ATTRS = {"shape", "ndim"}
# Calls that build / cast a tensor holding their positional arguments' values (keywords are
# dtype / device).
_BUILDERS = {"torch.tensor", "torch.as_tensor", "torch.stack", "torch.cat", "torch.Tensor", "torch.LongTensor",
             "torch.FloatTensor", "max", "min", "math.sqrt", "float", "int"}
# Methods that keep the receiver's values (a cast, a move, a view); their arguments are dtypes / devices.
_KEEPS = {"to", "float", "double", "half", "type", "type_as", "cuda", "cpu", "view", "reshape", "unsqueeze",
          "squeeze", "expand", "flip", "clone", "detach", "contiguous", "repeat"}


def _int_parameter(ctx, name: cst.Name) -> bool:
    fn = ctx.enclosing_function(name)
    if fn is None:
        return False
    p = fn.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        if param.name.value == name.value:
            ann = param.annotation
            return ann is not None and isinstance(ann.annotation, cst.Name) and ann.annotation.value == "int"
    return False


def sizes_only(ctx, expr: cst.BaseExpression, depth: int = 0) -> bool:
    """Is ``expr`` computed only from sizes (``x.shape``, ``len``, ``x.size(1)``, ``int``
    parameters, number literals), through arithmetic, tensor construction and casts?"""
    if depth > 12:
        return False
    if ctx.number(expr) is not None and not isinstance(expr, (cst.Name, cst.Attribute)):
        return True
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(sizes_only(ctx, e.value, depth + 1) for e in expr.elements)
    if isinstance(expr, cst.BinaryOperation):
        return sizes_only(ctx, expr.left, depth + 1) and sizes_only(ctx, expr.right, depth + 1)
    if isinstance(expr, cst.UnaryOperation):
        return sizes_only(ctx, expr.expression, depth + 1)
    if isinstance(expr, cst.Subscript):
        return sizes_only(ctx, expr.value, depth + 1)
    if isinstance(expr, cst.Attribute):
        return expr.attr.value in _SIZE_ATTRS
    if isinstance(expr, cst.Name):
        if _int_parameter(ctx, expr):
            return True
        value = precision_model(ctx).value_of(expr)
        return value is not None and sizes_only(ctx, value, depth + 1)
    if isinstance(expr, cst.Call):
        positional = [a.value for a in expr.args if a.keyword is None and not a.star]
        m = method_of(ctx, expr)
        if m is not None:
            if m[0] in ("size", "numel", "dim", "nelement"):
                return True
            return m[0] in _KEEPS and sizes_only(ctx, m[1], depth + 1)
        name = ctx.call_name(expr)
        if name in _SIZE_CALLS:
            return True
        if name in _BUILDERS and positional:
            return all(sizes_only(ctx, a, depth + 1) for a in positional)
    return False
