"""CUDA's autocast op policy, as data: the one source of truth for the static dtype model and for
the runtime verifier's emulation of CUDA autocast on CPU (amplint.verify.emulation).

Two views of one policy: ``CUDA_ATEN`` keyed by the aten operator (``name.overload``, what the
dispatcher sees and what the emulation registers kernels for), and the Python-level spellings below
(what the static model sees in source). ``SPELLINGS`` links the two.

Source: PyTorch ``aten/src/ATen/autocast_mode.cpp`` (``TORCH_LIBRARY_IMPL(aten, AutocastCUDA, m)``:
the ``KERNEL_CUDA(..., lower_precision_fp)``, ``KERNEL_CUDA(..., fp32)`` and ``promote`` entries and
the banned ``binary_cross_entropy``), ``aten/src/ATen/autocast_mode.h``
(``AT_FORALL_LOWER_PRECISION_FP`` / ``AT_FORALL_FP32`` / ``AT_FORALL_PROMOTE``) and the "CUDA Op-Specific
Behavior" section of the torch.amp documentation. Names are the Python-level spellings that reach
those kernels (``torch.X``, ``torch.nn.functional.X``, ``Tensor.X``, operators).
"""
from __future__ import annotations

from typing import Dict, Tuple

# --- aten view: operator -> policy, as registered by TORCH_LIBRARY_IMPL(aten, AutocastCUDA, m) in
# aten/src/ATen/autocast_mode.cpp (PyTorch 2.13; tests/test_torch_api.py compares it with the
# AutocastCUDA kernels the installed torch's dispatcher holds, which CPU builds register too): AT_FORALL_LOWER_PRECISION_FP -> "lower",
# AT_FORALL_FP32 -> "fp32", AT_FORALL_FP32_SET_OPT_DTYPE -> "fp32_opt_dtype" (float32 unless the call
# names a dtype), the ``norm`` overloads registered with fp32_append_dtype -> "fp32_append_dtype",
# AT_FORALL_PROMOTE -> "promote", binary_cross_entropy -> "banned". "" is the default overload.
_LOWER_ATEN = (
    "_convolution.deprecated", "_convolution", "conv1d", "conv2d", "conv3d", "conv_tbc",
    "conv_transpose1d", "conv_transpose2d.input", "conv_transpose3d.input", "convolution", "prelu",
    "addmm", "addmv", "addr", "matmul", "einsum", "mm", "mv", "linalg_vecdot", "linear", "addbmm",
    "baddbmm", "bmm", "chain_matmul", "linalg_multi_dot", "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
    "_scaled_dot_product_flash_attention", "scaled_dot_product_attention",
    "cudnn_convolution", "cudnn_convolution_transpose",  # registered under AT_CUDNN_ENABLED
)
_FP32_ATEN = (
    "acos", "asin", "cosh", "erfinv", "exp", "expm1", "log", "log10", "log2", "log1p", "reciprocal",
    "rsqrt", "sinh", "tan", "pow.Tensor_Scalar", "pow.Tensor_Tensor", "pow.Scalar", "softplus",
    "layer_norm", "native_layer_norm", "group_norm", "frobenius_norm.dim", "nuclear_norm",
    "nuclear_norm.dim", "cosine_similarity", "poisson_nll_loss", "cosine_embedding_loss", "nll_loss",
    "nll_loss2d", "hinge_embedding_loss", "kl_div", "l1_loss", "smooth_l1_loss", "huber_loss",
    "mse_loss", "margin_ranking_loss", "multilabel_margin_loss", "soft_margin_loss",
    "triplet_margin_loss", "multi_margin_loss", "binary_cross_entropy_with_logits", "dist", "pdist",
    "cdist", "renorm", "logsumexp", "upsample_nearest1d", "_upsample_nearest_exact1d",
    "upsample_nearest2d", "_upsample_nearest_exact2d", "upsample_nearest3d", "_upsample_nearest_exact3d",
    "upsample_linear1d", "upsample_bilinear2d", "_upsample_bilinear2d_aa", "upsample_trilinear3d",
    "upsample_bicubic2d", "_upsample_bicubic2d_aa", "rms_norm",
)
_FP32_OPT_DTYPE_ATEN = (
    "prod", "prod.dim_int", "softmax.int", "log_softmax.int", "cumprod", "cumsum", "linalg_vector_norm",
    "linalg_matrix_norm", "linalg_matrix_norm.str_ord", "sum", "sum.dim_IntList",
)  # the named-tensor overloads (softmax.Dimname, sum.dim_DimnameList, ...) are absent from torch 2.13 builds
_FP32_APPEND_DTYPE_ATEN = ("norm.Scalar", "norm.ScalarOpt_dim")
_PROMOTE_ATEN = (
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
    "tensordot", "scatter_add",
)
CUDA_ATEN: Dict[str, str] = {
    **{op: "lower" for op in _LOWER_ATEN},
    **{op: "fp32" for op in _FP32_ATEN},
    **{op: "fp32_opt_dtype" for op in _FP32_OPT_DTYPE_ATEN},
    **{op: "fp32_append_dtype" for op in _FP32_APPEND_DTYPE_ATEN},
    **{op: "promote" for op in _PROMOTE_ATEN},
    "binary_cross_entropy": "banned",
}


