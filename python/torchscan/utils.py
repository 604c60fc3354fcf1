"""Summary-table helpers of TorchScan 0.2.0's ``torchscan.utils``, with its signatures, and ``format_report``.

Every text here is written by the engine's C table code (``src/core/table.c`` and ``src/core/table_text.c``), the
code of :func:`torchscan.summary` and of the ``torchscan table`` command: ``format_info`` and ``format_report`` are
the summary table, ``aggregate_info`` a report view limited in depth, and the small helpers (``format_name``,
``wrap_string``, ``unit_scale``, ``format_s``, ``format_line_str``) 0.2.0's results for one name, value or row, by the
same rules the table applies to whole reports. Python only checks the arguments.
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from . import _engine
from .report import AnalysisReport, LayerReport, _check_flag

__all__ = [
    "aggregate_info",
    "format_info",
    "format_line_str",
    "format_name",
    "format_report",
    "format_s",
    "unit_scale",
    "wrap_string",
]

_WRAP_MODES = ("mid", "end", None)


def _check_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}.")


def _check_count(name: str, value: object, *, optional: bool = False) -> None:
    """An int >= 0 (bools refused), or None when ``optional``."""
    if value is None and optional:
        return
    if type(value) is not int:
        expected = "an int or None" if optional else "an int"
        raise TypeError(f"{name} must be {expected}, got {type(value).__name__}.")
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}.")


def _check_wrap_mode(name: str, value: object) -> None:
    if not (value is None or (isinstance(value, str) and value in _WRAP_MODES)):
        raise ValueError(f"{name} must be 'mid', 'end' or None, got {value!r}.")


def format_name(name: str, depth: int = 0) -> str:
    """``name`` as the summary table's Layer column shows it at ``depth`` (tree marks before nested names).

    Args:
        name: the layer name (a str).
        depth: its depth in the module tree, an int >= 0 (default 0: the root, shown as is).

    Returns:
        the text of the Layer cell.

    Raises:
        TypeError: ``name`` not a str, ``depth`` not an int (bools refused).
        ValueError: a negative ``depth``.
    """
    _check_str("name", name)
    _check_count("depth", depth)
    return _engine.format_name(name, depth)  # type: ignore[no-any-return]


def wrap_string(s: str, max_len: int, delimiter: str = ".", wrap: str = "[...]", mode: str = "end") -> str:
    """``s`` shortened to ``max_len`` characters when longer.

    ``mode`` "end" keeps the head and appends ``wrap``; "mid" keeps the head and ends with ``wrap``, a dot and the
    last ``delimiter``-separated part; None keeps ``s`` whole. Any other mode raises ValueError when ``s`` needs
    shortening (as in TorchScan 0.2.0; a short ``s`` is returned whatever the mode).

    Args:
        s: the text (a str).
        max_len: the most characters to keep, an int >= 0.
        delimiter: separator of the last part kept by "mid" (a non-empty str, default ".").
        wrap: the marker of the cut (a str, default "[...]").
        mode: "end" (default), "mid" or None.

    Returns:
        ``s`` itself when it fits or ``mode`` is None, else the shortened text.

    Raises:
        TypeError: ``s``, ``delimiter`` or ``wrap`` not a str, ``max_len`` not an int (bools refused), ``mode``
            neither a str nor None.
        ValueError: a negative ``max_len``, an empty ``delimiter``, or an unknown ``mode`` when ``s`` needs
            shortening.
    """
    _check_str("s", s)
    _check_count("max_len", max_len)
    _check_str("delimiter", delimiter)
    if not delimiter:
        raise ValueError("delimiter must be a non-empty str.")
    _check_str("wrap", wrap)
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"mode must be a str or None, got {type(mode).__name__}.")
    return _engine.wrap_string(s, max_len, delimiter, wrap, mode)  # type: ignore[no-any-return]


def unit_scale(val: float) -> tuple[float, str]:
    """``val`` scaled to the largest SI prefix (k, M, G, T) it reaches, with that prefix ("" below 1000).

    Args:
        val: the number (an int or a float; negative numbers and NaN are returned unscaled, as in 0.2.0).

    Returns:
        ``(scaled value, prefix)``.

    Raises:
        TypeError: ``val`` not a real number (bools refused).
    """
    if isinstance(val, bool) or not isinstance(val, numbers.Real):
        raise TypeError(f"val must be an int or a float, got {type(val).__name__}.")
    return _engine.unit_scale(val)  # type: ignore[no-any-return]


def format_s(f_string: str, min_w: int | None = None, max_w: int | None = None) -> str:
    """``f_string`` left-aligned and padded to ``min_w``, then cut to ``max_w`` characters.

    Args:
        f_string: the cell text (a str).
        min_w: the width to pad to, an int >= 0 or None (default: no padding).
        max_w: the most characters to keep, an int >= 0 or None (default: no cut).

    Returns:
        the padded and cut text.

    Raises:
        TypeError: ``f_string`` not a str, a width that is neither an int nor None (bools refused).
        ValueError: a negative width.
    """
    _check_str("f_string", f_string)
    _check_count("min_w", min_w, optional=True)
    _check_count("max_w", max_w, optional=True)
    return _engine.format_s(  # type: ignore[no-any-return]
        f_string, -1 if min_w is None else min_w, -1 if max_w is None else max_w
    )


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

    Args:
        layer: one entry of an AnalysisReport's ``layers`` (a mapping).
        col_w: None (default) or a list of 8 widths, each an int >= 0 or None.
        wrap_mode: how long layer names are shortened: "mid" (default), "end" or None.
        receptive_field: add the receptive-field cell (a bool; 0 and 1 accepted; default False).
        effective_rf_stats: add the effective stride and padding cells too (a bool; default False).

    Returns:
        the list of cell texts.

    Raises:
        TypeError: ``layer`` not a mapping, ``col_w`` not a sequence of 8 ints >= 0 or None, ``wrap_mode``
            neither a str nor None, a flag that is not a bool.
        ValueError: a negative width, a ``col_w`` that does not have 8 entries, an unknown ``wrap_mode`` when
            the name needs shortening (as :func:`wrap_string`), a layer without the fields its row shows (``name``,
            ``type``, an int ``depth`` >= 0, ``output``, ``parameters``, ``buffers``, ``metrics``) or holding
            non-JSON data.
    """
    if not isinstance(layer, Mapping):
        raise TypeError(f"layer must be a layer dict of an AnalysisReport, got {type(layer).__name__}.")
    if col_w is not None:
        if isinstance(col_w, (str, bytes)) or not isinstance(col_w, Sequence):
            raise TypeError(f"col_w must be a list of 8 widths or None, got {type(col_w).__name__}.")
        if len(col_w) != 8:
            raise ValueError(f"col_w must have 8 widths, got {len(col_w)}.")
        for width in col_w:
            _check_count("every col_w width", width, optional=True)
    if wrap_mode is not None and not isinstance(wrap_mode, str):
        raise TypeError(f"wrap_mode must be a str or None, got {type(wrap_mode).__name__}.")
    receptive_field = _check_flag("receptive_field", receptive_field)
    effective_rf_stats = _check_flag("effective_rf_stats", effective_rf_stats)
    widths = (-1,) * 8 if col_w is None else tuple(-1 if width is None else width for width in col_w)
    return _engine.format_line(  # type: ignore[no-any-return]
        layer if isinstance(layer, dict) else dict(layer), widths, wrap_mode, receptive_field, effective_rf_stats
    )


