"""Recording what each aten op does to the numbers, forward, backward and in the optimizer step.

A ``TorchDispatchMode`` sees every aten op below autograd and autocast (so the float16 kernels that
autocast chose, and the ops inside composites such as ``nn.MultiheadAttention``), including the
backward ops when it is active around ``.backward()``. Each op is attributed to a ``Site``: the
innermost frame of the user's code and the module running (``blocks.1.attn``). Backward ops run
without the user's frames on the stack; they are attributed to the forward op whose autograd node
is executing (``torch._C._current_autograd_node()``), through a map from each forward output's
``grad_fn`` to its site, filled in one op late (the autograd node is attached after the dispatch
mode returns).

Cost: two reductions per floating output (``aminmax`` and ``count_nonzero``, for underflow);
the expensive statistics (NaN / inf counts, the inputs' finiteness) run only on an output whose
amax is not finite, or that raised.
"""
from __future__ import annotations

import math
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils import _pytree as pytree

FLOAT16_MAX = 65504.0
# Ops whose -inf / inf output is a value the user asked for (a mask), when the fill value is infinite.
_FILL_OPS = {"masked_fill", "masked_fill_", "where", "fill", "fill_", "full", "full_like", "new_full",
             "index_fill", "index_fill_", "scalar_tensor", "_masked_softmax", "lift_fresh", "lift_fresh_copy"}
# Ops that cannot change a value (views, allocation): not measured, only attributed.
_SKIP = {"detach", "alias", "view", "_unsafe_view", "t", "transpose", "permute", "expand", "select",
         "slice", "unsqueeze", "squeeze", "reshape", "as_strided", "split", "chunk", "unbind",
         "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "zero_", "set_",
         "_local_scalar_dense", "is_same_size"}


@dataclass(frozen=True)
class Site:
    file: str  # absolute path of the user's file
    line: int
    function: str
    module: str  # module path ("blocks.1.attn"), "" outside any module


@dataclass
class OpStats:
    """What one op did at one site, summed over the calls made there (in one run)."""
    phase: str  # forward | backward | optimizer
    op: str  # aten name, "masked_fill.Scalar"
    site: Site
    dtype: str
    calls: int = 0
    numel: int = 0
    amax: float = 0.0  # largest finite magnitude seen
    nan: int = 0
    inf: int = 0
    zeros: int = 0
    role: str = ""  # producer | propagator | mask | error | ""
    error: str = ""
    first_step: int = -1  # the first step on which a non-finite or an error appeared
    bad_steps: set = field(default_factory=set)  # the steps on which it did

    @property
    def nonfinite(self) -> int:
        return self.nan + self.inf


def _user_file(filename: str, _cache: Dict[str, bool] = {}) -> bool:  # noqa: B006 - a deliberate cache
    hit = _cache.get(filename)
    if hit is None:
        hit = _cache[filename] = _is_user_file(filename)
    return hit


def _roots() -> Tuple[str, ...]:
    import amplint

    paths = {os.path.dirname(torch.__file__), os.path.dirname(amplint.__file__)}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            paths.add(p)
    return tuple(os.path.realpath(p) + os.sep for p in paths)


_LIBRARY_ROOTS: Tuple[str, ...] = ()


def _is_user_file(filename: str) -> bool:
    global _LIBRARY_ROOTS
    if not filename or filename.startswith("<"):
        return False
    if not _LIBRARY_ROOTS:
        _LIBRARY_ROOTS = _roots()
    real = os.path.realpath(filename)
    return not real.startswith(_LIBRARY_ROOTS)


class ModuleTracker:
    """The module running now, by path from its root: module forward hooks keep a stack; the first
    module called with an empty stack is a root and names all its submodules."""

    def __init__(self) -> None:
        self.names: Dict[int, str] = {}
        self.roots: List[torch.nn.Module] = []
        self.stack: List[str] = []
        self._handles = []
        self.on_root = None  # called with each root module found (before its first forward runs)

    def __enter__(self):
        self._handles = [torch.nn.modules.module.register_module_forward_pre_hook(self._pre),
                         torch.nn.modules.module.register_module_forward_hook(self._post, always_call=True)]
        return self

    def __exit__(self, *exc):
        for h in self._handles:
            h.remove()
        self._handles = []
        self.stack.clear()
        return False

    def _pre(self, module, args):
        key = id(module)
        if key not in self.names:
            if self.stack:
                self.names[key] = f"{self.stack[-1]}.?{type(module).__name__}".lstrip(".")
            else:
                self.roots.append(module)
                if self.on_root is not None:
                    self.on_root(module)
                for name, sub in module.named_modules():
                    self.names.setdefault(id(sub), name)
        self.stack.append(self.names[key])

    def _post(self, module, args, output):
        if self.stack:
            self.stack.pop()

    @property
    def current(self) -> str:
        return self.stack[-1] if self.stack else ""

    def parameter_names(self) -> Dict[int, str]:
        out: Dict[int, str] = {}
        for root in self.roots:
            for name, p in root.named_parameters(remove_duplicate=False):
                out.setdefault(id(p), name)
        return out


def _site_here(module: str) -> Optional[Site]:
    frame = sys._getframe(2)
    while frame is not None:
        code = frame.f_code
        if _user_file(code.co_filename):
            return Site(code.co_filename, frame.f_lineno, code.co_name, module)
        frame = frame.f_back
    return None


_UNKNOWN = Site("", 0, "", "")