def split_overload(op: str) -> Tuple[str, str]:
    """``"pow.Tensor_Scalar"`` -> ``("pow", "Tensor_Scalar")``; ``"exp"`` -> ``("exp", "default")``."""
    name, _, overload = op.partition(".")
    return name, overload or "default"


# --- Python view: the spellings the static model meets in source.

# Ops that autocast runs in float16 (lower_precision_fp).
LOWER_PRECISION = frozenset({
    "__matmul__", "matmul", "mm", "mv", "bmm", "baddbmm", "addmm", "addmv", "addr", "addbmm", "einsum",
    "linear", "conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d",
    "conv_transpose3d", "convolution", "prelu", "chain_matmul", "multi_dot", "linalg_multi_dot",
    "linalg_vecdot", "vecdot", "scaled_dot_product_attention", "_scaled_dot_product_attention",
    "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell", "_thnn_fused_lstm_cell",
    "_thnn_fused_gru_cell", "lstm", "gru", "rnn_tanh", "rnn_relu",
})

# Ops that autocast runs in float32.
FP32 = frozenset({
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin", "cosh", "sinh", "tan", "erfinv",
    "exp", "expm1", "log", "log10", "log1p", "log2", "reciprocal", "rsqrt", "softmax", "softmin",
    "softplus", "log_softmax", "logsumexp", "sum", "prod", "cumsum", "cumprod", "norm", "frobenius_norm",
    "nuclear_norm", "linalg_vector_norm", "vector_norm", "linalg_matrix_norm", "matrix_norm",
    "linalg_norm", "normalize", "dist", "cdist", "pdist", "renorm", "cosine_similarity",
    "layer_norm", "native_layer_norm", "group_norm", "upsample_nearest1d",
    "upsample_nearest2d", "upsample_nearest3d", "upsample_linear1d", "upsample_bilinear2d",
    "upsample_trilinear3d", "upsample_bicubic2d", "polar", "pow",
    "cross_entropy", "nll_loss", "nll_loss2d", "nll_loss_nd", "kl_div", "l1_loss", "mse_loss",
    "smooth_l1_loss", "huber_loss", "binary_cross_entropy_with_logits", "poisson_nll_loss",
    "gaussian_nll_loss", "margin_ranking_loss", "hinge_embedding_loss", "cosine_embedding_loss",
    "triplet_margin_loss", "soft_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
    "multi_margin_loss",
})

# Ops that autocast runs in the widest dtype of their inputs.
PROMOTE = frozenset({
    "addcdiv", "addcmul", "atan2", "bilinear", "cross", "dot", "vdot", "grid_sampler", "index_put",
    "scatter_add", "tensordot", "cat", "stack", "index_copy",
})

# Ops that take a ``dtype=`` argument naming their output (and computation) dtype. Autocast's
# ``fp32_set_opt_dtype`` / ``fp32_append_dtype`` policies respect an explicit dtype, so
# ``F.softmax(x, -1, dtype=torch.float32)`` is float32 everywhere.
OPT_DTYPE = frozenset({
    "softmax", "log_softmax", "softmin", "sum", "prod", "cumsum", "cumprod", "mean", "nansum",
    "norm", "linalg_vector_norm", "vector_norm", "linalg_matrix_norm", "matrix_norm", "linalg_norm",
})

# Ops that CUDA autocast refuses (any autocast dtype): binary_cross_entropy raises
# "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast".
BANNED = frozenset({"binary_cross_entropy"})

