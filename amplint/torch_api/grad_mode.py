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