class Recorder(TorchDispatchMode):
    """Records OpStats per (phase, site, op). ``phase`` is set by the caller around forward, backward
    and the optimizer step; ``optimizer_site`` is where optimizer ops are attributed."""

    def __init__(self, modules: ModuleTracker, track_zeros: bool = True) -> None:
        super().__init__()
        self.modules = modules
        self.track_zeros = track_zeros
        self.phase = "forward"
        self.step = 0
        self.optimizer_site: Optional[Site] = None
        self.stats: Dict[Tuple[str, Site, str], OpStats] = {}
        self.order: Dict[Tuple[str, Site, str], int] = {}  # first-seen order, for stable output
        self.sites_run: set = set()  # (file, line) of forward sites that ran
        self._node_sites: Dict[object, Site] = {}
        self._pending: List[Tuple[object, Site]] = []

    # -- attribution
    def _resolve_pending(self) -> None:
        for tensor, site in self._pending:
            fn = getattr(tensor, "grad_fn", None)
            if fn is not None and fn not in self._node_sites:
                self._node_sites[fn] = site
        self._pending = []

    def _site(self) -> Site:
        if self.phase == "forward":
            return _site_here(self.modules.current) or Site("", 0, "", self.modules.current)
        if self.phase == "backward":
            node = torch._C._current_autograd_node()
            site = self._node_sites.get(node) if node is not None else None
            return site or _UNKNOWN
        return self.optimizer_site or _UNKNOWN

    def begin_backward(self) -> None:
        self._resolve_pending()
        self.phase = "backward"

    def end_step(self) -> None:
        self._node_sites.clear()
        self._pending = []
        self.phase = "forward"

    # -- the mode
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if self.phase == "forward" and self._pending:
            self._resolve_pending()
        name = func._overloadpacket.__name__
        if name in _SKIP:
            out = func(*args, **kwargs)
            if self.phase == "forward" and torch.is_grad_enabled():
                site = _site_here(self.modules.current)
                if site is not None:
                    self._pending.extend((t, site) for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor))
            return out
        site = self._site()
        # An in-place op overwrites its input: whether that input was finite is asked before.
        mutated_finite = None
        if func._schema.is_mutable and args and isinstance(args[0], torch.Tensor) and args[0].is_floating_point():
            with torch._C._DisableTorchDispatch():
                mutated_finite = bool(torch.isfinite(args[0]).all())
        try:
            out = func(*args, **kwargs)
        except Exception as e:
            self._record_error(func, site, e)
            raise
        if self.phase == "forward" and site.file:
            self.sites_run.add((site.file, site.line))
        outputs = [t for t in pytree.tree_leaves(out) if isinstance(t, torch.Tensor) and t.is_floating_point()]
        if not outputs:
            return out
        if self.phase == "forward" and torch.is_grad_enabled():
            self._pending.extend((t, site) for t in outputs)
        self._record(func, name, site, outputs, args, kwargs, mutated_finite)
        return out

    def _entry(self, func, site: Site, dtype) -> OpStats:
        key = (self.phase, site, str(func).replace("aten.", "", 1))
        entry = self.stats.get(key)
        if entry is None:
            entry = self.stats[key] = OpStats(self.phase, key[2], site, str(dtype).replace("torch.", ""))
            self.order[key] = len(self.order)
        return entry

    def _record_error(self, func, site: Site, error: Exception) -> None:
        entry = self._entry(func, site, "")
        entry.calls += 1
        entry.role = "error"
        entry.error = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        entry.bad_steps.add(self.step)
        if entry.first_step < 0:
            entry.first_step = self.step

    def _record(self, func, name: str, site: Site, outputs, args, kwargs, mutated_finite=None) -> None:
        with torch._C._DisableTorchDispatch():
            entry = self._entry(func, site, outputs[0].dtype)
            entry.calls += 1
            bad = False
            for t in outputs:
                if t.numel() == 0:
                    continue
                d = t.detach()
                entry.numel += d.numel()
                # One pass for the range (a NaN or an inf shows in min or max), one for the zeros.
                lo, hi = torch.aminmax(d) if d.dim() else (d, d)
                amax = max(abs(float(lo)), abs(float(hi)))
                if self.track_zeros:
                    entry.zeros += d.numel() - int(torch.count_nonzero(d))
                if math.isfinite(amax):
                    entry.amax = max(entry.amax, amax)
                    continue
                bad = True
                finite = torch.isfinite(d)
                entry.nan += int(torch.isnan(d).sum())
                entry.inf += int(torch.isinf(d).sum())
                fin = d[finite]
                if fin.numel():
                    entry.amax = max(entry.amax, float(fin.abs().amax()))
            if bad:
                role = self._role(name, args, kwargs, mutated_finite)
                if entry.role not in ("producer", "error") or role == "producer":
                    entry.role = role if entry.role != "producer" else "producer"
                entry.bad_steps.add(self.step)
                if entry.first_step < 0:
                    entry.first_step = self.step

    @staticmethod
    def _role(name: str, args, kwargs, mutated_finite) -> str:
        """producer: a non-finite output from finite inputs; mask: an infinite fill value (a mask the
        user asked for); propagator otherwise."""
        leaves = pytree.tree_leaves((args, kwargs))
        if name in _FILL_OPS:
            scalars = [x for x in leaves if isinstance(x, (int, float)) and not isinstance(x, bool)]
            scalars += [float(x) for x in leaves if isinstance(x, torch.Tensor) and x.numel() == 1
                        and x.is_floating_point()]
            if any(math.isinf(s) for s in scalars):
                return "mask"
        inputs = [x for x in leaves if isinstance(x, torch.Tensor) and x.is_floating_point() and x.numel()]
        if mutated_finite is not None:
            if not mutated_finite:
                return "propagator"
            inputs = inputs[1:]  # the mutated input now holds the output
        if all(bool(torch.isfinite(x).all()) for x in inputs):
            return "producer"
        return "propagator"
