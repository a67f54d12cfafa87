"""The rule registry: every module in this package defines one ``Rule`` subclass.

Rules are found by importing the package's modules, so adding a rule is adding a module (and its
page in ``rules/``); nothing else needs editing.
"""
from __future__ import annotations

import importlib
import pkgutil
from typing import Dict, List

from .base import Rule

_REGISTRY: Dict[str, Rule] = {}


def all_rules() -> Dict[str, Rule]:
    if not _REGISTRY:
        for info in pkgutil.iter_modules(__path__):
            if info.name == "base" or info.name.startswith("_"):
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            for obj in vars(module).values():
                if isinstance(obj, type) and issubclass(obj, Rule) and obj is not Rule and obj.code:
                    _REGISTRY[obj.code] = obj()
        _REGISTRY.update(dict(sorted(_REGISTRY.items())))
    return dict(sorted(_REGISTRY.items()))


def rule_codes() -> List[str]:
    return list(all_rules())
