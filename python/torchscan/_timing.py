"""Shared pieces of the workload measurements: settings validation, the
device target and its synchronizer, and the benchmark context.

Nothing here measures: the timing loop is C (``_engine.time_workload``).
"""

from __future__ import annotations

import functools
import math
import numbers
import platform
import subprocess
import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from . import _engine
from ._distributed import context_fields
from .crawler import _package_version
from .process.memory import _device, _Exclusive

# One timing at a time: concurrent timings in one process disturb each other.
_TIMING = _Exclusive("measure_latency or measure_workload")


class _Target(NamedTuple):
    """A validated device: its report name and its synchronizer."""

    name: str  # "cpu", "cuda:N" or "mps"
    type: str
    index: int | None
    synchronize: Callable[[], Any] | None  # None on CPU


def _positive_real(name: str, value: object) -> int | float:
    """A positive finite real (bools rejected); ints stay ints when exact."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive finite real number, got {type(value).__name__}.")
    try:
        as_float = float(value)
    except (OverflowError, ValueError, TypeError) as error:
        raise ValueError(f"{name} must be a positive finite real number; the value does not fit a float.") from error
    if not math.isfinite(as_float) or as_float <= 0:
        raise ValueError(f"{name} must be a positive finite real number, got {as_float!r}.")
    if isinstance(value, numbers.Integral) and int(value) <= 2**53:
        return int(value)
    return as_float


def _validate_timing_settings(
    workload: object,
    work_units: object,
    work_unit: object,
    warmup: object,
    min_run_time: object,
    min_repeats: object,
) -> tuple[int | float, float]:
    """Checks every timing setting (contract 1.8); returns the normalized
    ``(work_units, min_run_time)``. Nothing is called."""
    if not callable(workload):
        raise TypeError(f"workload must be a zero-argument callable, got {type(workload).__name__}.")
    units = _positive_real("work_units", work_units)
    run_time = float(_positive_real("min_run_time", min_run_time))
    if type(warmup) is not int or not 0 <= warmup <= sys.maxsize:
        raise ValueError(f"warmup must be an int >= 0 (at most sys.maxsize), got {warmup!r}.")
    if type(min_repeats) is not int or not 2 <= min_repeats <= sys.maxsize:
        raise ValueError(f"min_repeats must be an int >= 2 (at most sys.maxsize), got {min_repeats!r}.")
    if not isinstance(work_unit, str) or not work_unit.strip():
        raise ValueError("work_unit must be a non-blank str such as 'samples'.")
    return units, run_time


def _timing_target(device: object) -> _Target:
    """Normalizes ``device`` and picks its synchronizer (contract 1.8)."""
    dev = _device(device)
    if dev.type == "cpu":
        return _Target("cpu", "cpu", None, None)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError("CUDA is not available.")
        count = torch.cuda.device_count()
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index < 0 or index >= count:
            raise RuntimeError(f"CUDA device index {index} is out of range ({count} device(s) available).")
        target = torch.device("cuda", index)
        return _Target(f"cuda:{index}", "cuda", index, functools.partial(torch.cuda.synchronize, target))
    if dev.type == "mps":
        if dev.index not in (None, 0):
            raise RuntimeError("MPS has a single device (index 0).")
        if not torch.backends.mps.is_available():
            raise RuntimeError("MPS is not available.")
        return _Target("mps", "mps", None, torch.mps.synchronize)
    raise NotImplementedError(f"Device type {dev.type!r} is not supported; use cpu, cuda or mps.")


@functools.cache
def _processor() -> str:
    if sys.platform.startswith("linux"):
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
                for line in cpuinfo:
                    if line.lower().startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
    elif sys.platform == "darwin":
        try:
            brand = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5, check=True
            ).stdout.strip()
            if brand:
                return brand
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


@functools.cache
def _platform() -> tuple[str, str]:
    return platform.platform(), platform.machine()


def _benchmark_context(
    target: _Target,
    inputs: object,
    work_units: int | float,
    work_unit: str,
    warmup: int,
    min_run_time: float,
    min_repeats: int,
    num_threads: int,
) -> dict[str, Any]:
    """The context of a BenchmarkReport (same keys for every workload report)."""
    processor = _processor()
    platform_name, machine = _platform()
    device_name = torch.cuda.get_device_name(target.index) if target.type == "cuda" else processor
    return {
        "torchscan_version": _package_version(),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "platform": platform_name,
        "machine": machine,
        "processor": processor,
        "device": target.name,
        "device_name": device_name,
        "num_threads": num_threads,
        "num_interop_threads": torch.get_num_interop_threads(),
        "cuda_version": torch.version.cuda,
        "inputs_source": "not_provided" if inputs is None else "caller_supplied",
        "work_units": work_units,
        "work_unit": work_unit,
        "warmup": warmup,
        "min_run_time": min_run_time,
        "min_repeats": min_repeats,
        **context_fields(),
    }


def _describe(value: object) -> dict[str, Any]:
    """Metadata of ``inputs`` (contract 1.1 privacy rules: never values)."""
    return _engine.describe_call((value,), {})["args"][0]  # type: ignore[no-any-return]
