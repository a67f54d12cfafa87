"""The rule registry: every module in this package defines one ``Rule`` subclass.

Rules are found by importing the package's modules, so adding a rule is adding a module (and its
page in ``rules/``); nothing else needs editing.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path
from typing import Dict, List, Optional

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
    declared = declared_rules()
    return sorted(declared) if declared is not None else list(all_rules())


def default_off() -> frozenset:
    """Codes of the rules that are off by default (``Rule.default_enabled = False``)."""
    declared = declared_rules()
    if declared is None:
        return frozenset(code for code, rule in all_rules().items() if not getattr(rule, "default_enabled", True))
    return frozenset(code for code, enabled in declared.items() if not enabled)


# ``code = "AMP101"`` / ``default_enabled = False`` as a rule class states them.
_CODE = re.compile(r'^    code(?:\s*:[^=\n]*)?\s*=\s*"([A-Z]+[0-9]+)"', re.M)
_OFF = re.compile(r"^    default_enabled(?:\s*:[^=\n]*)?\s*=\s*False\b", re.M)


def declared_rules() -> Optional[Dict[str, bool]]:
    """{code: enabled by default} read from the rule modules' text, without importing them (the
    rules import libcst, which a run answered from the cache never needs: the configuration only
    asks which codes exist). None when a module's text cannot be read or states not exactly one
    code: then the registry is imported. A test checks this equals the imported registry."""
    if _REGISTRY:
        return {code: getattr(rule, "default_enabled", True) for code, rule in all_rules().items()}
    out: Dict[str, bool] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.name == "base" or info.name.startswith("_"):
            continue
        try:
            text = (Path(__path__[0]) / f"{info.name}.py").read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError, IndexError):
            return None
        codes = _CODE.findall(text)
        if len(codes) != 1:
            return None
        out[codes[0]] = _OFF.search(text) is None
    return out
