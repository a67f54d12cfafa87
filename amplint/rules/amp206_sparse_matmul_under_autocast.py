"""AMP206 sparse-matmul-under-autocast: a sparse COO matrix times a dense one under CUDA autocast."""
from __future__ import annotations

from typing import Iterable, Optional

import libcst as cst

from ..context.conditions import never_run_by_callers
from ..context.precision import precision_model
from ..findings import Confidence, Location, Violation
from ..torch_api import sparse as S
from .base import Rule

# Devices whose autocast lowers ``addmm`` (None: a region whose device is not a literal, taken as CUDA).
_CUDA = {None, "cuda"}


class SparseMatmulUnderAutocast(Rule):
    code = "AMP206"
    name = "sparse-matmul-under-autocast"
    summary = "torch.sparse.mm (sparse COO times dense) under CUDA autocast: no float16 / bfloat16 kernel (off by default)"
    fix_safety = "none"
    applies_under = "fp16 or bf16 autocast (CUDA)"
    # A crash at the first step is loud, not silent, and projects whose mixed precision is an option
    # every configuration leaves off (RecBole's enable_amp) have many such sites: named to be run.
    default_enabled = False
    needs = r"sparse|spmm"

    def check(self, ctx) -> Iterable[Violation]:
        pm = precision_model(ctx)
        for call in ctx.nodes(cst.Call):
            name = ctx.call_name(call) or ""
            if name in S.SPARSE_MATMULS:
                what = f"`{name}`"
            elif name in S.DENSE_MATMULS and self._sparse_operand(ctx, pm, call, name) is not None:
                what = f"`{name}` of a sparse COO tensor"
            else:
                continue
            state = pm.autocast_at(call)
            if not state.active or state.dtype not in S.NO_KERNEL_DTYPES or state.device not in _CUDA:
                continue
            if never_run_by_callers(ctx, call):
                continue
            half = "Half" if state.dtype == "float16" else "BFloat16"
            message = (f"{what} under {state.dtype} autocast: autocast casts the sparse operand to {state.dtype} "
                       f"and CUDA's sparse-dense product has no {state.dtype} kernel: RuntimeError "
                       f"\"addmm_sparse_cuda\" not implemented for '{half}'")
            help = ("run the product with autocast off on float32 operands: "
                    "`with torch.autocast('cuda', enabled=False): torch.sparse.mm(adj, x.float())`")
            evidence = [] if state.evidence is None else [Location(
                state.evidence.path, state.evidence.line, f"{state.dtype} autocast: `{state.evidence.what}`")]
            yield Violation(call, message, Confidence.of(state), None, help=help, evidence=evidence)

    @staticmethod
    def _sparse_operand(ctx, pm, call: cst.Call, name: str) -> Optional[cst.CSTNode]:
        """The first matrix operand of ``torch.mm(a, b)`` (``torch.addmm(t, a, b)``) when it is built
        sparse here: ``torch.sparse_coo_tensor(...)``, ``x.to_sparse()``, through a local name or a
        ``self.`` attribute set in ``__init__`` (``self.register_buffer`` aside)."""
        args = [a.value for a in call.args if a.keyword is None and not a.star]
        index = 1 if name == "torch.addmm" else 0
        if len(args) <= index:
            return None
        operand = args[index]
        for _ in range(4):
            if isinstance(operand, cst.Name):
                operand = pm.value_of(operand)
            elif isinstance(operand, cst.Attribute) and isinstance(operand.value, cst.Name) \
                    and operand.value.value == "self":
                operand = pm.init_attribute(operand, operand.attr.value)
            else:
                break
        if not isinstance(operand, cst.Call):
            return None
        if ctx.call_name(operand) in S.SPARSE_BUILDERS:
            return operand
        func = operand.func
        if isinstance(func, cst.Attribute) and func.attr.value in S.SPARSE_METHODS:
            return operand
        if isinstance(func, cst.Attribute) and func.attr.value in ("to", "cuda", "coalesce") \
                and isinstance(func.value, cst.Call):
            inner = func.value
            if ctx.call_name(inner) in S.SPARSE_BUILDERS or (
                    isinstance(inner.func, cst.Attribute) and inner.func.attr.value in S.SPARSE_METHODS):
                return operand
        return None
