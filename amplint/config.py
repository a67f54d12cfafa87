"""``[tool.amplint]``: load, validate (an unknown key or code is an error naming it), merge the CLI."""
from __future__ import annotations

import fnmatch
import math
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from .parsing import Limits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python < 3.11
    import tomli as tomllib


class ConfigError(Exception):
    """Invalid configuration or usage: reported and exit 2."""


PRECISIONS = ("auto", "fp16-mixed", "fp16", "fp16-master", "bf16", "fp32")

# key -> (type description, validator)
_LIST_KEYS = ("select", "ignore", "extend-select", "exclude", "extend-exclude")


@dataclass
class Settings:
    select: List[str] = field(default_factory=lambda: ["ALL"])
    ignore: List[str] = field(default_factory=list)
    extend_select: List[str] = field(default_factory=list)
    per_file_ignores: Dict[str, List[str]] = field(default_factory=dict)
    exclude: List[str] = field(default_factory=list)
    extend_exclude: List[str] = field(default_factory=list)
    precision: str = "auto"
    # The precision assumed for library code (no training entry point reaches it): "auto" is the
    # library policy of docs/precision.md; a library author picks their users' precision here.
    assume_precision: str = "auto"
    # Values the fixes write (issue: autofix); kept here so they are validated with the rest.
    safe_eps: float = 1e-4
    logit_scale_max: str = "math.log(100)"
    temperature_min: float = 0.01
    limits: Limits = field(default_factory=Limits)  # per-file caps (amplint.parsing)
    config_path: Optional[Path] = None  # where these came from, for messages and relative globs

    @property
    def base_dir(self) -> Path:
        return self.config_path.parent if self.config_path else Path.cwd()


def default_off_codes() -> frozenset:
    """Rules that run only when named by their exact code in ``select`` / ``extend-select`` (as
    ruff's explicitly selected preview rules): ``ALL`` and prefixes do not enable them."""
    from .rules import default_off  # the registry (read without importing the rules when it can)
    return default_off()


def _expand(selectors: Sequence[str], codes: Sequence[str], where: str, explicit_only: frozenset = frozenset()) -> set:
    """The codes the selectors name; codes in ``explicit_only`` only when named exactly."""
    out = set()
    for sel in selectors:
        s = sel.strip().upper()
        if not s:
            raise ConfigError(f"{where}: empty rule code")
        if s == "ALL":
            out.update(c for c in codes if c not in explicit_only)
            continue
        matched = [c for c in codes if c.startswith(s)]
        if not matched:
            raise ConfigError(f"{where}: unknown rule code or prefix {sel!r} (known: {', '.join(codes)})")
        out.update(c for c in matched if c == s or c not in explicit_only)
    return out


def validate_selectors(selectors: Sequence[str], codes: Sequence[str], where: str) -> None:
    _expand(selectors, codes, where)


class RuleSelection:
    """Which rule codes apply to which file."""

    def __init__(self, settings: Settings, codes: Sequence[str]) -> None:
        self.settings = settings
        self.codes = list(codes)
        off = default_off_codes() & set(codes)
        enabled = _expand(settings.select, codes, "select", off) | _expand(settings.extend_select, codes, "extend-select", off)
        enabled -= _expand(settings.ignore, codes, "ignore")
        self.enabled = enabled
        self._per_file = [(pat, _expand(sel, codes, f"per-file-ignores[{pat!r}]"))
                          for pat, sel in settings.per_file_ignores.items()]

    def for_file(self, path: Path) -> set:
        if not self._per_file:
            return set(self.enabled)
        try:
            rel = path.resolve().relative_to(self.settings.base_dir.resolve()).as_posix()
        except ValueError:
            rel = path.as_posix()
        codes = set(self.enabled)
        for pat, ignored in self._per_file:
            if fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(path.name, pat) or fnmatch.fnmatch(rel, pat.rstrip("/") + "/*"):
                codes -= ignored
        return codes


