"""The summary table text (contract 5.1), checked against an independent rendering of the spec's rules."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import summary

from conftest import UnsupportedLeaf

# ---------------------------------------------------------------------------------------------------------------
# An oracle written from the rules of contract 5.1 (not from the package)
# ---------------------------------------------------------------------------------------------------------------

HEADERS = [
    "Layer",
    "Type",
    "Output Shape",
    "Param #",
    "Trainable",
    "Receptive field",
    "Effective stride",
    "Effective padding",
]
CAPS = [27, 20, 25, 15, 9, 15, 16, 17]
WRAP = "[...]"


def _shorten(text: str, limit: int, mode: str | None) -> str:
    if mode is None or len(text) <= limit:
        return text
    if mode == "end":
        return text[: limit - len(WRAP)] + WRAP
    tail = WRAP + "." + text.rsplit(".", 1)[-1]  # "mid": prefix, then [...]. and the last dotted part
    return text[: limit - len(tail)] + tail


def _indent(name: str, depth: int) -> str:
    if depth == 0:
        return name
    if depth == 1:
        return "├─" + name
    return "|    " * (depth - 1) + "└─" + name


def _shape(meta: dict) -> str:
    kind = meta["kind"]
    if kind == "tensor":
        return repr(tuple(meta["shape"]))
    if kind == "tuple":
        return "(" + ", ".join(_shape(item) for item in meta["items"]) + ")"
    if kind == "list":
        return "[" + ", ".join(_shape(item) for item in meta["items"]) + "]"
    if kind == "mapping":
        return "{" + ", ".join(_shape(item["value"]) for item in meta["items"]) + "}"
    return kind


def _known(metric):
    if metric is None:
        return None
    return metric["value"] if metric["status"] == "complete" else metric["known_value"]


def _cells(layer: dict, widths: list[int] | None, wrap_mode) -> list[str]:
    params = layer["parameters"]["trainable"] + layer["parameters"]["frozen"]
    count = params + layer["buffers"]["elements"]
    rf = [_known(layer["metrics"].get(k)) for k in ("receptive_field", "effective_stride", "effective_padding")]
    name = _indent(layer["name"], layer["depth"])
    shape = _shape(layer["output"])
    if widths is not None:
        name = _shorten(name, widths[0] + 3, wrap_mode)
        shape = _shorten(shape, widths[2], "end")
    cells = [
        name,
        layer["type"],
        shape,
        f"{count:,}",
        "-" if params == 0 else str(layer["parameters"]["trainable"] > 0),
        *("?" if v is None else f"{v:.0f}" for v in rf),
    ]
    if widths is None:
        return cells
    return [cell.ljust(w)[:w] for cell, w in zip(cells, widths)]


def _total(label: str, metric: dict) -> str:
    value = _known(metric)
    if value is None:
        return f"{label}: unavailable"
    prefix = ""
    for scale, symbol in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            value, prefix = value / scale, symbol
            break
    known = "" if metric["status"] == "complete" else "known "
    return f"{label}: {known}{value:.2f} {prefix}{metric['unit']}"


def expected_table(report: dict, wrap_mode="mid", receptive_field=False, effective_rf_stats=False, max_depth=None):
    layers = [row for row in report["layers"] if max_depth is None or row["depth"] <= max_depth]
    widths = [len(h) for h in HEADERS]
    for layer in layers:
        widths = [max(w, len(c)) for w, c in zip(widths, _cells(layer, None, wrap_mode))]
    widths = [min(w, cap) for w, cap in zip(widths, CAPS)]
    ncols = 5 + (receptive_field and (3 if effective_rf_stats else 1) or 0)
    widths = widths[:ncols]
    length = sum(widths) + 4 * (ncols - 1)
    totals = report["totals"]
    lines = ["_" * length, "    ".join(h.ljust(w) for h, w in zip(HEADERS, widths)), "=" * length]
    lines += ["    ".join(_cells(layer, widths, wrap_mode)[:ncols]) for layer in layers]
    lines += [
        "=" * length,
        f"Trainable params: {totals['trainable_parameters']['value']:,}",
        f"Non-trainable params: {totals['frozen_parameters']['value']:,}",
        f"Total params: {totals['parameters']['value']:,}",
        "-" * length,
        f"Model size (params + buffers): "
        f"{(totals['parameter_bytes']['value'] + totals['buffer_bytes']['value']) / 1024**2:.2f} Mb",
        "-" * length,
        _total("Module-formula forward FLOPs", totals["module_flops"]),
        _total("Multiply-Accumulations", totals["macs"]),
        _total("Direct memory accesses", totals["dmas"]),
    ]
    if "operator_flops" in totals:
        lines.append(_total("Operator forward FLOPs", totals["operator_flops"]))
    if report["diagnostics"]:
        lines.append(f"Diagnostics: {len(report['diagnostics'])} (inspect report['diagnostics'])")
    lines.append("_" * length)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
# Models exercising the table rules
# ---------------------------------------------------------------------------------------------------------------


class AVeryLongCustomModuleTypeName(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(1234))

    def forward(self, x):
        return x


class Outputs(nn.Module):
    """Children with long names, odd output structures, frozen parameters and buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.a_really_long_submodule_name_exceeding_the_width = nn.Sequential(
            nn.Conv2d(3, 4, 3, stride=2, padding=1), nn.BatchNorm2d(4), nn.ReLU()
        )
        self.flat = nn.Flatten(0)
        self.frozen = nn.Linear(4, 3)
        self.frozen.requires_grad_(False)
        self.custom = AVeryLongCustomModuleTypeName()
        self.leaf = UnsupportedLeaf()

    def forward(self, x):
        y = self.a_really_long_submodule_name_exceeding_the_width(x)
        v = self.flat(y[:, :, 0, 0])  # 1-D output: "(4,)"
        z = self.frozen(v)
        self.custom(z)
        return self.leaf(z), {"a": z, "b": (y, None)}


