"""Per-file results in the cache: reused only when nothing they depended on changed.

A file's result is a function of its bytes, amplint's version, the effective settings, the selected
rules, its display path and the project facts its analysis read. The result key covers all but the
last. The facts are checked in two steps:

1. the project's *fingerprint* (every Python file's content key, and the contents of the files that
   declare the project: pyproject.toml, setup.cfg, requirements, configuration files) is the same as
   when the result was computed: nothing anywhere changed, reuse;
2. otherwise, when the declaration files are the same, the facts the analysis read (recorded while
   it ran: ``Project.regime_for`` and the other recorded accessors, ``project_text.grep``) are asked
   again from the current summaries; the result is reused when every answer has the same digest.

Findings are stored as plain data and read back into the same dataclasses; a finding that does not
survive the round trip unchanged is never cached.
"""
from __future__ import annotations

import os
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from .cache import build, digest
from .findings import Finding, FixSummary, Location

_TYPES = {"FixSummary": FixSummary, "Location": Location}


def result_key(content: str, display: str, settings, codes) -> str:
    return digest("result", build(), content, display, os.getcwd(), repr(settings), ",".join(sorted(codes)))


# ---- findings as data -----------------------------------------------------------------------------
def _encode(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, tuple):
        return {"$t": [_encode(v) for v in value]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    if is_dataclass(value) and type(value).__name__ in _TYPES:
        return {"$": type(value).__name__, **{f.name: _encode(getattr(value, f.name)) for f in fields(value)}}
    raise TypeError(f"cannot store {type(value).__name__}")


def _decode(data):
    if data is None or isinstance(data, (str, int, float, bool)):
        return data
    if isinstance(data, list):
        return [_decode(v) for v in data]
    if isinstance(data, dict):
        if "$t" in data and isinstance(data["$t"], list):
            return tuple(_decode(v) for v in data["$t"])
        cls = _TYPES.get(data.get("$"))
        if cls is None:
            raise ValueError("unknown type")
        return cls(**{k: _decode(v) for k, v in data.items() if k != "$"})
    raise ValueError("bad value")


def finding_data(finding: Finding) -> Optional[dict]:
    """``finding`` as plain data, or None when it would not read back as itself."""
    try:
        data = {f.name: _encode(getattr(finding, f.name)) for f in fields(finding)}
    except TypeError:
        return None
    try:
        back = finding_from(data)
    except (ValueError, TypeError):
        return None
    return data if back == finding else None


def finding_from(data) -> Finding:
    if not isinstance(data, dict):
        raise ValueError("bad finding")
    return Finding(**{k: _decode(v) for k, v in data.items()})


# ---- dependencies -------------------------------------------------------------------------------
def fact_digest(value: Any) -> str:
    return digest(repr(value))


def replay(project, dep) -> Optional[str]:
    """The digest of the recorded fact ``dep`` asked again of ``project`` (None: cannot be asked)."""
    if not (isinstance(dep, list) and len(dep) == 3 and isinstance(dep[0], str) and isinstance(dep[1], list)):
        return None
    name, args, _ = dep
    if not all(isinstance(a, str) for a in args):
        return None
    try:
        if name == "grep" and len(args) == 1:
            from .context.project_text import _project_lines
            return fact_digest(_project_lines(project, args[0], record=False))
        if name not in type(project).RECORDED:
            return None
        attr = getattr(type(project), name)
        if isinstance(attr, property):
            value = attr.fget(project) if not args else None
        else:
            kinds = type(project).RECORDED[name]
            value = attr(project, *[Path(a) if k == "path" else a for a, k in zip(args, kinds)])
        return fact_digest(value)
    except Exception:  # a fact that cannot be asked any more: the result is not reused
        return None


def still_valid(project, entry: dict) -> bool:
    deps = entry.get("deps")
    if not isinstance(deps, list):
        return False
    return all(replay(project, d) == d[2] for d in deps)


def entry_findings(entry) -> Optional[List[Finding]]:
    try:
        return [finding_from(d) for d in entry["findings"]]
    except (KeyError, ValueError, TypeError):
        return None


def make_entry(content: str, fingerprint: str, declarations: str, deps, findings: List[Finding]) -> Optional[Dict]:
    data = []
    for f in findings:
        d = finding_data(f)
        if d is None:
            return None
        data.append(d)
    return {"content": content, "fingerprint": fingerprint, "declarations": declarations, "deps": deps,
            "findings": data}
