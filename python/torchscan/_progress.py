"""Whether a long measurement may show its progress line, and the line of a single long call.

The line (drawn in C: ``src/ext/progress.c``, texts in ``src/core/progress.c``) goes to standard error only when it
is a terminal, starts after the first second and changes at most ten times a second; it is blanked when the
measurement ends. ``TORCHSCAN_PROGRESS=0`` turns it off, and so does ``TERM=dumb`` (a terminal that may not move
back to the start of a line). Nothing is ever written to standard output, to a pipe or a file, or into what the
workload or a child process writes.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from . import _engine

_OFF = ("0", "false", "no", "off")


def stderr_fd() -> int:
    """The descriptor of ``sys.stderr`` when a progress line may be drawn there, else -1."""
    if os.environ.get("TORCHSCAN_PROGRESS", "").strip().lower() in _OFF or os.environ.get("TERM") == "dumb":
        return -1
    stream = sys.stderr
    try:
        if stream is None or not stream.isatty():
            return -1
        fd = stream.fileno()
        stream.flush()  # what Python buffered goes before the line
    except (AttributeError, OSError, ValueError):  # replaced, closed or detached streams
        return -1
    return fd


@contextlib.contextmanager
def pass_line(label: str) -> Iterator[None]:
    """A progress line "torchscan: <label>, <elapsed>" while the block runs (one long call: a profile, a FLOP
    count, a child process); silent when another line is shown (an outer stage's)."""
    fd = stderr_fd()
    handle = _engine.progress_start(label, fd) if fd >= 0 else None
    try:
        yield
    finally:
        if handle is not None:
            _engine.progress_stop(handle)
