"""docs/report-schema.md against real reports.

The page documents every report field in tables whose first column is a path. This test builds real reports of
every type with small models and checks, in both directions:

(a) every key a report holds is documented on the page (and has a documented type and presence);
(b) every documented path occurs in at least one report built here (rows marked "device only" are exempt, except
    "device only: CUDA ..." rows when CUDA is available: the test then builds CUDA reports too).

It also checks the status rules on every MetricResult it meets, the metric catalogue (unit, scope, method), the
diagnostic-code table and the page's cross-field rules.
"""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

from torchscan import (
    ModuleHandler,
    compare_benchmarks,
    compare_reports,
    crawl_module,
    gather_reports,
    estimate_memory,
    measure_flops,
    measure_latency,
    measure_workload,
    metric_result,
    profile_workload,
)
from torchscan.process import measure_peak_memory, measure_peak_rss

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "report-schema.md"

# Timing settings kept short: the schema, not the numbers, is under test.
TIMING = {"warmup": 1, "min_run_time": 0.01, "min_repeats": 2}
CUDA = torch.cuda.is_available()

PRIMITIVES = {"int", "float", "number", "str", "bool", "null", "list", "object", "any"}
METRIC_KEYS = {"status", "value", "known_value", "unit", "scope", "method"}
# Entries whose MetricResults are copies of other reports' metrics: the catalogue rows of their source apply.
CATALOGUE_EXEMPT = {"MetricDiff", "ReportDiff"}


# ---------------------------------------------------------------------------------------------------------------
# The page


@dataclass
class Row:
    schema: str
    path: str
    types: list[str]
    present: str
    line: int

    @property
    def device_only(self) -> bool:
        return self.present.lower().startswith("device only")

    @property
    def required(self) -> bool:
        """Whether the reports built here must hold this path."""
        return not self.device_only or (CUDA and self.present.startswith("device only: CUDA"))


@dataclass
class Node:
    children: dict[str, Node] = field(default_factory=dict)
    row: Row | None = None
    hits: int = 0


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table row, split on unescaped pipes."""
    body = line.strip()
    body = body[1:] if body.startswith("|") else body
    body = body[:-1] if body.endswith("|") and not body.endswith("\\|") else body
    return [cell.replace("\\|", "|").strip() for cell in re.split(r"(?<!\\)\|", body)]


def _plain(cell: str) -> str:
    """A cell without Markdown links and code marks."""
    return re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", cell).replace("`", "").strip()


def _tokens(path: str) -> list[str]:
    out: list[str] = []
    for part in path.split("."):
        name = part.replace("[]", "")
        if name:
            out.append(name)
        out.extend(["[]"] * part.count("[]"))
    return out


def _code_tokens(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


@dataclass
class Page:
    schemas: dict[str, Node]
    rows: list[Row]
    catalogue: dict[str, tuple[list[str], list[str], list[str]]]  # key -> units, scopes, methods
    codes: dict[str, dict[str, Any]]


def parse_page(text: str) -> Page:
    schemas: dict[str, Node] = {}
    rows: list[Row] = []
    catalogue: dict[str, tuple[list[str], list[str], list[str]]] = {}
    codes: dict[str, dict[str, Any]] = {}
    heading = ""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line
        if not line.startswith("|"):
            i += 1
            continue
        header = [_plain(c) for c in _cells(line)]
        i += 2  # header and delimiter rows
        body: list[tuple[int, list[str]]] = []
        while i < len(lines) and lines[i].startswith("|"):
            body.append((i + 1, _cells(lines[i])))
            i += 1
        if header == ["Path", "Type", "Present", "Meaning"]:
            names = re.findall(r"`(\w+)`", heading)
            assert names, f"schema table without a `Name` heading: {heading!r}"
            schema = names[0]
            assert schema not in schemas, f"schema {schema} defined twice"
            root = schemas[schema] = Node()
            for number, cells in body:
                path = _plain(cells[0])
                types = [t.strip() for t in _plain(cells[1]).split("|")]
                row = Row(schema, path, types, _plain(cells[2]), number)
                node = root
                for token in _tokens(path):
                    node = node.children.setdefault(token, Node())
                assert node.row is None, f"{schema}: path {path} documented twice (line {number})"
                node.row = row
                rows.append(row)
        elif header == ["Metric", "unit", "scope", "method"]:
            for number, cells in body:
                key = _plain(cells[0])
                per_column = []
                for cell in cells[1:4]:
                    per_column.append(_code_tokens(cell))
                units, scopes, methods = per_column
                if cells[3].startswith("as `"):
                    methods = catalogue[_catalogue_sibling(key, methods[0])][2]
                assert units and scopes and methods, f"catalogue row {key} (line {number}) has an empty column"
                catalogue[key] = (units, scopes, methods)
        elif header[:4] == ["Code", "metric", "Carries", "Emitted"]:
            for number, cells in body:
                code = _plain(cells[0])
                codes[code] = {
                    "metrics": set(_code_tokens(cells[1])),
                    "carries": set(_code_tokens(cells[2])),
                    "emitted": _plain(cells[3]),
                    "line": number,
                }
    return Page(schemas, rows, catalogue, codes)


def _catalogue_sibling(key: str, metric: str) -> str:
    """`as module_flops` in LayerReport.metrics.macs's row means LayerReport.metrics.module_flops."""
    return key.rsplit(".", 1)[0] + "." + metric


