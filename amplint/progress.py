"""A progress bar on stderr, for runs long enough to want one.

Shown only where a person watches: stderr is a terminal, not in CI, not with ``-q``, and only with
human-readable output (never beside JSON, SARIF and the like, whatever stdout is). It appears after
``DELAY`` seconds (a fast run prints nothing), redraws at most ``RATE`` times a second, and erases
itself before the report is printed.
"""
from __future__ import annotations

import os
import time
from typing import Optional, TextIO

DELAY = 1.0
RATE = 10.0
WIDTH = 30
CI_VARIABLES = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "TF_BUILD", "JENKINS_URL", "TEAMCITY_VERSION")


def wanted(args, err: TextIO, environ=os.environ) -> bool:
    if getattr(args, "quiet", False) or getattr(args, "output_format", "full") not in ("full", "concise"):
        return False
    if any(environ.get(v) for v in CI_VARIABLES) or environ.get("TERM") == "dumb":
        return False
    try:
        return err.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    def __init__(self, stream: TextIO, clock=time.monotonic) -> None:
        self.stream = stream
        self.clock = clock
        self.started = clock()
        self.total = 0
        self._last = 0.0
        self._shown = False

    def start(self, total: int) -> None:
        self.total = total

    def update(self, done: int) -> None:
        now = self.clock()
        if self.total <= 0 or now - self.started < DELAY or (now - self._last < 1 / RATE and done < self.total):
            return
        self._last = now
        filled = WIDTH * done // self.total
        self.stream.write(f"\r[{'#' * filled}{'.' * (WIDTH - filled)}] {done}/{self.total} files")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self._shown = False


def for_run(args, err: TextIO) -> Optional[Progress]:
    return Progress(err) if wanted(args, err) else None
