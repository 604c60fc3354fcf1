"""The command line of the Python package: ``demo`` and ``summary``.

``python -m torchscan demo`` analyses two built-in example models (a small CNN
called with a generated input, and a small transformer text model called with
``args`` and ``kwargs``), prints their tables, writes ``report.json`` and the
offline pages ``report.html`` (the CNN) and ``report.text_model.html``.
``python -m torchscan summary PACKAGE.MODULE:FACTORY --input-shape 3,224,224``
analyses a model returned by a factory of the caller's: with generated inputs
(``--input-shape``, repeated for several inputs, with ``--dtype`` and
``--device``), or with the positional and keyword inputs of a JSON spec
(``--inputs-json FILE``, see ``_INPUTS_JSON_HELP``).

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
import math
import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from . import _engine
from .crawler import _model_defaults, _target_device, crawl_module, summary
from .render import render_report
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
    """Writes ``value`` as JSON to ``path`` (see _write_file)."""
    _write_file(path, lambda handle: _dump(value, handle))


def _write_file(path: str, write: Callable[[Any], None]) -> None:
    """Writes a text file through ``write(handle)`` to ``path`` (through
    symbolic links). A regular file is replaced whole or not at all, keeping
    its permissions: the text goes to a temporary file beside it first.
    Anything else (a device, a pipe) is written to directly."""
    real = os.path.realpath(path)
    try:
        if os.path.exists(real) and not os.path.isfile(real):
            with open(real, "w", encoding="utf-8") as handle:
                write(handle)
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
            write(handle)
        os.chmod(tmp, mode)
        os.replace(tmp, real)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(error, OSError):
            raise _Failed(f"cannot write {path}: {error.strerror or error}", EXIT_ERROR) from error
        raise


def _beside(path: str, name: str) -> str:
    """report.html, text_model -> report.text_model.html"""
    stem, suffix = os.path.splitext(path)
    return f"{stem}.{name}{suffix or '.html'}"


def _demo(args: argparse.Namespace) -> int:
    _check_output_path(args.json)
    _check_output_path(args.html)
    _check_output_path(_beside(args.html, "text_model"))
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
    pages = {args.html: ("DemoCNN", cnn), _beside(args.html, "text_model"): ("DemoTextModel", text)}
    for path, (title, report) in pages.items():
        page = render_report(report, title=f"{title} (python -m torchscan demo)")
        _write_file(path, lambda handle, page=page: handle.write(page))
    print(f"\nWrote both reports to {args.json}")
    print(f"Open the offline pages in a browser: {' and '.join(os.path.abspath(path) for path in pages)}")
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


def _dtype(text: str) -> torch.dtype:
    """argparse type of --dtype: a torch dtype name (float32, torch.float16, bfloat16, int64, bool, ...)."""
    name = text[len("torch.") :] if text.startswith("torch.") else text
    value = getattr(torch, name, None) if name.isidentifier() else None
    if not isinstance(value, torch.dtype):
        raise argparse.ArgumentTypeError(f"{text!r} is not a torch dtype such as float32, float16, int64 or bool")
    return value


def _device_name(text: str) -> str:
    """argparse type of --device: a device name PyTorch can parse (cpu, cuda, cuda:1, mps, meta, ...);
    whether this process can use it is checked before the model is imported."""
    try:
        torch.device(text)
    except RuntimeError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a device name such as cpu, cuda:0 or meta") from None
    return text


_FILLS = ("zeros", "ones", "rand", "randn", "randint")

_INPUTS_JSON_HELP = (
    'a JSON file (- for stdin) of the call\'s inputs: {"args": [SPEC, ...], "kwargs": {"name": SPEC, ...}}. '
    'A SPEC is a tensor, {"shape": [1, 3, 224, 224], "dtype": "float32", "fill": "rand"} (the whole shape: no '
    'batch dimension is added; dtype defaults to --dtype, else the model\'s; fill is zeros, ones, rand, randn or '
    'randint with "high": N, by default ones for bool, zeros for integers, rand otherwise), or a JSON null, '
    "bool, number or string passed as it is"
)


class _TensorSpec:
    """One generated input of --inputs-json, checked; built once the model is loaded."""

    def __init__(self, shape: tuple[int, ...], dtype: torch.dtype | None, fill: str | None, high: int | None) -> None:
        self.shape, self.dtype, self.fill, self.high = shape, dtype, fill, high

    def build(self, default_dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        dtype = self.dtype or default_dtype
        fill = self.fill or ("ones" if dtype == torch.bool else "rand" if _is_real(dtype) else "zeros")
        if fill == "zeros":
            return torch.zeros(self.shape, dtype=dtype, device=device)
        if fill == "ones":
            return torch.ones(self.shape, dtype=dtype, device=device)
        if fill == "randint":
            return torch.randint(0, self.high or 1, self.shape, dtype=dtype, device=device)
        make = torch.rand if fill == "rand" else torch.randn
        return make(self.shape, device=device).to(dtype=dtype)


def _is_real(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


def _spec_error(where: str, message: str) -> _Failed:
    return _Failed(f"--inputs-json {where}: {message}", EXIT_USAGE)


def _input_spec(value: Any, where: str, default_dtype: torch.dtype | None) -> Any:
    """A checked input of --inputs-json: a _TensorSpec, or the JSON scalar itself."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if not isinstance(value, dict):
        raise _spec_error(where, 'expected a tensor {"shape": [...], ...} or a JSON scalar')
    unknown = sorted(set(value) - {"shape", "dtype", "fill", "high"})
    if unknown:
        raise _spec_error(where, f"unknown key {unknown[0]!r} (shape, dtype, fill, high)")
    shape = value.get("shape")
    if not isinstance(shape, list) or any(not isinstance(d, int) or isinstance(d, bool) or d < 0 for d in shape):
        raise _spec_error(f"{where}.shape", f"expected a list of non-negative integers, got {json.dumps(shape)}")
    if math.prod(shape) >= 2**63:
        raise _spec_error(f"{where}.shape", "the number of elements must fit 64 bits")
    dtype = default_dtype
    if "dtype" in value:
        try:
            dtype = _dtype(value["dtype"]) if isinstance(value["dtype"], str) else None
        except argparse.ArgumentTypeError as error:
            raise _spec_error(f"{where}.dtype", str(error)) from None
        if dtype is None:
            raise _spec_error(f"{where}.dtype", "expected a dtype name such as float32 or int64")
    fill, high = value.get("fill"), value.get("high")
    if fill is not None and fill not in _FILLS:
        raise _spec_error(f"{where}.fill", f"expected one of {', '.join(_FILLS)}, got {json.dumps(fill)}")
    if fill == "randint":
        if not isinstance(high, int) or isinstance(high, bool) or high < 1:
            raise _spec_error(f"{where}.high", "randint needs a positive integer high (values are in [0, high))")
        if dtype is None or _is_real(dtype) or dtype == torch.bool:
            raise _spec_error(f"{where}.dtype", "randint needs an integer dtype such as int64")
    elif "high" in value:
        raise _spec_error(f"{where}.high", 'high applies only to "fill": "randint"')
    if fill in ("rand", "randn") and dtype is not None and not _is_real(dtype):
        raise _spec_error(f"{where}.fill", f"{fill} needs a floating or complex dtype, not {dtype}")
    return _TensorSpec(tuple(shape), dtype, fill, high)