def _pattern(token: str) -> re.Pattern[str]:
    parts = re.split(r"<[^>]+>", token)
    return re.compile(".+".join(re.escape(p) for p in parts) + r"\Z", re.S)


def _matches(value: str, tokens: list[str]) -> bool:
    return any(_pattern(token).match(value) for token in tokens)


REPORT_KINDS = {"AnalysisReport", "FlopReport", "BenchmarkReport"}


def _report_kind(value: Any) -> str:
    if "layers" in value:
        return "AnalysisReport"
    return "BenchmarkReport" if "measurement" in value else "FlopReport"


# ---------------------------------------------------------------------------------------------------------------
# Walking reports against the page


@dataclass
class Findings:
    errors: list[str] = field(default_factory=list)
    metrics: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (where, MetricResult)
    catalogued: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)  # (row, where, metric)
    diagnostics: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    instances: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    keys_checked: int = 0
    concrete_paths: set[str] = field(default_factory=set)


class Walker:
    def __init__(self, page: Page) -> None:
        self.page = page
        self.found = Findings()

    def _accepts(self, token: str, value: Any) -> bool:
        if token.startswith('"'):
            return value == json.loads(token)
        if re.fullmatch(r"-?\d+", token):
            return type(value) is int and value == int(token)
        if token in self.page.schemas:
            return isinstance(value, dict)
        return {
            "int": lambda v: type(v) is int,
            "float": lambda v: type(v) is float,
            "number": lambda v: type(v) in (int, float),
            "str": lambda v: isinstance(v, str),
            "bool": lambda v: isinstance(v, bool),
            "null": lambda v: v is None,
            "list": lambda v: isinstance(v, list),
            "object": lambda v: isinstance(v, dict),
            "any": lambda v: v is None or isinstance(v, (bool, int, float, str, list, dict)),
        }[token](value)

    def validate(self, schema: str, value: Any, where: str) -> None:
        """Checks ``value`` as an instance of the page's entry ``schema``."""
        self.found.instances.setdefault(schema, []).append((where, value))
        root = self.page.schemas[schema]
        if schema == "Description":
            if not isinstance(value, dict) or not isinstance(value.get("kind"), str):
                self.found.errors.append(f"{where}: a Description without a kind: {value!r}")
                return
            nodes = [n for n in (root.children.get(value["kind"]), root.children.get("*")) if n is not None]
            if root.children.get(value["kind"]) is None or root.children[value["kind"]].row is None:
                self.found.errors.append(f"{where}: undocumented Description kind {value['kind']!r}")
                return
            self._visit(schema, nodes, value, where, f"{schema}:{value['kind']}")
            return
        if schema == "MetricResult":
            self.found.metrics.append((where, value))
            if not isinstance(value, dict) or set(value) != METRIC_KEYS:
                self.found.errors.append(f"{where}: not a MetricResult: {value!r}")
        if schema == "Diagnostic":
            self.found.diagnostics.append((where, value))
        self._visit(schema, [root], value, where, schema)

    def _visit(self, schema: str, nodes: list[Node], value: Any, where: str, pattern: str) -> None:
        self.found.concrete_paths.add(pattern)
        for node in nodes:
            node.hits += 1
        typed = [n.row for n in nodes if n.row is not None]
        if typed:
            options = [t for row in typed for t in row.types]
            accepted = [t for t in options if self._accepts(t, value)]
            if not accepted:
                self.found.errors.append(
                    f"{where}: value {value!r:.80} is not of the documented type {' | '.join(options)} "
                    f"({typed[0].schema} {typed[0].path})"
                )
                return
            entries = [t for t in accepted if t in self.page.schemas]
            if len(entries) > 1 and set(entries) <= REPORT_KINDS:
                # GatheredReport.reports[]: the kind of each report is told by its keys
                entries = [_report_kind(value)]
            if entries:
                if entries[0] == "MetricResult" and schema not in CATALOGUE_EXEMPT:
                    self.found.catalogued.append((f"{schema}.{typed[0].path}", where, value))
                self.validate(entries[0], value, where)
                return
        if isinstance(value, dict):
            for node in nodes:
                for key, child in node.children.items():
                    if key in ("*", "[]") or child.row is None or child.row.present != "always":
                        continue
                    if key not in value:
                        self.found.errors.append(
                            f"{where}: missing key {key!r}, documented as always present ({schema} {child.row.path})"
                        )
            for key, item in value.items():
                self.found.keys_checked += 1
                literal = [n.children[key] for n in nodes if key in n.children]
                wild = [n.children["*"] for n in nodes if key not in n.children and "*" in n.children]
                if not any(child.row is not None for child in literal + wild):
                    self.found.errors.append(f"{where}.{key}: undocumented key (in {schema} at {pattern})")
                    continue
                self._visit(schema, literal + wild, item, f"{where}.{key}", f"{pattern}.{key if literal else '*'}")
        elif isinstance(value, list):
            following = [n.children["[]"] for n in nodes if "[]" in n.children]
            for index, item in enumerate(value):
                self.found.keys_checked += 1
                if not any(child.row is not None for child in following):
                    self.found.errors.append(f"{where}[{index}]: undocumented list item (in {schema} at {pattern})")
                    break
                self._visit(schema, following, item, f"{where}[{index}]", f"{pattern}[]")


