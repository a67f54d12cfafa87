"""AMP305 forward-loss-fail-fast (off by default): the training step's own ``sys.exit`` / ``assert`` on
a non-finite forward loss under float16 autocast with loss scaling."""
from __future__ import annotations

from typing import Iterable

from ..context.nonfinite_stops import NONFINITE_CHECKS, NONFINITE_METHODS, nonfinite_stops
from ..context.training import is_test_file
from ..findings import Violation
from ..prefilter import words
from .base import Rule


class ForwardLossFailFast(Rule):
    code = "AMP305"
    name = "forward-loss-fail-fast"
    summary = "The training step ends the run at the first non-finite forward loss under float16 (off by default)"
    fix_safety = "none"
    applies_under = "fp16 (autocast with loss scaling)"
    # A policy, and a common, defensible one (the DeiT / MAE / BEiT lineage): loss scaling never makes
    # a forward loss non-finite, so the check fires on a real overflow of the forward pass or a
    # divergence. Enable it to keep runs alive through a rare overflowing batch.
    default_enabled = False
    needs = words([*NONFINITE_CHECKS, *NONFINITE_METHODS])

    def check(self, ctx) -> Iterable[Violation]:
        if is_test_file(ctx):
            return
        for found in nonfinite_stops(ctx):
            if not found.fail_fast:
                continue  # AMP304
            message = (f"{found.how} ends the run at the first non-finite `{found.checked}`: under float16 "
                       f"autocast a rare batch can overflow the forward pass, a step GradScaler would skip")
            yield Violation(found.stop, message, found.confidence,
                            help=("count non-finite steps, skip them, and fail only past a threshold, saving the "
                                  "batch and state; amplint.runtime.AmpGuard does this (see `amplint rule AMP305`)"),
                            evidence=[found.evidence])
