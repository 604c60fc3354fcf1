"""The command line of the Python package: ``demo`` and ``summary``.

``python -m torchscan demo`` analyses two built-in example models (a small CNN
called with a generated input, and a small transformer text model called with
``args`` and ``kwargs``), prints their tables and writes ``report.json``.
``python -m torchscan summary PACKAGE.MODULE:FACTORY --input-shape 3,224,224``
analyses a model returned by a factory of the caller's.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Any

import torch
from torch import nn

from .crawler import summary
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


def _demo(args: argparse.Namespace) -> int:
    torch.manual_seed(0)
    print("== DemoCNN, input_shape=(3, 32, 32) ==")
    cnn = summary(DemoCNN(), (3, 32, 32))
    print()
    print("== DemoTextModel, args=(input_ids,), kwargs={'attention_mask': mask} ==")
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 8:] = False
    text = summary(DemoTextModel(), args=(ids,), kwargs={"attention_mask": mask})
    with open(args.json, "w", encoding="utf-8") as handle:
        json.dump({"cnn": cnn, "text_model": text}, handle, indent=2, allow_nan=False)
    print(f"\nWrote both reports to {args.json}")
    return 0


def _load_factory(spec: str) -> Any:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise SystemExit(f"MODEL must look like package.module:factory, got {spec!r}")
    factory = getattr(importlib.import_module(module_name), attr)
    model = factory() if not isinstance(factory, nn.Module) else factory
    if not isinstance(model, nn.Module):
        raise SystemExit(f"{spec} did not return a torch.nn.Module")
    return model


def _summary(args: argparse.Namespace) -> int:
    model = _load_factory(args.model)
    shapes = [tuple(int(d) for d in part.split(",") if d) for part in args.input_shape]
    input_shape: Any = shapes[0] if len(shapes) == 1 else shapes
    try:
        report = summary(model, input_shape, max_depth=args.max_depth, mode=args.mode, strict=args.strict)
    except IncompleteAnalysisError as error:
        print(f"torchscan: {error}", file=sys.stderr)
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(error.report, handle, indent=2, allow_nan=False)
        return 2
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(report, handle, indent=2, allow_nan=False)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m torchscan", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="analyse the built-in example models")
    demo.add_argument("--json", default="report.json", help="where to write the reports (default report.json)")
    summ = sub.add_parser("summary", help="analyse a model from PACKAGE.MODULE:FACTORY")
    summ.add_argument("model", help="import path of a factory returning an nn.Module")
    summ.add_argument("--input-shape", action="append", required=True, help="e.g. 3,224,224 (repeat for several inputs)")
    summ.add_argument("--json", help="write the report to this file")
    summ.add_argument("--strict", action="store_true", help="exit 2 when any metric is incomplete")
    summ.add_argument("--max-depth", type=int, default=None, help="print rows up to this depth")
    summ.add_argument("--mode", choices=("full", "structure"), default="full")
    args = parser.parse_args(argv)
    return _demo(args) if args.command == "demo" else _summary(args)