# ---------------------------------------------------------------------------------------------------------------
# Real reports


class _Opaque:
    """Described as {"kind": "object"}."""


class _Unsupported(nn.Module):
    """A leaf without a module formula."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class _NoTensorOut(nn.Module):
    def forward(self, x: torch.Tensor) -> None:
        return None


class _Raises(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise ValueError("caught by the parent")


class _Diagnosed(nn.Module):
    """Calls that produce the crawl's diagnostics."""

    def __init__(self) -> None:
        super().__init__()
        self.boom = _Raises()
        self.none = _NoTensorOut()
        self.complex = nn.Linear(4, 4, dtype=torch.complex64)
        self.leaf = _Unsupported()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        try:
            self.boom(x)
        except ValueError:
            pass
        self.none(x)
        self.complex(x.to(torch.complex64))  # module_metric_error, incomplete_operator_formula
        return self.leaf(x).real.sinc()  # unsupported_module_metric, unsupported_operator_formula, uncounted


class _Shared(nn.Module):
    """A layer called twice (call_index 1, shared parameters) and buffers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.lin = nn.Linear(4, 4)
        self.flat = nn.Flatten()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.flat(nn.functional.adaptive_avg_pool2d(self.bn(self.conv(x)), 1))
        return self.lin(self.lin(y))


class _Every(nn.Module):
    """Takes and returns every kind of value the metadata describes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor, scalars: tuple, *, options: dict, extra: object = None, **rest: Any) -> Any:
        y = self.lin(x)
        return {"y": y, "nothing": None, 3: (y, [y])}


class _Handled(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


class _Complete(_Handled):
    pass


class _Partial(_Handled):
    pass


class _Unavailable(_Handled):
    pass


class _Failing(_Handled):
    pass


class _Invalid(_Handled):
    pass


class _BadField(_Handled):
    pass


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.lin(x))


class _HandledModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.parts = nn.ModuleList([_Complete(), _Partial(), _Unavailable(), _Failing(), _Invalid(), _BadField()])
        self.block = _Block()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for part in self.parts:
            x = part(x)
        return self.block(x)


def _raise(call: Any) -> Any:
    raise RuntimeError("handler failure")


HANDLERS = {
    _Complete: ModuleHandler(lambda call: {"module_flops": call.output.numel(), "macs": 0, "dmas": 0.5}),
    _Partial: ModuleHandler(
        lambda call: {
            "module_flops": metric_result(
                status="partial", known_value=3, unit="FLOPs", scope="module_call", method="estimate"
            )
        }
    ),
    _Unavailable: ModuleHandler(
        lambda call: {
            "module_flops": None,
            "macs": metric_result(status="unavailable", unit="MACs", scope="module_call", method="estimate"),
        }
    ),
    _Failing: ModuleHandler(_raise),
    _Invalid: ModuleHandler(lambda call: 5),
    _BadField: ModuleHandler(lambda call: {"module_flops": -1, "macs": 2}),
    _Block: ModuleHandler(lambda call: {"module_flops": 100}, subtree_metrics=frozenset({"module_flops", "macs"})),
}


class _Attend(nn.Module):
    """Self-attention under an optional mask, then an extra attention named `extra` (a row only one of two
    compared reports has)."""

    def __init__(self, extra: str) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(4, 2)
        self.extra = extra
        setattr(self, extra, nn.MultiheadAttention(4, 2))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        y = self.attn(x, x, x, attn_mask=mask, need_weights=False)[0]
        return getattr(self, self.extra)(y, y, y, need_weights=False)[0]


