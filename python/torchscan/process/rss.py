"""Peak resident set size of a command in a fresh child process (``measure_peak_rss``)."""

from __future__ import annotations

import errno
import math
import numbers
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import _engine
from .._progress import pass_line
from ..report import MetricResult, metric_result

__all__ = ["measure_peak_rss"]

SUPERVISOR = "torchscan-rss-supervisor"
METHOD = "wait4.ru_maxrss"


def _supervisor() -> str:
    """The supervisor program installed inside the package (or on PATH)."""
    beside = Path(__file__).resolve().parent.parent / SUPERVISOR
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(SUPERVISOR)
    if found is None:
        raise RuntimeError(f"{SUPERVISOR} is missing from the torchscan installation; reinstall torchscan.")
    return found


def _check_command(command: object) -> list[str]:
    if isinstance(command, (str, bytes, bytearray)) or not isinstance(command, Sequence):
        raise ValueError(
            "command must be a non-empty sequence of str such as [sys.executable, '-c', 'import torch'], "
            f"not {type(command).__name__}."
        )
    items = list(command)
    if not items:
        raise ValueError("command must not be empty.")
    if any(not isinstance(item, str) for item in items):
        raise ValueError("Every command element must be a str.")
    if any("\0" in item for item in items):
        raise ValueError("Command elements must not contain NUL characters.")
    return items


def _check_startable(items: list[str]) -> None:
    """Raise FileNotFoundError (missing) or PermissionError (not an executable file) for the command's
    program, as starting it would, so that measure_workload refuses before its workload runs."""
    program = items[0]
    if os.sep in program or (os.altsep is not None and os.altsep in program):
        found = os.path.exists(program)
        if found and not (os.path.isfile(program) and os.access(program, os.X_OK)):
            raise PermissionError(errno.EACCES, "not an executable file", program)
    else:
        found = shutil.which(program) is not None
    if not found:
        raise FileNotFoundError(errno.ENOENT, "no executable program of that name", program)
    _supervisor()


def _check_timeout(timeout: object) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise ValueError(f"timeout must be None or a positive finite number of seconds, got {type(timeout).__name__}.")
    try:
        seconds = float(timeout)
    except (OverflowError, ValueError) as error:
        raise ValueError("timeout must be a positive finite number of seconds.") from error
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"timeout must be a positive finite number of seconds, got {seconds!r}.")
    return seconds


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stops the supervisor, which kills and reaps the command's process
    group, and reaps the supervisor."""
    if process.poll() is None:
        try:
            process.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck supervisor
            process.kill()
            process.wait()


def measure_peak_rss(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    timeout: float | None = None,
) -> MetricResult:
    """Measure the peak resident set size of ``command`` run in a fresh child process.

    The command (``argv`` list, looked up in ``PATH``; standard streams and the
    environment inherited) runs in a new process group under the small C
    program ``torchscan-rss-supervisor``, which reaps it with ``wait4`` and
    reports ``ru_maxrss`` (KiB on Linux, bytes on macOS; returned in bytes).
    Because the command is started from that tiny program and not forked from
    this Python process, none of the caller's resident memory is inherited
    into the figure. The figure covers the command and the descendants it
    waited for, over its whole lifetime (imports and loading included); it is
    not summed over a process tree.

    When the command ends, anything left in its process group is killed. On
    ``timeout`` (seconds) the whole group is killed and reaped. On
    KeyboardInterrupt (or any other exception while waiting) the supervisor
    is stopped, which kills and reaps the group, before the exception
    propagates: no zombie or orphan is left behind.

    While the command runs longer than a second, a progress line on this
    process's standard error shows it when that is a terminal (never in the
    command's own output; ``TORCHSCAN_PROGRESS=0`` turns it off).

    Being its own process group, the command is a background job of a
    terminal: it must not read from an interactive terminal (the read would
    stop it); give it input through a file or a pipe.

    Returns:
        ``MetricResult`` complete, unit ``"bytes"``, scope
        ``"child_process_lifetime"``, method ``"wait4.ru_maxrss"``.

    Raises:
        ValueError: ``command`` is a str/bytes, empty, or has a non-str
            element; ``timeout`` is not a positive finite number.
        TypeError: ``cwd`` is not a str or path.
        NotImplementedError: not Linux/macOS (nothing is launched).
        FileNotFoundError, PermissionError (OSError): the command could not be
            started.
        subprocess.CalledProcessError: the command exited with a non-zero
            status (``returncode`` negative when a signal ended it).
        subprocess.TimeoutExpired: the command ran past ``timeout``.
    """
    items = _check_command(command)
    seconds = _check_timeout(timeout)
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(f"cwd must be a str or path, got {type(cwd).__name__}.")
    if sys.platform not in ("linux", "darwin") or not hasattr(os, "wait4"):
        raise NotImplementedError(f"measure_peak_rss needs Linux or macOS (wait4); this is {sys.platform}.")
    supervisor = _supervisor()
    arguments = [supervisor]
    read_end, write_end = os.pipe()
    arguments += ["--result-fd", str(write_end)]
    if seconds is not None:
        arguments += ["--timeout", repr(seconds)]
    arguments += ["--", *items]
    try:
        process = subprocess.Popen(arguments, cwd=cwd, pass_fds=(write_end,))
    except BaseException:
        os.close(read_end)
        raise
    finally:
        os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe, pass_line("measure_peak_rss: command running"):
            line = pipe.read()
        process.wait()
    except BaseException:
        _stop(process)
        raise
    if not line:
        raise RuntimeError(f"{SUPERVISOR} ended without a result (exit status {process.returncode}).")
    outcome, code, peak = _engine.rss_parse(line.decode("ascii", "replace"))
    if outcome == "spawn-failed":
        raise OSError(code, os.strerror(code), items[0])
    if outcome == "timeout":
        raise subprocess.TimeoutExpired(items, seconds if seconds is not None else 0.0)
    if outcome == "interrupted":
        if code == signal.SIGINT:
            raise KeyboardInterrupt
        raise RuntimeError(f"{SUPERVISOR} was stopped by signal {code}; the command was killed.")
    if outcome == "signaled":
        raise subprocess.CalledProcessError(-code, items)
    if code != 0:
        raise subprocess.CalledProcessError(code, items)
    return metric_result(
        status="complete", value=peak, unit="bytes", scope="child_process_lifetime", method=METHOD
    )

