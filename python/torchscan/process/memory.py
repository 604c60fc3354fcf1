"""Peak PyTorch memory of one workload call (not process RSS)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

import torch

from .. import _engine
from .._profiling import quiet_profile

__all__ = ["measure_peak_memory"]


class _Exclusive:
    """A process-wide lock for measurements that must run alone.

    A call from the workload of the measurement that holds it, in the same
    thread, raises instead of waiting for itself forever. (A thread that the
    workload starts and waits for would wait forever, as with any lock.)
    """

    def __init__(self, holders: str) -> None:
        self._lock = threading.Lock()
        self._holder: int | None = None
        self._holders = holders

    def check(self, name: str, *, profiler: bool = False) -> None:
        """Raises when ``name`` cannot start now: from inside the holder's
        workload, or (``profiler``) needing the PyTorch profiler while the
        caller has one running (starting ours would end theirs and drop what
        it recorded)."""
        if self._holder == threading.get_ident():
            raise RuntimeError(f"{name} cannot run inside the workload of {self._holders}.")
        # the C flag is per thread; the Python one is set by any thread's
        # torch.profiler.profile
        if profiler and (torch.autograd._profiler_enabled() or torch.autograd.profiler._is_profiler_enabled):
            raise RuntimeError(f"{name} uses the PyTorch profiler, and one is already running.")

    @contextlib.contextmanager
    def hold(self, name: str, *, profiler: bool = False) -> Iterator[None]:
        self.check(name)
        with self._lock:
            # now that none of these measurements runs, a profiler is the caller's
            self.check(name, profiler=profiler)
            self._holder = threading.get_ident()
            try:
                yield
            finally:
                self._holder = None


# Allocator peaks and the profiler are process-wide.
_PEAK_MEMORY = _Exclusive("measure_peak_memory or profile_workload")


class NoMemoryEventsError(RuntimeError):
    """The CPU profiler recorded no tensor allocation during the workload.

    A ``RuntimeError``, as the reference raises; ``measure_workload`` reports
    it as an unavailable ``peak_memory``.
    """


# The reference's private name for the same class (contract 1.6).
_NoMemoryEventsError = NoMemoryEventsError


def _device(device: Any) -> torch.device:
    if isinstance(device, torch.device):
        return device
    if isinstance(device, str):
        # torch's own RuntimeError for a malformed string or a bad index
        # (contract: invalid CUDA indices raise RuntimeError).
        return torch.device(device)
    raise TypeError(f"device must be a str or torch.device, got {type(device).__name__}.")


def _require(namespace: Any, names: tuple[str, ...], backend: str) -> None:
    missing = [name for name in names if not callable(getattr(namespace, name, None))]
    if missing:
        raise NotImplementedError(f"{backend} peak memory needs {', '.join(missing)}, which this PyTorch lacks.")


def _cpu(workload: Callable[[], Any]) -> dict[str, str | int]:
    from torch.profiler import ProfilerActivity

    with quiet_profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        workload()
    # The event tree carries each allocation's address: a release of a tensor made before this call (in an
    # earlier profiling session) is matched to nothing and not subtracted.
    roots = prof.profiler.kineto_results.experimental_event_tree() if prof.profiler is not None else []
    peak = _engine.memory_peak(roots, torch._C._profiler._EventType.Allocation)
    if peak is None:
        raise NoMemoryEventsError("The PyTorch profiler recorded no CPU tensor allocation during the workload.")
    return {"device": "cpu", "metric": "pytorch_tensor_bytes", "baseline_bytes": 0, "peak_bytes": peak, "delta_bytes": peak}


def _cuda(workload: Callable[[], Any], dev: torch.device) -> dict[str, str | int]:
    if not torch.cuda.is_available():
        raise RuntimeError("CUDA is not available.")
    index = torch.cuda.current_device() if dev.index is None else dev.index
    if index < 0 or index >= torch.cuda.device_count():
        raise RuntimeError(f"CUDA device index {index} is out of range.")
    cuda = torch.cuda
    _require(
        cuda,
        ("synchronize", "memory_reserved", "reset_peak_memory_stats", "max_memory_reserved", "max_memory_allocated"),
        "CUDA",
    )
    target = torch.device("cuda", index)
    cuda.synchronize(target)
    baseline = int(cuda.memory_reserved(target))
    cuda.reset_peak_memory_stats(target)
    workload()
    cuda.synchronize(target)
    peak = int(cuda.max_memory_reserved(target))
    return {
        "device": f"cuda:{index}",
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "delta_bytes": peak - baseline,
        "allocated_peak_bytes": int(cuda.max_memory_allocated(target)),
    }


def _mps(workload: Callable[[], Any], dev: torch.device) -> dict[str, str | int]:
    if dev.index not in (None, 0):
        raise RuntimeError("MPS has a single device (index 0).")
    if not torch.backends.mps.is_available():
        raise RuntimeError("MPS is not available.")
    memory = getattr(getattr(torch, "accelerator", None), "memory", None)
    _require(
        memory,
        ("memory_reserved", "reset_peak_memory_stats", "max_memory_reserved", "max_memory_allocated"),
        "MPS",
    )
    _require(torch.mps, ("synchronize",), "MPS")
    assert memory is not None
    try:
        torch.mps.synchronize()
        baseline = int(memory.memory_reserved("mps"))
        memory.reset_peak_memory_stats("mps")
    except (RuntimeError, AttributeError) as error:
        raise NotImplementedError(f"MPS allocator statistics are not implemented: {error}") from error
    workload()
    torch.mps.synchronize()
    peak = int(memory.max_memory_reserved("mps"))
    return {
        "device": "mps",
        "metric": "pytorch_reserved_bytes",
        "baseline_bytes": baseline,
        "peak_bytes": peak,
        "delta_bytes": peak - baseline,
        "allocated_peak_bytes": int(memory.max_memory_allocated("mps")),
    }


def measure_peak_memory(workload: Callable[[], Any], *, device: str | torch.device) -> dict[str, str | int]:
    """Measure the peak PyTorch memory of one call of ``workload``.

    The workload is called exactly once; nothing is warmed up, repeated, moved
    or reset. Scope by backend:

    * ``cpu``: ``metric="pytorch_tensor_bytes"``, the largest number of bytes
      of CPU tensors allocated by the workload and alive at the same time, from
      the PyTorch profiler's allocation events (reduced in C). Tensors that
      existed before the call are not counted, so ``baseline_bytes`` is 0.
    * ``cuda[:N]``: ``metric="pytorch_reserved_bytes"`` from the caching
      allocator (``max_memory_reserved``), plus ``allocated_peak_bytes``.
    * ``mps``: the same keys from ``torch.accelerator.memory``.

    This is not process RSS and not total device memory.

    Args:
        workload: zero-argument callable, called once; its exceptions propagate.
        device: ``"cpu"``, ``"cuda[:N]"`` or ``"mps"`` (str or torch.device;
            keyword only, no default).

    Returns:
        a dict with ``device``, ``metric``, ``baseline_bytes``, ``peak_bytes``
        and ``delta_bytes`` (plus ``allocated_peak_bytes`` on CUDA and MPS).

    Raises:
        TypeError: non-callable workload or a device that is not a str or
            torch.device.
        RuntimeError: CUDA/MPS unavailable or a bad device index, or no CPU
            allocation was recorded; on cpu, a PyTorch profiler already
            running; a call from inside the workload of another
            measure_peak_memory or profile_workload (before the workload).
        NotImplementedError: another device type, or missing allocator APIs.
    """
    if not callable(workload):
        raise TypeError(f"workload must be callable, got {type(workload).__name__}.")
    dev = _device(device)
    if dev.type not in ("cpu", "cuda", "mps"):
        raise NotImplementedError(f"Peak memory is not supported on device type {dev.type!r}.")
    with _PEAK_MEMORY.hold("measure_peak_memory", profiler=dev.type == "cpu"):
        if dev.type == "cpu":
            return _cpu(workload)
        if dev.type == "cuda":
            return _cuda(workload, dev)
        return _mps(workload, dev)
