"""The PyTorch profiler, started and stopped without its own log lines.

Kineto (the profiler's backend) writes lines such as ``USDT: ...
profiler_start`` to file descriptor 2 when a profiling session starts and
stops. They are not the workload's output and not ours, so while the
profiler starts and while it stops (never while the workload runs) file
descriptor 2 points at the null device. A user who set ``KINETO_LOG_LEVEL``
chose what Kineto prints: then nothing is silenced.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType
from typing import Any


@contextmanager
def _profiler_output_hidden() -> Iterator[None]:
    if "KINETO_LOG_LEVEL" in os.environ:
        yield
        return
    with warnings.catch_warnings():
        # torch 2.11+ warns at every stop that a session's events are not kept across cycles: ours never are.
        warnings.filterwarnings("ignore", message="Warning: Profiler clears events")
        try:
            sys.stderr.flush()
        except (AttributeError, OSError, ValueError):
            pass
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 to protect
            yield
            return
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(null, 2)
            finally:
                os.close(null)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class quiet_profile:
    """``torch.profiler.profile(**options)`` whose start and stop print nothing (see the module docstring)."""

    def __init__(self, **options: Any) -> None:
        from torch.profiler import profile

        self._profile = profile(**options)

    def __enter__(self) -> Any:
        with _profiler_output_hidden():
            return self._profile.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool | None:
        with _profiler_output_hidden():
            return self._profile.__exit__(kind, error, trace)
