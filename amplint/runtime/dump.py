"""The evidence a guard leaves when it stops a run: one file, written atomically, bounded in size,
loadable with a plain ``torch.load`` (``weights_only=True``: only tensors, numbers, strings and
containers go in; anything else is stored as its ``repr``)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, List, Tuple

import torch

from ..atomic import replacing

# What is dropped first when the dump would exceed its budget: the largest, least needed parts.
DROP_ORDER = ("outputs", "optimizer", "model", "bad_batches", "batch")


def to_plain(obj: Any, copy: bool = False, _depth: int = 0) -> Any:
    """Tensors detached on the CPU (copied when ``copy``: the caller keeps them past this step),
    mappings as dicts, sequences as lists / tuples, anything else that torch.load's safe mode
    refuses as its repr."""
    if _depth > 20:
        return repr(obj)
    if isinstance(obj, torch.Tensor):
        t = obj.detach()
        return t.to("cpu", copy=True) if copy or t.device.type != "cpu" else t
    if obj is None or type(obj) in (bool, int, float, str, bytes):
        return obj
    for base in (bool, int, float, str, bytes):  # subclasses (torch's TorchVersion, IntEnum) as the base
        if isinstance(obj, base):
            return base(obj)
    if isinstance(obj, Mapping):
        return {str(k) if not isinstance(k, (int, str)) else k: to_plain(v, copy, _depth + 1) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [to_plain(v, copy, _depth + 1) for v in obj]
        return items if isinstance(obj, list) else tuple(items)
    if isinstance(obj, torch.dtype):
        return str(obj)
    return repr(obj)


def nbytes(obj: Any) -> int:
    """Bytes of the tensors in a plain object (the bulk of the file)."""
    if isinstance(obj, torch.Tensor):
        return obj.numel() * obj.element_size()
    if isinstance(obj, dict):
        return sum(nbytes(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(nbytes(v) for v in obj)
    return 0


def bound(payload: dict, max_bytes: int) -> Tuple[dict, List[str]]:
    """Drop parts in DROP_ORDER until the tensors fit in ``max_bytes``; say what was dropped."""
    omitted = []
    for key in DROP_ORDER:
        if nbytes(payload) <= max_bytes:
            break
        if payload.get(key) is not None:
            omitted.append(f"{key} ({nbytes(payload[key])} bytes)")
            payload[key] = None
    payload["omitted"] = omitted
    return payload, omitted


def save_atomic(payload: dict, path: str) -> str:
    """torch.save to a temporary file beside ``path``, then os.replace: a reader never sees half a
    file, and a crash mid-write leaves no file under the final name."""
    with replacing(path, fsync=True, make_parents=True) as fh:
        torch.save(payload, fh)
    return path
