"""libcst, imported when first used: a run whose every result comes from the cache never parses a
file, and importing libcst costs about a third of a second. Modules that use libcst only inside
functions (and in annotations) write ``from ._lazy import cst`` instead of ``import libcst as cst``."""
from __future__ import annotations


class _Libcst:
    def __getattr__(self, name: str):
        import libcst

        value = getattr(libcst, name)
        setattr(self, name, value)  # later lookups are plain attribute reads
        return value


cst = _Libcst()
