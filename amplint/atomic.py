"""Replacing a file atomically: the new content goes to a temporary file beside it, then
``os.replace`` puts it under the final name. A reader never sees half a file, two writers never
interleave, and a failed or interrupted write leaves the old file (or none) and no temporary file.

Used for everything amplint writes (cache entries, ``--output-file`` reports, verify reports, the
runtime guard's dumps). ``amplint fix`` writes users' source files with its own writer
(amplint.fixes.write_atomically): it also keeps their owner, mode and hard links.
"""
from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, Iterator, Union


@contextmanager
def replacing(path: Union[str, Path], *, fsync: bool = False, make_parents: bool = False) -> Iterator[BinaryIO]:
    """A binary file to write the new content of ``path`` to; on leaving the block it replaces
    ``path``. ``make_parents`` creates its folder first (a cache or dump folder; a user's
    ``--output-file`` in a folder that does not exist is an error instead). ``fsync`` makes the content durable before the
    rename (a crash then leaves the old or the new file, never an empty one)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if make_parents:
        directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_atomic(path: Union[str, Path], data: bytes, *, fsync: bool = False, make_parents: bool = False) -> None:
    """Replace ``path``'s content with ``data`` (see ``replacing``)."""
    with replacing(path, fsync=fsync, make_parents=make_parents) as fh:
        fh.write(data)
