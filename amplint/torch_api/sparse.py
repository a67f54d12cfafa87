"""Sparse-dense matrix products, which CUDA autocast breaks.

Source: aten/src/ATen/native/sparse/cuda/SparseCUDATensorMath.cu, ``s_addmm_out_sparse_dense_cuda`` (the
CUDA kernel of ``addmm`` / ``mm`` with a sparse COO first operand): it converts the COO indices to CSR
and calls ``s_addmm_out_csr_sparse_dense_cuda_worker`` (SparseBlasLegacy.cpp), which dispatches with
``AT_DISPATCH_FLOATING_AND_COMPLEX_TYPES(values.scalar_type(), "addmm_sparse_cuda", ...)`` ("No half
support"): float32, float64 and complex only. ``torch.sparse.mm`` (``aten::_sparse_mm``, composite)
reaches ``addmm``, which autocast registers on its lower-precision list (``autocast.LOWER_PRECISION``),
so under CUDA autocast the sparse operand is cast to float16 / bfloat16 first and the product raises
``RuntimeError: "addmm_sparse_cuda" not implemented for 'Half'`` ('BFloat16'): pytorch/pytorch#41069,
#56231, #144040 (torch 2.6: "Half precision coo mm is yet to be implemented").
"""
from __future__ import annotations

from typing import FrozenSet

# Calls whose first matrix operand is sparse by their API.
# (``_sparse_mm`` -> ``_sparse_addmm`` -> ``at::addmm``, SparseTensorMath.cpp; ``torch.spmm`` is ``mm``. Not
# ``hspmm`` / ``smm``: autocast casts nothing for them.)
SPARSE_MATMULS: FrozenSet[str] = frozenset({"torch.sparse.mm", "torch.spmm", "torch.sparse.addmm"})
# The position of the sparse operand in each (``torch.sparse.addmm(input, mat1, mat2)``: mat1).
SPARSE_OPERAND = {"torch.sparse.addmm": 1}
# Dense products that take a sparse COO operand as well (``torch.mm(adj, x)`` with ``adj`` sparse).
DENSE_MATMULS: FrozenSet[str] = frozenset({"torch.mm", "torch.matmul", "torch.addmm"})
# What builds a sparse COO tensor: constructors, and the methods converting a dense one.
SPARSE_BUILDERS: FrozenSet[str] = frozenset({"torch.sparse_coo_tensor", "torch.sparse.FloatTensor",
                                             "torch.sparse.DoubleTensor", "torch.sparse.HalfTensor",
                                             "torch.sparse.LongTensor"})
SPARSE_METHODS: FrozenSet[str] = frozenset({"to_sparse", "to_sparse_coo"})
# The autocast dtypes the CUDA kernel has no case for.
NO_KERNEL_DTYPES = ("float16", "bfloat16")
