"""The garbage collector during a command-line run (``Runner.tune_gc``; never for API users, whose
process is theirs).

A cold run keeps the project's summaries (plain dicts and lists, about a tenth of a libcst tree per
file) alive from start to end, and parses every file into ~10^5 objects. With CPython's default
thresholds every full collection walks all of that again: ~20 % of a cold run's CPU at 100k lines,
and more as the project grows (issue 7: time grew faster than the lines past 500k). So, for the
run: each file's analysis is dropped when its findings are made (``FileContext.release``: it is
freed by reference counting, with no cycle left for the collector), the long-lived project facts
are moved out of the collector's sight once they are built (``gc.freeze``), and collections run
less often. ``stop`` puts everything back.
"""
from __future__ import annotations

import gc
from typing import Optional, Tuple

# (young, middle, old) thresholds while linting: a young collection when the tracked objects
# allocated outnumber those freed by 500k (CPython's default: 700). A file's tree and analysis (up
# to ~10^5 objects) are freed by reference counting when its findings are made; a collection while
# they live only walks them (nothing there is garbage) and moves them to an older generation, to be
# walked again. At 20k, young collections were ~9 % of a cold run of transformers' 250k-line subset
# (356 of them, 5.2 s of 60 s), at 500k ~2 % (63, 1.1 s of 39 s) for 6 % more peak memory
# (260 -> 276 MiB); a 1M threshold gained little more (1.0 s) for 17 % (305 MiB). On the whole package
# (1M lines) the peak grows more: 463 -> 595 MiB (+28 %), and a 200k threshold gives none of it back
# (benchmarks/results/cache_speed.md, session 8).
THRESHOLDS = (500_000, 20, 20)

_saved: Optional[Tuple[int, int, int]] = None


def start() -> None:
    global _saved
    from . import engine

    if _saved is None:
        _saved = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    engine.RELEASE_CONTEXTS = True


def freeze() -> None:
    """The objects alive now (the project's summaries, regimes, index) are long-lived: out of the
    collector's sight from here on (collected first: no garbage is frozen with them)."""
    if _saved is not None:
        gc.collect()
        gc.freeze()


def stop() -> None:
    global _saved
    from . import engine

    engine.RELEASE_CONTEXTS = False
    if _saved is not None:
        gc.unfreeze()
        gc.set_threshold(*_saved)
        _saved = None