class _SavedSparse(nn.Module):
    """Saves activations for backward, one of them sparse (no readable storage)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.sparse = torch.eye(2).to_sparse()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(self.sparse, self.lin(x)[:2].relu())


def _tiny_transformer() -> nn.Transformer:
    return nn.Transformer(
        d_model=4, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=4, dropout=0.0,
        batch_first=True,
    )


class _AllReduce(nn.Module):
    """Sums its input over the ranks (a collective in the forward)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import torch.distributed as dist

        dist.all_reduce(x)
        return x


def _distributed_reports(add: Any) -> None:
    """Reports made inside a one-rank gloo process group (an in-memory store, no port): the rank context keys."""
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), _AllReduce())
        x = torch.ones(2, 4)
        crawled = add("crawl_module in a process group", "AnalysisReport", crawl_module(model, args=(x,)))
        counted = add("measure_flops in a process group", "FlopReport", measure_flops(lambda: model(x)))
        add("measure_flops of a barrier", "FlopReport", measure_flops(lambda: dist.barrier()))
        timed = measure_latency(lambda: model(x), device="cpu", **TIMING)
        add("measure_latency in a process group", "BenchmarkReport", timed)
        add("gather_reports of AnalysisReports", "GatheredReport", gather_reports(crawled))
        add("gather_reports of FlopReports", "GatheredReport", gather_reports(counted))
        add("gather_reports of BenchmarkReports", "GatheredReport", gather_reports(timed))
        partial = crawl_module(nn.Sequential(_Unsupported()), args=(x,))  # module FLOPs partial
        add("gather_reports, partial metrics", "GatheredReport", gather_reports(partial))
        add("profile_workload in a process group", "ProfileReport", profile_workload(lambda: model(x), device="cpu"))
    finally:
        dist.destroy_process_group()