def _read_inputs_json(path: str, default_dtype: torch.dtype | None) -> tuple[list[Any], dict[str, Any]]:
    """Reads and checks --inputs-json (before the model is imported)."""
    try:
        if path == "-":
            spec = json.load(sys.stdin)
        else:
            with open(path, encoding="utf-8") as handle:
                spec = json.load(handle)
    except OSError as error:
        raise _Failed(f"--inputs-json {path}: {error.strerror or error}", EXIT_USAGE) from error
    except (ValueError, UnicodeDecodeError) as error:  # json.JSONDecodeError is a ValueError
        raise _Failed(f"--inputs-json {path}: not JSON: {error}", EXIT_USAGE) from error
    if not isinstance(spec, dict) or set(spec) - {"args", "kwargs"}:
        raise _spec_error(path, 'expected an object {"args": [...], "kwargs": {...}}')
    args, kwargs = spec.get("args", []), spec.get("kwargs", {})
    if not isinstance(args, list):
        raise _spec_error(f"{path}: args", "expected a list")
    if not isinstance(kwargs, dict) or any(not name.isidentifier() for name in kwargs):
        raise _spec_error(f"{path}: kwargs", "expected an object keyed by argument names")
    return (
        [_input_spec(value, f"{path}: args[{i}]", default_dtype) for i, value in enumerate(args)],
        {name: _input_spec(value, f"{path}: kwargs.{name}", default_dtype) for name, value in kwargs.items()},
    )


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


