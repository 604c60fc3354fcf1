"""Process-level measurements: PyTorch peak memory of a workload, peak RSS of a command."""

from .memory import NoMemoryEventsError, measure_peak_memory
from .rss import measure_peak_rss

__all__ = ["NoMemoryEventsError", "measure_peak_memory", "measure_peak_rss"]
