"""Summary-table helpers of TorchScan 0.2.0's ``torchscan.utils``, with its signatures.

``format_info`` is the C summary table (``src/core/table.c``, the text of :func:`torchscan.summary`).
``aggregate_info`` returns a report view limited in depth. The small text helpers (``format_name``,
``wrap_string``, ``unit_scale``, ``format_s``, ``format_line_str``) give 0.2.0's results for one name, value or
row; the table's C code applies the same rules to whole reports.
"""

from __future__ import annotations

import copy
from typing import Any

from . import _engine
from .report import AnalysisReport, LayerReport, MetricResult

__all__ = ["aggregate_info", "format_info", "format_line_str", "format_name", "format_s", "unit_scale", "wrap_string"]

_WRAP = "[...]"


def format_name(name: str, depth: int = 0) -> str:
    """``name`` as the summary table's Layer column shows it at ``depth`` (tree marks before nested names)."""
    if depth == 0:
        return name
    if depth == 1:
        return "├─" + name
    return "|    " * (depth - 1) + "└─" + name


def wrap_string(s: str, max_len: int, delimiter: str = ".", wrap: str = "[...]", mode: str = "end") -> str:
    """``s`` shortened to ``max_len`` characters when longer.

    ``mode`` "end" keeps the head and appends ``wrap``; "mid" keeps the head and ends with ``wrap``, a dot and the
    last ``delimiter``-separated part; None keeps ``s`` whole. Any other mode raises ValueError when ``s`` needs
    shortening.
    """
    if mode is None or len(s) <= max_len:
        return s
    if mode == "end":
        tail = wrap
    elif mode == "mid":
        tail = wrap + "." + s.rpartition(delimiter)[2]
    else:
        raise ValueError("received an unexpected value of argument `mode`")
    return s[: max_len - len(tail)] + tail


def unit_scale(val: float) -> tuple[float, str]:
    """``val`` scaled to the largest SI prefix (k, M, G, T) it reaches, with that prefix ("" below 1000)."""
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if val // factor > 0:
            return val / factor, prefix
    return val, ""


def format_s(f_string: str, min_w: int | None = None, max_w: int | None = None) -> str:
    """``f_string`` left-aligned and padded to ``min_w``, then cut to ``max_w`` characters (each when an int)."""
    if isinstance(min_w, int):
        f_string = f_string.ljust(min_w)
    if isinstance(max_w, int):
        f_string = f_string[:max_w]
    return f_string


def _shape_text(meta: dict[str, Any]) -> str:
    kind = meta.get("kind")
    if kind == "tensor":
        return str(tuple(meta["shape"]))
    if kind == "tuple":
        return "(" + ", ".join(_shape_text(item) for item in meta["items"]) + ")"
    if kind == "list":
        return "[" + ", ".join(_shape_text(item) for item in meta["items"]) + "]"
    if kind == "mapping":
        return "{" + ", ".join(_shape_text(item["value"]) for item in meta["items"]) + "}"
    return str(kind)


def _shown(result: MetricResult | None) -> str:
    if result is None:
        return "?"
    value = result["value"] if result["status"] == "complete" else result["known_value"]
    return "?" if value is None else f"{value:.0f}"


def format_line_str(
    layer: LayerReport,
    col_w: list[int | None] | None = None,
    wrap_mode: str = "mid",
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> list[str]:
    """The cells of one layer's row of the summary table.

    ``col_w`` holds the widths of the eight columns (None: no padding or cut; the layer name then wraps at 100
    characters). The receptive-field cells come only with ``receptive_field``, the stride and padding cells only
    with ``effective_rf_stats`` as well.
    """
    widths: list[int | None] = list(col_w) if col_w is not None else [None] * 8
    name_len = widths[0] + 3 if isinstance(widths[0], int) else 100
    shape_len = widths[2] if isinstance(widths[2], int) else 100
    params = layer["parameters"]
    trainable, frozen = int(params["trainable"]), int(params["frozen"])
    total = trainable + frozen + int(layer["buffers"]["elements"])
    cells = [
        wrap_string(format_name(layer["name"], layer["depth"]), name_len, mode=wrap_mode),
        layer["type"],
        wrap_string(_shape_text(layer["output"]), shape_len, mode="end"),
        f"{total:,}",
        "-" if trainable + frozen == 0 else str(trainable > 0),
    ]
    if receptive_field:
        metrics = layer["metrics"]
        keys = ["receptive_field"] + (["effective_stride", "effective_padding"] if effective_rf_stats else [])
        cells.extend(_shown(metrics.get(key)) for key in keys)
    return [format_s(cell, width, width) for cell, width in zip(cells, widths, strict=False)]


def format_info(
    module_info: AnalysisReport,
    wrap_mode: str = "mid",
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str:
    """The summary table of an AnalysisReport (what :func:`torchscan.summary` prints), formatted in C.

    ``wrap_mode`` is "mid", "end" or None (any other value raises ValueError); ``receptive_field`` adds the
    receptive-field column and ``effective_rf_stats`` the effective stride and padding columns.
    """
    return _engine.format_summary(
        module_info, wrap_mode=wrap_mode, receptive_field=receptive_field, effective_rf_stats=effective_rf_stats
    )


def aggregate_info(info: AnalysisReport, max_depth: int) -> AnalysisReport:
    """A deep copy of the report whose ``layers`` keep only the rows of depth ``max_depth`` or less.

    Totals and diagnostics are unchanged. A negative ``max_depth`` raises ValueError, and so does a depth that no
    layer of a non-empty report has.
    """
    if max_depth < 0:
        raise ValueError("max_depth must be non-negative.")
    layers = info["layers"]
    if layers and all(layer["depth"] != max_depth for layer in layers):
        raise ValueError("The `max_depth` argument cannot be higher than module depth.")
    view = dict(info)
    view["layers"] = [layer for layer in layers if layer["depth"] <= max_depth]
    return copy.deepcopy(view)  # type: ignore[return-value]
