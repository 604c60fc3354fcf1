"""Checkpoint inspection: what a weights file holds, read in C, nothing imported or executed.

``inspect_checkpoint`` reads safetensors files (and sharded checkpoints through their
``model.safetensors.index.json``), PyTorch checkpoints written by ``torch.save`` (the zip format and the
legacy one) and GGUF files. ``match_checkpoint`` says whether a checkpoint's tensors fit a model, and
``format_checkpoint`` gives the table ``torchscan inspect`` prints. The readers, the report and the matching
are the engine's (``include/torchscan/checkpoint.h``); these functions only convert.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from . import _engine

__all__ = ["format_checkpoint", "inspect_checkpoint", "match_checkpoint"]


def inspect_checkpoint(path: str | bytes | os.PathLike[str] | os.PathLike[bytes]) -> dict[str, Any]:
    """Read a checkpoint file's headers and return its report, without PyTorch and without executing anything.

    The format is recognised from the file's first bytes: safetensors, a sharded safetensors index
    (``model.safetensors.index.json``, whose shards are read from the same folder), a ``torch.save`` file
    (zip or legacy) or GGUF (v2, v3). A pickle is read by a symbolic machine: every global it names is
    reported (``globals``) and checked against the globals ``torch.load(weights_only=True)`` allows in
    torch 2.13; one outside that list gets a ``checkpoint_unsafe_global`` diagnostic and is never imported
    or called. Only headers are read, never the tensors' data.

    The report (``report_type`` ``"checkpoint"``, ``schema_version`` 1): ``format``, ``files`` (base names,
    sizes, header bytes, tensors per file or shard), ``metadata``, ``tensors`` (name, dtype, shape,
    elements, bytes, file, offset; storage, storage_offset and stride for pickle formats), ``storages`` and
    ``shared`` (tied weights and views), ``modules`` (the tensors per module prefix, a tree in preorder),
    ``dtypes`` (elements and bytes per dtype), ``globals``, ``totals`` (MetricResults: tensors, elements,
    tensor_bytes, stored_bytes, file_bytes; ``partial`` when something was not understood) and
    ``diagnostics``. ``docs/checkpoints.md`` describes every field.

    Args:
        path: the file (a str, bytes or path-like).

    Returns:
        the report, a dict (JSON-serializable).

    Raises:
        OSError: the file cannot be opened or read.
        ValueError: the file is truncated, malformed or of no format above; the message names the file and
            where (a byte offset, an entry, a tensor).
    """
    return _engine.inspect_checkpoint(os.fspath(path))


def format_checkpoint(report: Mapping[str, Any], *, max_depth: int | None = None) -> str:
    """The text table of a checkpoint report, as ``torchscan inspect`` prints it.

    Args:
        report: a report from ``inspect_checkpoint`` (or read back from ``torchscan inspect --json``).
        max_depth: print module prefixes up to this depth (0: the whole checkpoint only); None for all.

    Returns:
        the table, a str.

    Raises:
        ValueError: ``report`` is not a checkpoint report, or ``max_depth`` is negative.
        TypeError: ``max_depth`` is not an int.
    """
    if max_depth is not None and (not isinstance(max_depth, int) or isinstance(max_depth, bool)):
        raise TypeError(f"max_depth must be an int or None, got {type(max_depth).__name__}")
    if max_depth is not None and max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    return _engine.format_checkpoint(report, -1 if max_depth is None else max_depth)


def match_checkpoint(
    checkpoint: str | os.PathLike[str] | Mapping[str, Any], against: Mapping[str, Any]
) -> dict[str, Any]:
    """Do a checkpoint's tensors match a model? Missing, unexpected and mismatched-shape entries.

    ``against`` is what the model expects:

    - another checkpoint report (of the model's own checkpoint), or a state dict described as
      ``{"report_type": "state_dict", "tensors": [{"name": ..., "shape": [...], "dtype": ...}]}``:
      matched name by name (``level`` ``"tensor"``);
    - an AnalysisReport (``crawl_module``): it holds no parameter names, so it is matched module by module
      (``level`` ``"module"``): each layer path's parameters and buffers (its rows and the rows under it)
      against the checkpoint's elements under that prefix. Non-persistent buffers are in the report and not
      in a state dict, and a module that was not called has no row.

    Args:
        checkpoint: a checkpoint file (inspected first) or its report.
        against: the expectation, as above.

    Returns:
        ``{"report_type": "checkpoint_match", "schema_version": 1, "level", "matches": bool, "matched": N,
        "missing": [...], "unexpected": [...], "mismatched": [...]}``: tensor entries hold ``name``,
        ``shape``/``dtype`` (the checkpoint's) and ``expected_shape``/``expected_dtype``; module entries
        ``path``, ``elements`` and ``expected_elements``.

    Raises:
        OSError, ValueError: as ``inspect_checkpoint`` for a file; ValueError for a report or an
            expectation of another shape.
    """
    if isinstance(checkpoint, (str, bytes, os.PathLike)):
        checkpoint = inspect_checkpoint(checkpoint)
    return _engine.match_checkpoint(checkpoint, against)