# nn.Module classes -> the functional op they run (what autocast sees).
MODULE_OPS = {
    "Linear": "linear", "Bilinear": "bilinear", "LazyLinear": "linear",
    "Conv1d": "conv1d", "Conv2d": "conv2d", "Conv3d": "conv3d",
    "ConvTranspose1d": "conv_transpose1d", "ConvTranspose2d": "conv_transpose2d",
    "ConvTranspose3d": "conv_transpose3d",
    "LSTM": "lstm", "GRU": "gru", "RNN": "rnn_tanh", "LSTMCell": "lstm_cell", "GRUCell": "gru_cell",
    "RNNCell": "rnn_tanh_cell", "PReLU": "prelu", "MultiheadAttention": "linear",
    "LayerNorm": "layer_norm", "GroupNorm": "group_norm", "Softmax": "softmax", "LogSoftmax": "log_softmax",
    "Softmin": "softmin", "Softplus": "softplus", "CosineSimilarity": "cosine_similarity",
    "Upsample": "upsample_bilinear2d",
    "CrossEntropyLoss": "cross_entropy", "NLLLoss": "nll_loss", "KLDivLoss": "kl_div", "L1Loss": "l1_loss",
    "MSELoss": "mse_loss", "SmoothL1Loss": "smooth_l1_loss", "HuberLoss": "huber_loss",
    "BCEWithLogitsLoss": "binary_cross_entropy_with_logits", "BCELoss": "binary_cross_entropy",
    "PoissonNLLLoss": "poisson_nll_loss",
    "MarginRankingLoss": "margin_ranking_loss", "HingeEmbeddingLoss": "hinge_embedding_loss",
    "CosineEmbeddingLoss": "cosine_embedding_loss", "TripletMarginLoss": "triplet_margin_loss",
    "SoftMarginLoss": "soft_margin_loss", "MultiLabelMarginLoss": "multilabel_margin_loss",
    "MultiLabelSoftMarginLoss": "multilabel_soft_margin_loss", "MultiMarginLoss": "multi_margin_loss",
}

# Python-level spellings that reach a differently named kernel.
ALIASES = {
    "norm": "norm", "vector_norm": "linalg_vector_norm", "matrix_norm": "linalg_matrix_norm",
    "multi_dot": "linalg_multi_dot", "true_divide": "div", "divide": "div", "square": "pow",
    "interpolate": "upsample_bilinear2d", "sdpa": "scaled_dot_product_attention",
}


def policy(op: str) -> str:
    """'lower' | 'fp32' | 'promote' | 'banned' | 'keep' for an op name (last dotted component)."""
    op = ALIASES.get(op, op)
    if op in BANNED:
        return "banned"
    if op in LOWER_PRECISION:
        return "lower"
    if op in FP32:
        return "fp32"
    if op in PROMOTE:
        return "promote"
    return "keep"


# aten operator (packet name) -> the Python-level spellings that reach it, for ops whose spelling
# differs from the aten name (every other op in CUDA_ATEN is spelled as its packet name:
# ``torch.exp``, ``Tensor.exp``, ``F.softplus`` ...). From torch/_tensor.py (operators),
# torch/nn/functional.py and torch/linalg.
SPELLINGS: Dict[str, Tuple[str, ...]] = {
    "matmul": ("matmul", "__matmul__", "__rmatmul__"),
    "pow": ("pow", "__pow__", "__rpow__", "square"),
    "reciprocal": ("reciprocal", "__rdiv__", "__rtruediv__"),
    "linalg_multi_dot": ("multi_dot", "linalg_multi_dot"),
    "linalg_vecdot": ("vecdot", "linalg_vecdot"),
    "linalg_vector_norm": ("vector_norm", "linalg_vector_norm", "normalize"),
    "linalg_matrix_norm": ("matrix_norm", "linalg_matrix_norm"),
    "scaled_dot_product_attention": ("scaled_dot_product_attention", "sdpa"),
    "upsample_bilinear2d": ("interpolate", "upsample_bilinear2d", "Upsample"),
    "binary_cross_entropy": ("binary_cross_entropy", "BCELoss"),
    "lstm_cell": ("lstm_cell", "LSTMCell"), "gru_cell": ("gru_cell", "GRUCell"),
}


def aten_policy(op: str) -> str:
    """CUDA autocast policy of an aten operator (``"softmax.int"`` or a packet name ``"softmax"``):
    'lower' | 'fp32' | 'fp32_opt_dtype' | 'fp32_append_dtype' | 'promote' | 'banned' | 'keep'."""
    if op in CUDA_ATEN:
        return CUDA_ATEN[op]
    if "." in op:
        return "keep"  # an overload autocast does not register
    name = op.partition(".")[0]
    kinds = {kind for key, kind in CUDA_ATEN.items() if key.partition(".")[0] == name}
    return kinds.pop() if len(kinds) == 1 else "keep"