def build_reports() -> list[tuple[str, str, Any]]:
    """(name, page entry, report) for every report type, built from small models."""
    torch.manual_seed(0)
    reports: list[tuple[str, str, Any]] = []

    def add(name: str, schema: str, report: Any) -> Any:
        reports.append((name, schema, report))
        return report

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # nested-tensor prototype, Transformer fast-path notes
        add("crawl_module generated input", "AnalysisReport", crawl_module(_Shared(), (3, 6, 6)))
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
        add(
            "crawl_module args/kwargs",
            "AnalysisReport",
            crawl_module(
                _Every(),
                args=(torch.ones(1, 4), (1, 2.0, "text", True, b"bytes", 1j, None)),
                kwargs={
                    "options": {"weights": torch.ones(2), 7: 1, "not an identifier": 2, True: 3},
                    "extra": _Opaque(),
                    "nested": nested,
                    "listed": [torch.ones(1)],
                },
            ),
        )
        add("crawl_module structure", "AnalysisReport", crawl_module(_Shared(), (3, 6, 6), mode="structure"))
        saved_input = torch.rand(3, 4, requires_grad=True)
        add(
            "crawl_module saved_activations, a sparse saved tensor",
            "AnalysisReport",
            crawl_module(_SavedSparse(), args=(saved_input,), saved_activations=True),
        )
        add("crawl_module diagnostics", "AnalysisReport", crawl_module(_Diagnosed(), (4,), dtype=torch.float32))
        handled = crawl_module(_HandledModel(), (4,), custom_modules=HANDLERS)
        add("crawl_module custom_modules", "AnalysisReport", handled)
        src, tgt = torch.ones(1, 2, 4), torch.ones(1, 2, 4)
        add(
            "crawl_module nn.Transformer, handler inside",
            "AnalysisReport",
            crawl_module(
                _tiny_transformer(),
                args=(src, tgt),
                custom_modules={nn.TransformerEncoder: ModuleHandler(lambda call: {"module_flops": 1})},
            ),
        )

        # token dependencies: limit and first_position (cross-attention under a causal 2x5 mask), and an
        # unavailable one (padding that excludes a key)
        query, memory = torch.ones(2, 1, 4), torch.ones(5, 1, 4)
        causal = torch.ones(2, 5, dtype=torch.bool).triu(1)
        add(
            "crawl_module MultiheadAttention, causal cross-attention",
            "AnalysisReport",
            crawl_module(
                nn.MultiheadAttention(4, 2), args=(query, memory, memory.clone()), kwargs={"attn_mask": causal}
            ),
        )
        add(
            "crawl_module MultiheadAttention, padding",
            "AnalysisReport",
            crawl_module(
                nn.MultiheadAttention(4, 2),
                args=(memory, memory, memory),
                kwargs={"key_padding_mask": torch.tensor([[False, False, False, False, True]])},
            ),
        )
        seq = torch.ones(3, 1, 4)
        attended = crawl_module(_Attend("extra_a"), args=(seq,))
        causal_seq = nn.Transformer.generate_square_subsequent_mask(3)
        masked = crawl_module(_Attend("extra_b"), args=(seq,), kwargs={"mask": causal_seq})
    add("compare_reports, token dependencies", "ReportDiff", compare_reports(attended, masked))

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    x = torch.ones(2, 4)
    add(
        "measure_flops modules= custom_mapping=",
        "FlopReport",
        measure_flops(
            lambda: model(x).sinc().sum(),
            modules=model,
            custom_mapping={torch.ops.aten.sum: lambda *shapes, out_shape=None: 0.5},
        ),
    )
    add("measure_flops modules=[...]", "FlopReport", measure_flops(lambda: model(x), modules=[model, model[0]]))
    sgd = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def training_step() -> None:
        sgd.zero_grad()
        model(x).sinc().sum().backward()  # sinc has no formula: forward and backward are partial
        sgd.step()

    add("measure_flops of a training step (phases)", "FlopReport", measure_flops(training_step, modules=model))
    add(
        "estimate_memory of a training step",
        "MemoryReport",
        estimate_memory(training_step, modules=model, timeline=True),
    )
    add("estimate_memory, nothing ran", "MemoryReport", estimate_memory(lambda: None, attention="fused"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse invariant checks
        sparse = torch.sparse_coo_tensor(torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0]), (2, 2))
    add("estimate_memory, unobserved storage", "MemoryReport", estimate_memory(lambda: sparse * 2))

    lin = nn.Linear(4, 2)
    inputs = torch.ones(3, 4)
    add("estimate_memory of a layer call", "MemoryReport", estimate_memory(lambda: lin(inputs), modules=lin))

    def workload() -> torch.Tensor:
        with torch.no_grad():
            return lin(inputs).sinc()

    before = add("measure_latency", "BenchmarkReport", measure_latency(workload, device="cpu", inputs=inputs, **TIMING))
    after = add(
        "measure_latency, other warm-up",
        "BenchmarkReport",
        measure_latency(workload, device="cpu", inputs=inputs, **{**TIMING, "warmup": 2}),
    )
    add("measure_latency without inputs", "BenchmarkReport", measure_latency(workload, device="cpu", **TIMING))
    add(
        "measure_workload, every pass",
        "BenchmarkReport",
        measure_workload(
            workload, device="cpu", inputs=inputs, work_units=3, profile=True, rss_command=["true"],
            print_summary=False, **TIMING,
        ),
    )
    add(
        "measure_workload metrics=()",
        "BenchmarkReport",
        measure_workload(workload, device="cpu", metrics=(), print_summary=False, **TIMING),
    )
    add(
        "measure_workload, achieved FLOP/s against a declared peak",
        "BenchmarkReport",
        measure_workload(
            workload, device="cpu", metrics=("flops", "latency"), peak_flops=1e12, print_summary=False, **TIMING
        ),
    )
    add(
        "measure_workload, achieved FLOP/s without latency",
        "BenchmarkReport",
        measure_workload(workload, device="cpu", metrics=("flops",), peak_flops=1e12, print_summary=False, **TIMING),
    )
    add(
        "measure_workload, memory unavailable",
        "BenchmarkReport",
        measure_workload(lambda: None, device="cpu", metrics=("memory", "throughput"), print_summary=False, **TIMING),
    )
    add("profile_workload", "ProfileReport", profile_workload(workload, device="cpu"))
    add("measure_peak_memory", "PeakMemory", measure_peak_memory(workload, device="cpu"))
    add("measure_peak_rss", "MetricResult", measure_peak_rss(["true"]))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        old = crawl_module(nn.Sequential(nn.Sequential(nn.ReLU()), nn.Linear(4, 4), _Unsupported()), (4,))
        new = crawl_module(nn.Sequential(nn.ReLU(), nn.Linear(4, 8), _Unsupported(), nn.ReLU()), (4,))
    add("compare_reports", "ReportDiff", compare_reports(old, new))
    add("compare_benchmarks passed", "BenchmarkComparison", compare_benchmarks(before, after, check=lambda: True))
    add("compare_benchmarks failed", "BenchmarkComparison", compare_benchmarks(before, after, check=lambda: False))

    _distributed_reports(add)

    if CUDA:  # the device-only fields
        gpu = torch.ones(64, 64, device="cuda")
        add("measure_peak_memory cuda", "PeakMemory", measure_peak_memory(lambda: gpu @ gpu, device="cuda"))
        add("profile_workload cuda", "ProfileReport", profile_workload(lambda: gpu @ gpu, device="cuda"))
        add(
            "measure_workload cuda",
            "BenchmarkReport",
            measure_workload(lambda: gpu @ gpu, device="cuda", profile=True, print_summary=False, **TIMING),
        )
    return reports


