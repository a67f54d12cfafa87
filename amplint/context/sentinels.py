"""Values a tensor holds only as a sentinel: ``beam_scores[:, 1:] = -1e9`` marks dead beams of a
beam search; in float16 the write gives -inf (an indexed assignment does not raise, unlike
``fill_`` / ``masked_fill``), and -inf is what the code means when the tensor is only added to
finite scores and selected from (``scores + beam_scores[:, None]`` then ``topk``): no NaN can come
of it. A tensor read any other way (a softmax, a subtraction, a product, a call, a return) may
turn the -inf into NaN.
"""
from __future__ import annotations

import libcst as cst

# methods that give a view or copy of the same values
_VIEWS = frozenset({"view", "reshape", "expand", "expand_as", "unsqueeze", "squeeze", "flatten", "contiguous",
                    "clone", "detach", "repeat", "t", "transpose", "permute", "view_as", "reshape_as"})
# methods and functions that select from the values (an -inf loses, it is never computed with)
_SELECTIONS = frozenset({"topk", "max", "argmax", "sort", "argsort", "amax"})
# what reads no value: the shape, the device, a new tensor like it
_NO_VALUE = frozenset({"size", "shape", "device", "dtype", "new", "new_zeros", "new_ones", "new_full", "new_empty",
                       "new_tensor", "dim", "numel"})


def only_added_or_selected(ctx, target: cst.Subscript) -> bool:
    """Is the local tensor written by ``x[...] = c`` (``target``) only ever added to other values,
    selected from (``topk`` / ``max`` / ``sort``), viewed, or re-bound to a view of itself in its
    function (and read at least once)?"""
    base = target.value
    fn = ctx.enclosing_function(target)
    if not isinstance(base, cst.Name) or fn is None:
        return False
    uses = [n for n in ctx.nodes(cst.Name) if n.value == base.value and n is not base
            and ctx.enclosing_function(n) is fn and ctx.is_ancestor(fn.body, n)]
    read = False
    for use in uses:
        parent = ctx.parent(use)
        if isinstance(parent, (cst.AssignTarget, cst.Param)) or isinstance(parent, cst.Subscript) and \
                isinstance(ctx.parent(parent), cst.AssignTarget):
            continue  # a binding, or another indexed write
        if not _harmless_use(ctx, use, base.value):
            return False
        read = True
    return read


def _harmless_use(ctx, node: cst.CSTNode, name: str) -> bool:
    while True:
        parent = ctx.parent(node)
        if isinstance(parent, cst.Subscript) and parent.value is node:
            node = parent  # ``x[:, None]``: the same values
            continue
        if isinstance(parent, cst.Attribute) and parent.value is node:
            attr = parent.attr.value
            call = ctx.parent(parent)
            if attr in _NO_VALUE:
                return True
            if isinstance(call, cst.Call) and call.func is parent and attr in _VIEWS:
                node = call
                continue
            return isinstance(call, cst.Call) and call.func is parent and attr in _SELECTIONS
        break
    if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
        return True  # -inf plus a finite score stays -inf: the sentinel carried on
    if isinstance(parent, cst.Arg):
        call = ctx.parent(parent)
        return isinstance(call, cst.Call) and (ctx.call_name(call) or "").rpartition(".")[2] in _SELECTIONS \
            and parent is call.args[0]
    if isinstance(parent, cst.Assign) and parent.value is node:
        # ``x = x.view(-1)``: the name keeps holding the values; its uses are looked at too
        return all(isinstance(t.target, cst.Name) and t.target.value == name for t in parent.targets)
    return False