def find_config(start: Path) -> Optional[Path]:
    """The nearest pyproject.toml (from ``start`` upward) that has a ``[tool.amplint]`` table."""
    start = start.resolve()
    d = start if start.is_dir() else start.parent
    for cand in (d, *d.parents):
        f = cand / "pyproject.toml"
        if f.is_file():
            try:
                data = tomllib.loads(f.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
                # A broken pyproject.toml that says nothing about amplint is not ours to judge,
                # unless it is the one we would read: then report it.
                if b"[tool.amplint" in f.read_bytes():
                    return f
                continue
            if "amplint" in data.get("tool", {}):
                return f
    return None


_CODE_KEYS = ("select", "ignore", "extend-select")
# The per-file caps of amplint.parsing and the values they may take. Above the depth range libcst
# itself may crash (its stack) or take seconds per statement.
_LIMIT_RANGES = {"max-file-bytes": (1, 1 << 30), "max-line-length": (1, 1 << 30), "max-syntax-depth": (20, 1000)}


def _known_codes() -> List[str]:
    from .rules import rule_codes  # the registry (libcst, never torch)
    return rule_codes()


def _str_list(value, key: str, where: str) -> List[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: `{key}` must be a list of strings, got {value!r}")
    return list(value)


def _finite(value, key: str, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        raise ConfigError(f"{where}: `{key}` must be a finite number, got {value!r}")
    return float(value)


def _normal_fp16(value, key: str, where: str) -> float:
    """A value a fix writes into float16 code: a normal float16 number from 2^-14 to 1 (a smaller
    one is what the rules flag, so the fix would be reported again)."""
    from .fp16 import FLOAT16, fmt
    v = _finite(value, key, where)
    if not FLOAT16.smallest_normal <= v <= 1:
        raise ConfigError(f"{where}: `{key}` must be a normal float16 value between "
                          f"{fmt(FLOAT16.smallest_normal)} and 1, got {value!r}")
    return v


_NUMBER = r"([0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?)"
_MATH_LOG = re.compile(r"\s*math\.log\(\s*" + _NUMBER + r"\s*\)\s*")
_PLAIN_NUMBER = re.compile(r"\s*" + _NUMBER + r"\s*")


def logit_scale_max_text(value, where: str = "[tool.amplint]") -> str:
    """The code AMP401's fix writes for ``logit-scale-max``, formatted here from the number the
    configuration gives (a number, or the string ``"math.log(N)"``): configuration text is never
    pasted into code. exp() of the bound must be a finite float16 (at most ln(65504) ≈ 11.09)."""
    from .fp16 import FLOAT16
    key = "logit-scale-max"
    if isinstance(value, str) and _PLAIN_NUMBER.fullmatch(value):
        value = float(value.replace("_", ""))
    if isinstance(value, str):
        m = _MATH_LOG.fullmatch(value)
        if m is None:
            raise ConfigError(f"{where}: `{key}` must be a number or \"math.log(N)\", got {value!r}")
        n = float(m.group(1).replace("_", ""))
        bound = math.log(n) if math.isfinite(n) and n > 0 else math.nan
        text = f"math.log({int(n) if n.is_integer() and n < 1e15 else repr(n)})"
    else:
        bound = _finite(value, key, where)
        text = repr(bound)
    if not 0 < bound <= math.log(FLOAT16.max):
        raise ConfigError(f"{where}: `{key}` must be above 0 and at most ln(65504) ≈ 11.09 (exp of it must "
                          f"be a finite float16), got {value!r}")
    return text


def load(path: Optional[Path]) -> Settings:
    """Settings from a pyproject.toml's ``[tool.amplint]`` (defaults when ``path`` is None)."""
    settings = Settings(config_path=path)
    if path is None:
        return settings
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: config file not found")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read config: {e}")
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}")
    table = data.get("tool", {}).get("amplint") if path.name == "pyproject.toml" else data.get("tool", {}).get("amplint", data)
    if table is None:
        return settings
    where = f"{path}: [tool.amplint]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    for key, value in table.items():
        if key in _LIST_KEYS:
            values = _str_list(value, key, where)
            if key in _CODE_KEYS:
                validate_selectors(values, _known_codes(), f"{where} `{key}`")
            setattr(settings, key.replace("-", "_"), values)
        elif key == "per-file-ignores":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: `per-file-ignores` must be a table of glob = [codes]")
            settings.per_file_ignores = {k: _str_list(v, f"per-file-ignores.{k}", where) for k, v in value.items()}
            for pattern, codes in settings.per_file_ignores.items():
                validate_selectors(codes, _known_codes(), f"{where} `per-file-ignores` {pattern!r}")
        elif key == "precision":
            if value not in PRECISIONS:
                raise ConfigError(f"{where}: `precision` must be one of {', '.join(PRECISIONS)}, got {value!r}")
            settings.precision = value
        elif key == "assume-precision":
            if value not in PRECISIONS:
                raise ConfigError(f"{where}: `assume-precision` must be one of {', '.join(PRECISIONS)}, got {value!r}")
            settings.assume_precision = value
        elif key == "safe-eps":
            settings.safe_eps = _normal_fp16(value, key, where)
        elif key == "temperature-min":
            settings.temperature_min = _normal_fp16(value, key, where)
        elif key == "logit-scale-max":
            settings.logit_scale_max = logit_scale_max_text(value, where)
        elif key in _LIMIT_RANGES:
            low, high = _LIMIT_RANGES[key]
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ConfigError(f"{where}: `{key}` must be a whole number from {low:,} to {high:,}, got {value!r}")
            settings.limits = replace(settings.limits, **{key.replace("-", "_"): value})
        else:
            raise ConfigError(f"{where}: unknown key `{key}`")
    return settings
