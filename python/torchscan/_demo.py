"""The command line of the Python package: ``demo`` and ``summary``.

``python -m torchscan demo`` analyses two built-in example models (a small CNN
called with a generated input, and a small transformer text model called with
``args`` and ``kwargs``), prints their tables and writes ``report.json``.
``python -m torchscan summary PACKAGE.MODULE:FACTORY --input-shape 3,224,224``
analyses a model returned by a factory of the caller's.

Exit status: 0 on success; 1 when the model, its factory or a file fails;
2 on bad arguments (checked before any model runs, except a ``--max-depth``
deeper than the model); 3 with ``--strict`` when a metric is incomplete (the
report is still written to ``--json``).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import tempfile
from typing import Any

import torch
from torch import nn

from . import _engine
from .crawler import crawl_module, summary
from .report import IncompleteAnalysisError


class DemoCNN(nn.Module):
    """A small image classifier: two conv blocks and a linear head."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(32, classes))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(images))


class DemoTextModel(nn.Module):
    """A small transformer encoder called as ``model(input_ids, attention_mask=mask)``."""

    def __init__(self, vocab: int = 100, width: int = 32, heads: int = 4, classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.ReLU(), nn.Linear(4 * width, width))
        self.norm2 = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, input_ids: torch.Tensor, *, attention_mask: torch.Tensor) -> torch.Tensor:
        x = self.embed(input_ids)
        attended, _ = self.attention(x, x, x, key_padding_mask=~attention_mask, need_weights=False)
        x = self.norm1(x + attended)
        x = self.norm2(x + self.mlp(x))
        return self.head(x[:, 0])


EXIT_ERROR = 1  # the model, its factory or a file failed
EXIT_USAGE = 2  # bad arguments (argparse's code too)
EXIT_INCOMPLETE = 3  # --strict and a metric is not complete