def _call_inputs(args: argparse.Namespace) -> dict[str, Any]:
    """Checks the inputs' options before the model is imported (exit 2 naming the option); returns what
    _crawl_arguments turns into crawl_module's input arguments once the model is loaded."""
    dtypes = args.dtype or []
    device = args.device
    if device is not None:
        try:
            _target_device(device)  # crawl_module's own check: known here, usable in this process
        except (ValueError, RuntimeError) as error:
            # its messages name the argument: "device 'cuda:7': CUDA is not available."
            raise _Failed(f"--{error}", EXIT_USAGE) from error
    if args.inputs_json is not None:
        if len(dtypes) > 1:
            raise _Failed("--dtype: give it once with --inputs-json (the default of specs without a dtype)", EXIT_USAGE)
        return {"json": _read_inputs_json(args.inputs_json, dtypes[0] if dtypes else None), "device": device}
    shapes = args.input_shape
    if len(dtypes) not in (0, 1, len(shapes)):
        raise _Failed(f"--dtype: give it once, or once per --input-shape ({len(shapes)}), not {len(dtypes)} times", EXIT_USAGE)
    return {
        "input_shape": shapes[0] if len(shapes) == 1 else shapes,
        "dtype": None if not dtypes else dtypes[0] if len(dtypes) == 1 else dtypes,
        "device": device,
    }


def _crawl_arguments(model: nn.Module, inputs: dict[str, Any]) -> dict[str, Any]:
    """crawl_module's input arguments for the loaded model."""
    if "json" not in inputs:
        return inputs
    specs, kwarg_specs = inputs["json"]
    default_device, default_dtype = _model_defaults(model)
    device = default_device if inputs["device"] is None else torch.device(inputs["device"])
    torch.manual_seed(0)

    def build(value: Any) -> Any:
        return value.build(default_dtype, device) if isinstance(value, _TensorSpec) else value

    return {"args": tuple(build(v) for v in specs), "kwargs": {k: build(v) for k, v in kwarg_specs.items()}}


def _summary(args: argparse.Namespace) -> int:
    _check_output_path(args.json)
    inputs = _call_inputs(args)
    model = _load_factory(args.model)
    code = 0
    try:
        report = crawl_module(model, **_crawl_arguments(model, inputs), mode=args.mode, strict=args.strict)
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
    demo.add_argument(
        "--html",
        default="report.html",
        type=_json_path,
        help="where to write the CNN's offline page (default report.html); the text model's goes beside it "
        "(report.text_model.html)",
    )
    summ = sub.add_parser("summary", help="analyse a model from PACKAGE.MODULE:FACTORY")
    summ.add_argument("model", help="import path of a factory returning an nn.Module")
    inputs = summ.add_mutually_exclusive_group(required=True)
    inputs.add_argument(
        "--input-shape",
        action="append",
        type=_input_shape,
        help="e.g. 3,224,224: one generated input, a batch dimension of 1 prepended (repeat for several inputs)",
    )
    inputs.add_argument("--inputs-json", metavar="FILE", help=_INPUTS_JSON_HELP)
    summ.add_argument(
        "--dtype",
        action="append",
        type=_dtype,
        help="dtype of generated inputs, e.g. float16 or int64 (default: the model's); once, or once per "
        "--input-shape; with --inputs-json, the default of specs without a dtype",
    )
    summ.add_argument(
        "--device",
        type=_device_name,
        help="device of generated inputs, e.g. cpu, cuda:0 or meta (default: the model's); the model is never moved",
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
