"""Which device a branch runs on: the CPU side of ``if logits.is_cuda:`` (or of
``x.device.type == "cpu"``) sees no CUDA autocast and no half model.
"""
from __future__ import annotations

import libcst as cst


def _on_cpu(ctx, test: cst.BaseExpression, truth: bool) -> bool:
    """Does a path that took ``test`` as ``truth`` know a tensor to be on the CPU: the false side of
    ``x.is_cuda``, the true side of ``x.is_cpu`` / ``x.device.type == "cpu"`` (``!= "cuda"``)?"""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _on_cpu(ctx, test.expression, not truth)
    if isinstance(test, cst.Attribute) and test.attr.value in ("is_cuda", "is_cpu"):
        return truth == (test.attr.value == "is_cpu")
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, (target,) = test.left, test.comparisons
        if ctx.code(left).endswith("device.type") and isinstance(target.comparator, cst.SimpleString):
            device = target.comparator.evaluated_value
            equal = isinstance(target.operator, (cst.Equal, cst.Is))
            unequal = isinstance(target.operator, (cst.NotEqual, cst.IsNot))
            if device == "cpu" and (equal or unequal):
                return truth == equal
            if device == "cuda" and (equal or unequal):
                return truth == unequal
    return False


def on_cpu_branch(ctx, node: cst.CSTNode) -> bool:
    """Is ``node`` on the CPU side of a device test around it (``if logits.is_cuda: ... else:``, or
    ``cuda_fn if x.is_cuda else cpu_fn``)? maskrcnn-benchmark's pure-PyTorch focal loss is the CPU
    fallback of its CUDA kernel: CUDA autocast and half models never hand it float16."""
    child = node
    for a in ctx.ancestors(node):
        if isinstance(a, (cst.If, cst.IfExp)) and child is not a.test:
            if _on_cpu(ctx, a.test, child is a.body):
                return True
        elif isinstance(a, (cst.FunctionDef, cst.ClassDef)):
            return False
        child = a
    return False
