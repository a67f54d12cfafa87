"""Loading a target ``path/to/file.py:function``: the function takes no arguments and returns
``step``, ``(step, optimizer)`` or ``(step, optimizer, scaler)``."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Tuple

from .record import Site, _site_here  # noqa: F401 - Site is part of this module's answer


class TargetError(Exception):
    """A bad target: a clear message, exit 2."""


def parse(target: str) -> Tuple[Path, str]:
    path, sep, function = target.rpartition(":")
    if not sep or not path or not function:
        raise TargetError(f"{target!r}: expected path/to/file.py:function")
    if not function.isidentifier():
        raise TargetError(f"{target!r}: {function!r} is not a function name")
    return Path(path), function


def load(target: str):
    """(step, optimizer, scaler) from the target; user exceptions propagate as UserCodeError."""
    import torch

    from .run import OPTIMIZER_SITES, UserCodeError

    path, function = parse(target)
    if not path.is_file():
        raise TargetError(f"{path}: No such file")
    if path.suffix != ".py":
        raise TargetError(f"{path}: not a Python file")
    name = f"amplint_verify_target_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    directory = str(path.resolve().parent)
    sys.path.insert(0, directory)  # the target imports its neighbours, as `python file.py` would let it
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise UserCodeError(f"importing {path}", e) from e
    factory = getattr(module, function, None)
    if factory is None:
        raise TargetError(f"{path}: no function {function!r}")
    if not callable(factory):
        raise TargetError(f"{path}:{function} is not callable")

    built = []
    original = torch.optim.Optimizer.__init__

    def remember(self, *args, **kwargs):  # where each optimizer is built: its parameters' fate is told there
        original(self, *args, **kwargs)
        site = _site_here("")
        if site is not None:
            built.append((self, site))
    torch.optim.Optimizer.__init__ = remember
    try:
        result = factory()
    except TypeError as e:
        if "positional argument" in str(e) and e.__traceback__ is not None and e.__traceback__.tb_next is None:
            raise TargetError(f"{path}:{function} must take no arguments ({e})") from e
        raise UserCodeError(f"calling {function}()", e) from e
    except Exception as e:
        raise UserCodeError(f"calling {function}()", e) from e
    finally:
        torch.optim.Optimizer.__init__ = original
    for optimizer, site in built:
        OPTIMIZER_SITES[id(optimizer)] = site
    return unpack(result, f"{path}:{function}")


def unpack(result, where: str):
    import torch

    parts = result if isinstance(result, tuple) else (result,)
    if not 1 <= len(parts) <= 3:
        raise TargetError(f"{where} returned {len(parts)} values: expected step, (step, optimizer) or (step, optimizer, scaler)")
    step, optimizer, scaler = (*parts, None, None)[:3]
    if not callable(step):
        raise TargetError(f"{where} returned {type(step).__name__} where a step function was expected: "
                          "return step, (step, optimizer) or (step, optimizer, scaler)")
    if optimizer is not None and not isinstance(optimizer, torch.optim.Optimizer):
        raise TargetError(f"{where}: the second value is a {type(optimizer).__name__}, not a torch.optim.Optimizer")
    if scaler is not None and not hasattr(scaler, "scale"):
        raise TargetError(f"{where}: the third value is a {type(scaler).__name__}, not a GradScaler")
    return step, optimizer, scaler