def format_info(
    module_info: AnalysisReport,
    wrap_mode: str = "mid",
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str:
    """The summary table of an AnalysisReport (what :func:`torchscan.summary` prints), formatted in C.

    ``wrap_mode`` is "mid", "end" or None (any other value raises ValueError); ``receptive_field`` adds the
    receptive-field column and ``effective_rf_stats`` the effective stride and padding columns.

    Args:
        module_info: the AnalysisReport (from :func:`torchscan.crawl_module`).
        wrap_mode: "mid" (default), "end" or None.
        receptive_field: add the receptive-field column (a bool; 0 and 1 accepted; default False).
        effective_rf_stats: add the effective stride and padding columns (a bool; default False).

    Returns:
        the table text.

    Raises:
        TypeError: a flag that is not a bool.
        ValueError: an unknown ``wrap_mode``, or ``module_info`` that is not a valid AnalysisReport.
    """
    _check_wrap_mode("wrap_mode", wrap_mode)
    receptive_field = _check_flag("receptive_field", receptive_field)
    effective_rf_stats = _check_flag("effective_rf_stats", effective_rf_stats)
    return _engine.format_summary(
        module_info, wrap_mode=wrap_mode, receptive_field=receptive_field, effective_rf_stats=effective_rf_stats
    )


def aggregate_info(info: AnalysisReport, max_depth: int) -> AnalysisReport:
    """A deep copy of the report whose ``layers`` keep only the rows of depth ``max_depth`` or less.

    Totals and diagnostics are unchanged. A negative ``max_depth`` raises ValueError, and so does a depth that no
    layer of a non-empty report has. The rows are selected in C, by the code that limits the summary table's
    depth; the copy is the report's JSON data read back (a report holds nothing else).

    Args:
        info: the AnalysisReport (a mapping with a ``layers`` list).
        max_depth: the deepest layer depth to keep, an int >= 0.

    Returns:
        the limited deep copy (``info`` itself is not modified).

    Raises:
        TypeError: ``info`` not a mapping with a ``layers`` list, ``max_depth`` not an int (bools refused).
        ValueError: a negative ``max_depth`` or one that no layer has, a layer without an int ``depth``, or
            data that is not JSON (NaN, non-str keys, ...).
    """
    if not isinstance(info, Mapping) or not isinstance(info.get("layers"), list):
        raise TypeError("info must be an AnalysisReport (a mapping with a 'layers' list).")
    if type(max_depth) is not int:
        raise TypeError(f"max_depth must be an int, got {type(max_depth).__name__}.")
    if max_depth < 0:
        raise ValueError("max_depth must be non-negative.")
    return _engine.limit_depth(info if isinstance(info, dict) else dict(info), max_depth)  # type: ignore[no-any-return]


def format_report(
    report: AnalysisReport,
    *,
    max_depth: int | None = None,
    wrap_mode: str | None = "mid",
    receptive_field: bool = False,
    effective_rf_stats: bool = False,
) -> str:
    """The summary table of a saved AnalysisReport, checked first: what ``torchscan table REPORT.json`` prints.

    For a report read back from JSON (``json.load``): the report is checked whole by the engine's report check
    (the one of :func:`torchscan.compare_reports` and of the ``torchscan table`` command), then formatted by the
    C table that :func:`torchscan.summary` prints, with ``max_depth`` applied as ``summary`` applies it. So
    ``print(format_report(json.load(f)))`` prints what ``summary`` printed when the report was made, and what
    ``torchscan table`` prints for the file with the same options (``--max-depth N``, ``--wrap mid|end|none``).

    Args:
        report: the AnalysisReport (from :func:`torchscan.crawl_module`, or read back from JSON).
        max_depth: the deepest rows printed, an int >= 0 or None (default: all).
        wrap_mode: how long layer names are shortened: "mid" (default), "end" or None.
        receptive_field: add the receptive-field column (a bool; 0 and 1 accepted; default False).
        effective_rf_stats: add the effective stride and padding columns too (a bool; default False).

    Returns:
        the table text (no trailing newline).

    Raises:
        TypeError: ``max_depth`` neither an int nor None (bools refused), a flag that is not a bool.
        ValueError: an unknown ``wrap_mode``, a negative ``max_depth`` or one deeper than the model, data that is
            not JSON, or a report the report check refuses (the message names where, as
            ``report: layers[1].metrics.macs.status: expected 'complete', 'partial' or 'unavailable', got 'x'``).
    """
    _check_wrap_mode("wrap_mode", wrap_mode)
    if max_depth is not None:
        if type(max_depth) is not int:
            raise TypeError(f"max_depth must be an int or None, got {type(max_depth).__name__}.")
        if max_depth < 0:
            raise ValueError("max_depth must be non-negative.")
    receptive_field = _check_flag("receptive_field", receptive_field)
    effective_rf_stats = _check_flag("effective_rf_stats", effective_rf_stats)
    return _engine.format_report(  # type: ignore[no-any-return]
        report, wrap_mode, receptive_field, effective_rf_stats, -1 if max_depth is None else max_depth
    )
