"""Where no gradient is recorded, and which ops have no float16 kernel at all.

``NO_GRAD``: context managers / decorators that turn autograd recording off (torch/autograd/grad_mode.py:
``no_grad``, ``inference_mode``; ``torch.set_grad_enabled(False)`` is the same with an argument).

``NO_HALF``: linear-algebra ops that raise for a float16 input on CPU and CUDA alike ("linalg.inv: Low
precision dtypes not supported. Got Half", '"lu_cpu" not implemented for 'Half'', ...). CUDA autocast
casts none of them (they are on no list of aten/src/ATen/autocast_mode.cpp), so a float16 tensor reaches
them as it is. Source: the torch.linalg documentation ("Supports input of float, double, cfloat and cdouble
dtypes" on inv, det, slogdet, solve, svd, svdvals, eig, eigh, eigvals, eigvalsh, qr, cholesky, lstsq, pinv,
lu_factor, matrix_rank) and ``checkFloatingOrComplex(..., allow_low_precision_dtypes=false)`` in
aten/src/ATen/native/LinearAlgebraUtils.h; tests/test_torch_api.py checks each against the installed torch.
"""
from __future__ import annotations

NO_GRAD = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad",
    "torch.autograd.grad_mode.inference_mode",
})

# Python spellings (functions; the Tensor methods of the same name are ``NO_HALF_METHODS``).
NO_HALF = frozenset({
    "torch.inverse", "torch.linalg.inv", "torch.linalg.inv_ex", "torch.det", "torch.linalg.det", "torch.logdet",
    "torch.slogdet", "torch.linalg.slogdet", "torch.linalg.solve", "torch.linalg.solve_ex", "torch.svd",
    "torch.linalg.svd", "torch.linalg.svdvals", "torch.linalg.eig", "torch.linalg.eigvals", "torch.linalg.eigh",
    "torch.linalg.eigvalsh", "torch.linalg.qr", "torch.cholesky", "torch.linalg.cholesky",
    "torch.linalg.cholesky_ex", "torch.linalg.lstsq", "torch.linalg.pinv", "torch.pinverse",
    "torch.linalg.lu_factor", "torch.linalg.matrix_rank",
})
NO_HALF_METHODS = frozenset({"inverse", "det", "logdet", "slogdet", "svd", "cholesky", "pinverse"})

# Ops that write one tensor's values into another and raise when the two dtypes differ ("scatter():
# Expected self.dtype to be equal to src.dtype", "index_add_(): self (Half) and source (Float) must have
# the same scalar type", "Index put requires the source and destination dtypes match", "masked_scatter:
# expected self and source to have same dtypes"): no implicit promotion, on CPU and CUDA alike. Method name
# -> (position of the source among the method's positional arguments, its keyword). The function form
# (``torch.scatter(input, dim, index, src)``) takes the destination first. CUDA autocast promotes the
# out-of-place ``scatter_add`` and ``index_put`` (``autocast.PROMOTE``), so those do not raise inside an
# autocast region; the in-place forms are on no autocast list. Source: aten/src/ATen/native/
# TensorAdvancedIndexing.cpp (scatter_gather_dtype_check, index_add / index_copy / index_put checks) and
# aten/src/ATen/native/cuda/IndexKernel.cu's masked_scatter check; tests/test_torch_api.py checks each
# against the installed torch.
SAME_DTYPE_WRITES = {
    "scatter": (2, "src"), "scatter_": (2, "src"), "scatter_add": (2, "src"), "scatter_add_": (2, "src"),
    "scatter_reduce": (2, "src"), "scatter_reduce_": (2, "src"), "index_add": (2, "source"),
    "index_add_": (2, "source"), "index_copy": (2, "source"), "index_copy_": (2, "source"),
    "index_put": (1, "values"), "index_put_": (1, "values"), "masked_scatter": (1, "source"),
    "masked_scatter_": (1, "source"),
}