# ---------------------------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture(scope="module")
def page() -> Page:
    return parse_page(PAGE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reports() -> list[tuple[str, str, Any]]:
    return build_reports()


@pytest.fixture(scope="module")
def walked(page: Page, reports: list[tuple[str, str, Any]]) -> Findings:
    walker = Walker(page)
    for name, schema, report in reports:
        walker.validate(schema, report, name)
    return walker.found


# ---------------------------------------------------------------------------------------------------------------
# The page itself


def test_page_tables_are_well_formed(page: Page) -> None:
    expected = {
        "MetricResult", "Diagnostic", "Description", "Owner", "TokenDependency", "MetricDiff", "AnalysisReport",
        "LayerReport",
        "FlopReport", "ReportDiff", "BenchmarkReport", "ProfileReport", "PeakMemory", "BenchmarkComparison",
        "GatheredReport", "RankStats", "MemoryReport", "MemoryPeak",
    }
    assert set(page.schemas) == expected
    for row in page.rows:
        for token in row.types:
            assert (
                token in PRIMITIVES or token in page.schemas or token.startswith('"') or token.isdigit()
            ), f"{row.schema} {row.path} (line {row.line}): unknown type {token!r}"
        assert row.present, f"{row.schema} {row.path} (line {row.line}): empty Present cell"
    for key in page.catalogue:
        schema, path = key.split(".", 1)
        node = page.schemas[schema]
        for token in _tokens(path):
            node = node.children[token]
        assert node.row is not None and "MetricResult" in node.row.types, f"catalogue row {key} is no MetricResult"
    assert {c["emitted"] for c in page.codes.values()} <= {"yes", "device", "never"}


def test_readme_links_the_page() -> None:
    assert "docs/report-schema.md" in (ROOT / "README.md").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------------------------
# (a) and (b)


def test_reports_are_json(reports: list[tuple[str, str, Any]]) -> None:
    for name, _, report in reports:
        assert json.loads(json.dumps(report, allow_nan=False)) == report, name


def test_every_report_key_is_documented(walked: Findings) -> None:
    assert not walked.errors, "\n".join(walked.errors[:60])


def test_every_documented_path_occurs(page: Page, walked: Findings) -> None:
    missing = []
    for schema, root in page.schemas.items():
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(node.children.values())
            row = node.row
            if row is not None and node.hits == 0 and row.required:
                missing.append(f"{schema} {row.path} (line {row.line})")
    assert not missing, "documented but absent from every report built here:\n" + "\n".join(missing)


# ---------------------------------------------------------------------------------------------------------------
# Status rules, catalogue, diagnostic codes


def test_status_rules_hold_on_every_metric_result(walked: Findings) -> None:
    assert len(walked.metrics) > 300
    for where, metric in walked.metrics:
        status, value, known = metric["status"], metric["value"], metric["known_value"]
        for key in ("unit", "scope", "method"):
            assert isinstance(metric[key], str) and metric[key], f"{where}: empty {key}"
        for number in (value, known):
            assert number is None or (type(number) in (int, float) and math.isfinite(number) and number >= 0), where
        if status == "complete":
            assert value is not None and known == value, f"{where}: {metric}"
        elif status == "partial":
            assert value is None and known is not None, f"{where}: {metric}"
        else:
            assert status == "unavailable" and value is None and known is None, f"{where}: {metric}"
    statuses = {m["status"] for _, m in walked.metrics}
    assert statuses == {"complete", "partial", "unavailable"}


def test_metric_catalogue(page: Page, walked: Findings) -> None:
    seen = set()
    for key, where, metric in walked.catalogued:
        assert key in page.catalogue, f"{where}: no catalogue row {key}"
        seen.add(key)
        units, scopes, methods = page.catalogue[key]
        assert _matches(metric["unit"], units), f"{where}: unit {metric['unit']!r} not in {units}"
        assert _matches(metric["scope"], scopes), f"{where}: scope {metric['scope']!r} not in {scopes}"
        assert _matches(metric["method"], methods), f"{where}: method {metric['method']!r} not in {methods}"
    assert seen == set(page.catalogue), f"catalogue rows never met: {sorted(set(page.catalogue) - seen)}"


def test_diagnostic_codes(page: Page, walked: Findings) -> None:
    produced = set()
    for where, diagnostic in walked.diagnostics:
        code = diagnostic["code"]
        assert diagnostic["severity"] == "warning", where
        assert code in page.codes, f"{where}: undocumented diagnostic code {code!r}"
        entry = page.codes[code]
        assert entry["emitted"] in ("yes", "device"), f"{where}: {code} is documented as never emitted"
        assert diagnostic["metric"] in entry["metrics"], f"{where}: {code} with metric {diagnostic['metric']!r}"
        for key in ("path", "operator"):
            assert key not in diagnostic or key in entry["carries"], f"{where}: {code} carries {key}"
        produced.add(code)
    expected = {code for code, entry in page.codes.items() if entry["emitted"] == "yes"}
    assert produced >= expected, f"documented as emitted but not produced: {sorted(expected - produced)}"


# ---------------------------------------------------------------------------------------------------------------
# Cross-field rules (the page's numbered list)


def _instances(walked: Findings, schema: str) -> list[tuple[str, Any]]:
    return walked.instances.get(schema, [])


def _known(metric: dict[str, Any]) -> int | float:
    return metric["known_value"] if metric["known_value"] is not None else 0


def test_analysis_report_rules(walked: Findings) -> None:
    analyses = _instances(walked, "AnalysisReport")
    assert len(analyses) >= 6
    for where, report in analyses:
        totals, layers = report["totals"], report["layers"]
        assert totals["operator_flops"] == report["operator_flops"]["total"], where
        assert totals.get("collective_bytes") == report["operator_flops"].get("collective_bytes"), where
        full = report["context"].get("analysis_mode") != "structure"
        if full:
            rows = [layer["metrics"]["operator_flops"] for layer in layers]
            assert sum(_known(m) for m in rows) == _known(totals["operator_flops"]), where
            assert (totals["operator_flops"]["status"] == "partial") == any(m["status"] == "partial" for m in rows)
        for name in ("module_flops", "macs", "dmas"):
            total = totals[name]
            rows = [layer["metrics"][name] for layer in layers if name in layer["metrics"]]
            if not full:
                assert total["status"] == "unavailable" and total["method"] == "not_requested", where
                assert not rows, where
                continue
            if rows and all(m["status"] == "complete" for m in rows):
                expected = "complete"
            elif any(m["status"] != "unavailable" for m in rows):
                expected = "partial"
            else:
                expected = "unavailable"
            assert total["status"] == expected, f"{where} {name}"
            if expected != "unavailable":
                assert math.isclose(_known(total), sum(_known(m) for m in rows)), f"{where} {name}"
        saved = [layer["metrics"].get("saved_activation_bytes") for layer in layers]
        if "saved_activation_bytes" in totals:
            assert all(m is not None for m in saved), where
            assert sum(_known(m) for m in saved) <= _known(totals["saved_activation_bytes"]), where
            if any(m["status"] == "partial" for m in saved):
                assert totals["saved_activation_bytes"]["status"] == "partial", where
        else:
            assert all(m is None for m in saved), where
        keys = [(layer["path"], layer["call_index"]) for layer in layers]
        assert len(keys) == len(set(keys)), where
        by_key = dict(zip(keys, layers))
        for layer in layers:
            path = layer["path"]
            assert layer["depth"] == (0 if path == "" else path.count(".") + 1), f"{where} {path}"
            for metric, owner in layer.get("metric_owners", {}).items():
                assert metric not in layer["metrics"], f"{where} {path}: covered {metric} is also on the row"
                owner_row = by_key[(owner["path"], owner["call_index"])]
                assert metric in owner_row.get("metric_ownership", {}), f"{where} {path}: owner lacks {metric}"


def test_flop_report_rules(walked: Findings) -> None:
    for where, report in _instances(walked, "FlopReport"):
        total = report["total"]
        if total["method"] == "not_requested":
            assert total["status"] == "unavailable" and not report["by_operator"], where
            continue
        assert total["status"] == ("partial" if report["diagnostics"] else "complete"), where
        assert _known(total) == sum(report["by_operator"].values()), where
        assert sum(report["by_module"].values()) <= _known(total), where
        if "phases" in report:
            phases = report["phases"]
            assert set(phases) == {"forward", "backward", "optimizer"}, where
            assert sum(_known(p["total"]) for p in phases.values()) == _known(total), where
            assert (total["status"] == "partial") == any(p["total"]["status"] == "partial" for p in phases.values())
            for op, flops in report["by_operator"].items():
                assert sum(p["by_operator"].get(op, 0) for p in phases.values()) == flops, where
            for p in phases.values():
                assert sum(p["by_operator"].values()) == _known(p["total"]), where
                assert sum(p["by_module"].values()) <= _known(p["total"]), where
                keys = [(row["path"], row["call_index"]) for row in p["layers"]]
                assert len(keys) == len(set(keys)), where
        assert ("collectives" in report) == ("collective_bytes" in report), where
        if "collectives" in report:
            moved = report["collectives"]
            assert _known(report["collective_bytes"]) == sum(entry["bytes_moved"] for entry in moved.values()), where
            assert all(report["by_operator"].get(op) == 0 for op in moved), where


def test_gathered_report_rules(walked: Findings) -> None:
    gathered = _instances(walked, "GatheredReport")
    assert len(gathered) >= 4
    for where, report in gathered:
        world, ranks = report["context"]["world_size"], report["context"]["ranks"]
        assert len(report["reports"]) == world == len(ranks), where
    for where, stats in _instances(walked, "RankStats"):
        values = stats["values"]
        assert len(values) == len(stats["known_values"]), where
        if stats["status"] != "complete":
            assert stats["min"] is stats["median"] is stats["max"] is stats["sum"] is None, where
            continue
        assert stats["min"]["value"] <= stats["median"]["value"] <= stats["max"]["value"], where
        if stats["sum"] is not None:
            assert math.isclose(stats["sum"], sum(values)), where


def test_benchmark_report_rules(walked: Findings) -> None:
    benchmarks = _instances(walked, "BenchmarkReport")
    assert len(benchmarks) >= 6
    for where, report in benchmarks:
        totals, measurement = report["totals"], report["measurement"]
        assert totals["throughput"]["unit"] == report["context"]["work_unit"] + "/s", where
        if measurement:
            calls = measurement["number_per_run"] * len(measurement["raw_times_seconds"])
            assert measurement["measured_calls"] == calls, where
        if "operator_flops" in report:
            assert totals["operator_flops"] == report["operator_flops"]["total"], where
        if "memory" in report:
            assert totals["peak_memory"]["value"] == report["memory"]["peak_bytes"], where
    for where, memory in _instances(walked, "PeakMemory"):
        assert memory["delta_bytes"] == memory["peak_bytes"] - memory["baseline_bytes"], where


def _check_metric_diff(where: str, diff: dict[str, Any], withheld: bool) -> None:
    before, after = diff["before"], diff["after"]
    if withheld or before is None or after is None or "unavailable" in (before["status"], after["status"]):
        expected = "unavailable"
    elif "partial" in (before["status"], after["status"]):
        expected = "partial"
    else:
        expected = "complete"
    assert diff["status"] == expected, where
    if expected == "complete":
        assert math.isclose(diff["delta"], after["value"] - before["value"], rel_tol=1e-9, abs_tol=1e-12), where
    else:
        assert diff["delta"] is None, where


def test_comparison_rules(walked: Findings) -> None:
    statuses = set()
    for where, diff in _instances(walked, "ReportDiff"):
        entries = [(f"{where}.totals.{k}", v) for k, v in diff["totals"].items()]
        for layer in diff["layers"]["changed"]:
            entries += [(f"{where} {layer['path']}.{k}", v) for k, v in layer["metrics"].items()]
        for name, entry in entries:
            _check_metric_diff(name, entry, withheld=False)
            statuses.add(entry["status"])
    checks = set()
    for where, comparison in _instances(walked, "BenchmarkComparison"):
        withheld = comparison["output_check"] == "failed"
        checks.add(comparison["output_check"])
        for name, entry in comparison["totals"].items():
            _check_metric_diff(f"{where}.totals.{name}", entry, withheld)
            statuses.add(entry["status"])
        before, after = comparison["before"]["context"], comparison["after"]["context"]
        changed = {k for k in before.keys() | after.keys() if before.get(k) != after.get(k)}
        assert set(comparison["context_changes"]) == changed, where
        for key, change in comparison["context_changes"].items():
            assert change == {"before": before.get(key), "after": after.get(key)}, where
        latency = comparison["totals"]["latency"]
        iqrs = [comparison[side]["totals"]["latency_iqr"] for side in ("before", "after")]
        if latency["delta"] is None or any(i["status"] != "complete" for i in iqrs):
            assert comparison["latency_change"] == "unavailable", where
        elif abs(latency["delta"]) <= max(i["value"] for i in iqrs):
            assert comparison["latency_change"] == "within_variability", where
        else:
            assert comparison["latency_change"] == ("faster" if latency["delta"] < 0 else "slower"), where
    assert statuses == {"complete", "partial", "unavailable"}
    assert checks == {"passed", "failed"}


def test_counts(page: Page, reports: list[tuple[str, str, Any]], walked: Findings) -> None:
    """The sizes of what this file checks (printed with ``pytest -s``)."""
    print(
        f"\nreport-schema: {len(reports)} reports built; {len(page.rows)} documented paths "
        f"({sum(r.device_only for r in page.rows)} device only), {len(page.catalogue)} catalogue rows, "
        f"{len(page.codes)} diagnostic codes; {len(walked.concrete_paths)} distinct report paths, "
        f"{walked.keys_checked} keys and items, {len(walked.metrics)} MetricResults and "
        f"{len(walked.diagnostics)} diagnostics checked",
        file=sys.stderr,
    )
    assert len(reports) >= 19
