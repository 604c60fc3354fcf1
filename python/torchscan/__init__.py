"""TorchScan: inspect and measure PyTorch models with a C engine.

Every number carries a status (``complete``, ``partial`` lower bound, or
``unavailable``); an unsupported operation is never a silent zero.
"""

from importlib.metadata import PackageNotFoundError, version

from . import _engine  # noqa: F401  (the C engine)
from . import crawler, modules, process, utils
from .benchmark import BenchmarkReport, measure_latency
from .benchmark_compare import BenchmarkComparison, compare_benchmarks
from .checkpoint import format_checkpoint, inspect_checkpoint, match_checkpoint
from .compare import ReportDiff, compare_reports
from .crawler import crawl_module, summary
from .extensions import ModuleCall, ModuleEstimates, ModuleHandler
from .flops import FlopReport, measure_flops
from .gather import GatheredReport, gather_reports
from .planning import MemoryReport, estimate_memory
from .profiler import ProfileReport, profile_workload
from .render import render_report
from .report import (
    AnalysisReport,
    Diagnostic,
    IncompleteAnalysisError,
    LayerReport,
    MetricResult,
    metric_result,
)
from .workload import measure_workload

try:
    __version__ = version("torchscan")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "unknown"

__all__ = [
    "AnalysisReport",
    "BenchmarkComparison",
    "BenchmarkReport",
    "Diagnostic",
    "FlopReport",
    "GatheredReport",
    "IncompleteAnalysisError",
    "LayerReport",
    "MemoryReport",
    "MetricResult",
    "ModuleCall",
    "ModuleEstimates",
    "ModuleHandler",
    "ProfileReport",
    "ReportDiff",
    "compare_benchmarks",
    "compare_reports",
    "crawl_module",
    "crawler",
    "estimate_memory",
    "format_checkpoint",
    "gather_reports",
    "inspect_checkpoint",
    "measure_flops",
    "measure_latency",
    "match_checkpoint",
    "measure_workload",
    "metric_result",
    "modules",
    "process",
    "profile_workload",
    "render_report",
    "summary",
    "utils",
]