def _models():
    torch.manual_seed(0)
    deep = nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Sequential(nn.Conv2d(8, 8, 3, dilation=2), nn.ReLU6())),
        nn.AdaptiveAvgPool2d((1, 1)),
        nn.Flatten(),
        nn.Linear(8, 1000),
    )
    return {
        "conv2d": (nn.Conv2d(3, 8, 3), (3, 32, 32)),
        "deep": (deep, (3, 32, 32)),
        "outputs": (Outputs(), (3, 8, 8)),
        "wide-linear": (nn.Sequential(nn.Linear(512, 4096), nn.Linear(4096, 4096)), (512,)),
    }


MODELS = _models()


def _printed(capsys, *args, **kwargs):
    capsys.readouterr()
    report = summary(*args, **kwargs)
    return report, capsys.readouterr().out.rstrip("\n")


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("wrap_mode", ["mid", "end", None])
def test_table_matches_spec(capsys, name, wrap_mode):
    model, shape = MODELS[name]
    report, out = _printed(capsys, model, shape, wrap_mode=wrap_mode)
    assert out == expected_table(report, wrap_mode)


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize(("rf", "stats"), [(True, False), (True, True), (False, True)])
def test_table_receptive_field_columns_match_spec(capsys, name, rf, stats):
    model, shape = MODELS[name]
    report, out = _printed(capsys, model, shape, receptive_field=rf, effective_rf_stats=stats)
    assert out == expected_table(report, "mid", rf, stats)


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_table_max_depth_matches_spec(capsys, depth):
    model, shape = MODELS["deep"]
    report, out = _printed(capsys, model, shape, max_depth=depth)
    assert out == expected_table(report, max_depth=depth)


def test_table_structure_mode_matches_spec(capsys):
    model, shape = MODELS["outputs"]
    report, out = _printed(capsys, model, shape, mode="structure")
    assert out == expected_table(report)
    assert "Module-formula forward FLOPs: unavailable" in out
    assert "Operator forward FLOPs: unavailable" in out


def test_table_specific_cells(capsys):
    model, shape = MODELS["outputs"]
    report, out = _printed(capsys, model, shape, wrap_mode="end")
    lines = out.splitlines()
    # the 1-D output of Flatten(0) on (1, 4) prints as a one-element tuple
    flat = next(line for line in lines if line.startswith("├─flat"))
    assert "    (4,)    " in flat
    # frozen Linear(4, 3): 15 parameters, not trainable
    frozen = next(line for line in lines if line.startswith("├─frozen"))
    assert frozen.split()[-2:] == ["15", "False"]
    # a type name longer than 20 characters is cut at 20
    custom = next(line for line in lines if line.startswith("├─custom"))
    assert "AVeryLongCustomModul " in custom and "AVeryLongCustomModuleType" not in custom
    assert "1,234" in custom
    # partial module FLOPs print as a known lower bound; diagnostics are counted
    assert any(line.startswith("Module-formula forward FLOPs: known ") for line in lines)
    assert lines[-2].startswith("Diagnostics: ")


def test_table_millions_and_thousands_separators(capsys):
    model, shape = MODELS["wide-linear"]
    report, out = _printed(capsys, model, shape)
    # Linear(512, 4096): 2,101,248 params ; Linear(4096, 4096): 16,781,312 ; total 18,882,560
    assert "Total params: 18,882,560" in out
    assert "2,101,248" in out and "16,781,312" in out
    # 18,882,560 * 4 bytes / 2**20 = 72.03 Mb
    assert "Model size (params + buffers): 72.03 Mb" in out
    # module FLOPs: 4096*(2*512) + 4096*(2*4096) = 4,194,304 + 33,554,432 = 37,748,736 -> 37.75 MFLOPs
    assert "Module-formula forward FLOPs: 37.75 MFLOPs" in out
    assert report["totals"]["module_flops"]["value"] == 37_748_736
