"""Process-level measurements: PyTorch peak memory of a workload."""

from .memory import measure_peak_memory

__all__ = ["measure_peak_memory"]
