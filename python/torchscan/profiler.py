"""Operator profile of one workload call, in a separate instrumented pass."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypedDict

import torch

from . import _engine
from ._distributed import context_fields
from ._profiling import quiet_profile
from ._progress import pass_line
from ._timing import _timing_target
from .process.memory import _PEAK_MEMORY
from .report import Diagnostic

__all__ = ["ProfileReport", "profile_workload"]

METHOD = "torch.profiler.profile"


class ProfileReport(TypedDict):
    """What :func:`profile_workload` returns.

    ``operators`` rows: ``operator`` (e.g. ``"aten::mm"``), ``calls``,
    ``input_shapes``, ``cpu_self_seconds``, ``device_self_seconds`` (None
    when the device time is not recorded) and ``cpu_net_bytes``.
    """

    schema_version: int
    context: dict[str, Any]
    operators: list[dict[str, Any]]
    diagnostics: list[Diagnostic]


def _trace_target(trace_path: object) -> Path | None:
    if trace_path is None:
        return None
    if not isinstance(trace_path, (str, os.PathLike)):
        raise TypeError(f"trace_path must be a str or path, got {type(trace_path).__name__}.")
    path = Path(trace_path)
    if not path.parent.is_dir():
        raise FileNotFoundError(errno.ENOENT, "The trace's directory does not exist", str(path.parent))
    return path


def _refuse_existing(path: Path | None) -> None:
    if path is not None and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, "Refusing to overwrite an existing trace", str(path))


def _export_trace(prof: Any, path: Path) -> None:
    """Writes the Chrome trace without ever replacing a file: the trace goes to
    a temporary file beside ``path`` and is then linked to ``path``, which
    fails if ``path`` appeared in the meantime."""
    fd, temporary = tempfile.mkstemp(prefix=".torchscan-trace-", suffix=".json", dir=path.parent)
    os.close(fd)
    try:
        prof.export_chrome_trace(temporary)
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise
        except OSError:  # no hard links here: create exclusively and copy
            with open(temporary, "rb") as source, open(path, "xb") as target:
                shutil.copyfileobj(source, target)
    finally:
        os.unlink(temporary)


def profile_workload(
    workload: Callable[[], Any],
    *,
    device: str | torch.device,
    trace_path: str | os.PathLike[str] | None = None,
    limit: int = 20,
) -> ProfileReport:
    """Profile one call of ``workload`` with ``torch.profiler`` (shapes and memory).

    A diagnostic pass, separate from timing: the workload runs once under
    ``torch.profiler.profile(record_shapes=True, profile_memory=True)`` with
    the CPU activity, plus CUDA on a CUDA device when the profiler supports
    it, between two device synchronizations. The profiler's
    ``key_averages(group_by_input_shape=True)`` groups are reduced in C:
    sorted by device self time when it is recorded, else by CPU self time
    (descending, ties in profiler order), and limited to ``limit`` rows.
    Profiler self times include instrumentation: they are not clean latency.
    A pass that lasts more than a second shows a progress line on standard
    error when it is a terminal (``TORCHSCAN_PROGRESS=0`` turns it off).

    On MPS the rows are CPU dispatch only (diagnostic
    ``mps_gpu_trace_unavailable``); on CUDA without the CUDA activity,
    ``cuda_gpu_trace_unavailable``.

    Args:
        workload: zero-argument callable, called once; its exceptions propagate.
        device: ``"cpu"``, ``"cuda[:N]"`` or ``"mps"`` (str or torch.device).
        trace_path: also write a Chrome trace there. An existing file is never
            overwritten: ``FileExistsError`` before the workload runs (or at
            export, if the file appeared during the run). The path is not
            stored in the report.
        limit: the most rows to keep (an int >= 1, default 20).

    Returns:
        a :class:`ProfileReport`.

    Raises:
        TypeError: non-callable workload or a bad ``trace_path`` type.
        ValueError: ``limit`` not an int >= 1.
        FileExistsError, FileNotFoundError: the trace file exists, or its
            directory does not (before the call).
        NotImplementedError, RuntimeError: device errors as in
            :func:`measure_latency`; RuntimeError when a PyTorch profiler is
            already running, or from inside the workload of another
            profile_workload or measure_peak_memory (before the workload).
    """
    if not callable(workload):
        raise TypeError(f"workload must be a zero-argument callable, got {type(workload).__name__}.")
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}.")
    path = _trace_target(trace_path)
    target = _timing_target(device)
    from torch.profiler import ProfilerActivity, supported_activities

    activities = [ProfilerActivity.CPU]
    cuda_activity = target.type == "cuda" and ProfilerActivity.CUDA in supported_activities()
    if cuda_activity:
        activities.append(ProfilerActivity.CUDA)
    sync = target.synchronize
    with _PEAK_MEMORY.hold("profile_workload", profiler=True), pass_line("profile_workload: profiling one call"):
        _refuse_existing(path)
        if sync is not None:
            sync()
        with quiet_profile(activities=activities, record_shapes=True, profile_memory=True) as prof:
            workload()
            if sync is not None:
                sync()
        groups = prof.key_averages(group_by_input_shape=True)
        if path is not None:
            _export_trace(prof, path)
    rows = _engine.profile_rows(groups, cuda_activity, limit)
    diagnostics: list[Diagnostic] = []
    if target.type == "mps":
        diagnostics.append(
            {
                "code": "mps_gpu_trace_unavailable",
                "severity": "warning",
                "metric": "device_time",
                "message": "The PyTorch profiler records no MPS device time: rows are CPU dispatch only.",
            }
        )
    elif target.type == "cuda" and not cuda_activity:
        diagnostics.append(
            {
                "code": "cuda_gpu_trace_unavailable",
                "severity": "warning",
                "metric": "device_time",
                "message": "This PyTorch profiler does not support the CUDA activity: rows are CPU dispatch only.",
            }
        )
    return {
        "schema_version": 1,
        "context": {
            "torch_version": torch.__version__,
            "device": target.name,
            "method": METHOD,
            "operator_groups": len(groups),
            "limit": limit,
            "device_time_supported": cuda_activity,
            **context_fields(),
        },
        "operators": rows,
        "diagnostics": diagnostics,
    }
