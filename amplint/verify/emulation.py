"""CUDA's autocast policy, emulated on CPU.

CPU autocast at float16 follows CPU's own op lists (softmax, log_softmax, layer_norm, exp and sum stay
float16 there; on CUDA they run in float32). To see on a CPU what a GPU run would compute, this module
registers Python kernels on the ``AutocastCPU`` dispatch key for every aten operator in CUDA's policy
(``amplint.torch_api.autocast.CUDA_ATEN``) and a pass-through kernel for every operator CPU autocast
handles and CUDA does not, then enables CPU autocast at float16. Kernels registered on the dispatch key
see the ops inside composites (``nn.MultiheadAttention``'s linear / bmm / softmax), which a
``TorchFunctionMode`` cannot. Leaving the context removes the kernels (CPU autocast is itself again).

What it cannot reproduce: the GPU's kernels (cuDNN / flash / memory-efficient attention choices,
split-K matmul accumulation order, TF32), so values differ in the last bits and an overflow that
depends on accumulation order may show on one and not the other. See docs/verify.md.
"""
from __future__ import annotations

import threading
import warnings
from typing import Callable, Dict, List

import torch
from torch.utils import _pytree as pytree

from ..torch_api.autocast import CUDA_ATEN, split_overload

_AUTOCAST_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastCPU)
_LOCK = threading.Lock()


def _eligible(x) -> bool:
    # autocast_mode.h is_eligible: a defined floating tensor that is not float64.
    return isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != torch.float64


def _cast(tree, dtype):
    return pytree.tree_map_only(torch.Tensor, lambda t: t.to(dtype) if _eligible(t) else t, tree)


def _dtype_index(op) -> int:
    for i, arg in enumerate(op._schema.arguments):
        if arg.name == "dtype":
            return i
    return -1


def _kernel(op, kind: str) -> Callable:
    """A Python kernel applying one CUDA autocast policy to one aten overload."""
    half = torch.float16

    def below(args, kwargs):
        with torch._C._ExcludeDispatchKeyGuard(_AUTOCAST_CPU):
            return op(*args, **kwargs)

    if kind == "lower":
        return lambda *a, **k: below(*_cast((a, k), half))
    if kind in ("fp32", "fp32_append_dtype"):
        return lambda *a, **k: below(*_cast((a, k), torch.float32))
    if kind == "fp32_opt_dtype":
        index = _dtype_index(op)

        def fp32_unless_dtype_named(*a, **k):
            named = k.get("dtype") is not None or (0 <= index < len(a) and a[index] is not None)
            return below(a, k) if named else below(*_cast((a, k), torch.float32))
        return fp32_unless_dtype_named
    if kind == "promote":
        def widest(*a, **k):
            dtypes = {t.dtype for t in pytree.tree_leaves((a, k)) if _eligible(t)}
            if len(dtypes) > 1:
                return below(*_cast((a, k), torch.float32 if torch.float32 in dtypes else max(dtypes, key=str)))
            return below(a, k)
        return widest
    if kind == "banned":
        def banned(*a, **k):
            raise RuntimeError(
                "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast "
                "(raised by CUDA autocast; amplint's CPU emulation raises it too). Use "
                "binary_cross_entropy_with_logits or BCEWithLogitsLoss, which are safe to autocast.")
        return banned
    return lambda *a, **k: below(a, k)  # "keep": CUDA autocast does not touch this op


def _cpu_only_ops() -> List[str]:
    """Operators CPU autocast registers and CUDA autocast does not (they pass through on CUDA)."""
    cuda = {"aten::" + (op if "." in op else op) for op in CUDA_ATEN}
    out = []
    for name in torch._C._dispatch_get_all_op_names():
        if name.startswith("aten::") and name not in cuda and \
                torch._C._dispatch_has_kernel_for_dispatch_key(name, "AutocastCPU"):
            out.append(name[len("aten::"):])
    return out


def _overload(op: str):
    name, overload = split_overload(op)
    packet = getattr(torch.ops.aten, name, None)
    if packet is None or overload not in packet.overloads():
        return None
    return getattr(packet, overload)


class _Kernels:
    """The Python kernels on AutocastCPU, registered while at least one user holds them (registering
    ~250 kernels costs ~50 ms: a verify run registers once, not once per step)."""

    def __init__(self) -> None:
        self.users = 0
        self.lib = None

    def acquire(self) -> None:
        with _LOCK:
            if self.users == 0:
                lib = torch.library.Library("aten", "IMPL")
                kinds: Dict[str, str] = dict(CUDA_ATEN)
                kinds.update({op: "keep" for op in _cpu_only_ops()})
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # "Overriding a previously registered kernel"
                        for op, kind in kinds.items():
                            overload = _overload(op)
                            if overload is not None:
                                lib.impl(op, _kernel(overload, kind), "AutocastCPU")
                except BaseException:
                    lib._destroy()
                    raise
                self.lib = lib
            self.users += 1

    def release(self) -> None:
        with _LOCK:
            self.users -= 1
            if self.users == 0 and self.lib is not None:
                self.lib._destroy()  # CPU autocast's own kernels are in force again
                self.lib = None


_KERNELS = _Kernels()


class CudaPolicyKernels:
    """``with CudaPolicyKernels():`` keeps the emulation's kernels registered (they act only while CPU
    autocast is enabled); CudaAutocastOnCpu inside it then costs only the autocast switch."""

    def __enter__(self):
        _KERNELS.acquire()
        return self

    def __exit__(self, *exc):
        _KERNELS.release()
        return False


class CudaAutocastOnCpu:
    """``with CudaAutocastOnCpu(): ...`` runs like ``torch.autocast("cuda", torch.float16)`` would,
    on CPU tensors. While the kernels are registered, CPU autocast anywhere in the process follows
    CUDA's policy."""

    def __init__(self) -> None:
        self._autocast = None

    def __enter__(self):
        _KERNELS.acquire()
        try:
            self._autocast = torch.autocast("cpu", dtype=torch.float16)
            self._autocast.__enter__()
        except BaseException:
            _KERNELS.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self._autocast.__exit__(*exc)
        finally:
            _KERNELS.release()
        return False