class _Failed(Exception):
    """A CLI error: printed as ``torchscan: message``, exits with ``code``."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def _json_path(text: str) -> str:
    """argparse type of --json: a non-empty path."""
    if not text:
        raise argparse.ArgumentTypeError("needs a file path")
    return text


def _check_output_path(path: str | None) -> None:
    """Refuses, before any model runs, a --json path that cannot be written."""
    if path is None:
        return
    real = os.path.realpath(path)  # through symbolic links
    parent = os.path.dirname(real)
    if os.path.isdir(real):
        raise _Failed(f"--json {path} is a directory", EXIT_USAGE)
    if os.path.exists(real):
        if not os.access(real, os.W_OK):
            raise _Failed(f"--json {path}: the file is not writable", EXIT_USAGE)
    elif not os.path.isdir(parent):
        raise _Failed(f"--json {path}: no directory {parent}", EXIT_USAGE)
    elif not os.access(parent, os.W_OK | os.X_OK):
        raise _Failed(f"--json {path}: cannot write in {parent}", EXIT_USAGE)


def _dump(value: Any, handle: Any) -> None:
    json.dump(value, handle, indent=2, allow_nan=False)


def _write_json(path: str, value: Any) -> None:
    """Writes ``value`` to ``path`` (through symbolic links). A regular file
    is replaced whole or not at all, keeping its permissions: the text goes
    to a temporary file beside it first. Anything else (a device, a pipe) is
    written to directly."""
    real = os.path.realpath(path)
    try:
        if os.path.exists(real) and not os.path.isfile(real):
            with open(real, "w", encoding="utf-8") as handle:
                _dump(value, handle)
            return
        mode = os.stat(real).st_mode & 0o7777 if os.path.exists(real) else None
        if mode is None:
            umask = os.umask(0)  # the command line is single-threaded
            os.umask(umask)
            mode = 0o666 & ~umask
        fd, tmp = tempfile.mkstemp(prefix=".ts-", suffix=".tmp", dir=os.path.dirname(real))
    except OSError as error:
        raise _Failed(f"cannot write {path}: {error.strerror or error}", EXIT_ERROR) from error
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            _dump(value, handle)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise _Failed(f"cannot write {path}: {error.strerror or error}", EXIT_ERROR) from error
        raise


def _demo(args: argparse.Namespace) -> int:
    _check_output_path(args.json)
    torch.manual_seed(0)
    print("== DemoCNN, input_shape=(3, 32, 32) ==")
    cnn = summary(DemoCNN(), (3, 32, 32))
    print()
    print("== DemoTextModel, args=(input_ids,), kwargs={'attention_mask': mask} ==")
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 8:] = False
    text = summary(DemoTextModel(), args=(ids,), kwargs={"attention_mask": mask})
    _write_json(args.json, {"cnn": cnn, "text_model": text})
    print(f"\nWrote both reports to {args.json}")
    return 0


def _input_shape(text: str) -> tuple[int, ...]:
    """argparse type of --input-shape: comma-separated positive integers."""
    parts = text.split(",")
    if not text or any(not (part.strip().isascii() and part.strip().isdigit()) for part in parts):
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of positive integers")
    shape = tuple(int(part) for part in parts)
    numel = 1
    for dim in shape:
        numel *= dim
    if 0 in shape or numel >= 2**63:
        raise argparse.ArgumentTypeError(f"{text!r} needs positive sizes whose product fits 64 bits")
    return shape


def _max_depth(text: str) -> int:
    """argparse type of --max-depth: a non-negative integer."""
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a non-negative integer")
    return int(text)


def _load_factory(spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or module_name.startswith(".") or not attr:
        raise _Failed(f"MODEL must look like package.module:factory, got {spec!r}", EXIT_USAGE)
    try:
        factory = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as error:
        raise _Failed(f"cannot load {spec}: {error}", EXIT_ERROR) from error
    model = factory() if callable(factory) and not isinstance(factory, nn.Module) else factory
    if not isinstance(model, nn.Module):
        raise _Failed(f"{spec} did not return a torch.nn.Module", EXIT_ERROR)
    return model


def _summary(args: argparse.Namespace) -> int:
    _check_output_path(args.json)
    model = _load_factory(args.model)
    input_shape: Any = args.input_shape[0] if len(args.input_shape) == 1 else args.input_shape
    code = 0
    try:
        report = crawl_module(model, input_shape, mode=args.mode, strict=args.strict)
    except IncompleteAnalysisError as error:
        print(f"torchscan: {error}", file=sys.stderr)
        report, code = error.report, EXIT_INCOMPLETE
    # the report is saved before the table, whose --max-depth may be refused
    if args.json:
        _write_json(args.json, report)
    try:
        table = _engine.format_summary(report, "mid", False, False, -1 if args.max_depth is None else args.max_depth)
    except ValueError as error:
        raise _Failed(f"--max-depth {args.max_depth}: {error}", EXIT_USAGE) from error
    if code == 0:
        print(table)
    return code


def main(argv: list[str] | None = None) -> int:
    """Runs the command line; returns its exit status (see the EXIT_* codes)."""
    parser = argparse.ArgumentParser(prog="python -m torchscan", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="analyse the built-in example models")
    demo.add_argument(
        "--json", default="report.json", type=_json_path, help="where to write the reports (default report.json)"
    )
    summ = sub.add_parser("summary", help="analyse a model from PACKAGE.MODULE:FACTORY")
    summ.add_argument("model", help="import path of a factory returning an nn.Module")
    summ.add_argument(
        "--input-shape",
        action="append",
        required=True,
        type=_input_shape,
        help="e.g. 3,224,224 (repeat for several inputs)",
    )
    summ.add_argument("--json", type=_json_path, help="write the report to this file")
    summ.add_argument("--strict", action="store_true", help=f"exit {EXIT_INCOMPLETE} when any metric is incomplete")
    summ.add_argument("--max-depth", type=_max_depth, default=None, help="print rows up to this depth")
    summ.add_argument("--mode", choices=("full", "structure"), default="full")
    args = parser.parse_args(argv)
    try:
        return _demo(args) if args.command == "demo" else _summary(args)
    except _Failed as error:
        print(f"torchscan: {error}", file=sys.stderr)
        return error.code
