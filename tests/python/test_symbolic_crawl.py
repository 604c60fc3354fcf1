"""Crawling inside a symbolic trace (make_fx, tracing_mode="symbolic"): describe.c reads sizes (extb).

A symbolic size with a hint (the example value) is read from the hint, adding no guard to the trace, so the
layer's record and formulas see the example's numbers. A size without a hint (an unbacked size such as
nonzero()'s row count) has no number: the record keeps its expression, and the module formulas say the input
shape is invalid rather than guess. ReLU on (8, 16): N = 128 FLOPs, DMAs N + O = 256.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.fx.experimental.proxy_tensor import make_fx

from torchscan import crawl_module


def test_symbolic_sizes_with_and_without_hints():
    reports = []

    def f(a):
        reports.append(crawl_module(nn.ReLU(), args=(a,)))
        rows = a.nonzero().float()  # (u0, 2): u0 has no example value
        reports.append(crawl_module(nn.ReLU(), args=(rows,)))
        return a.relu()

    graph = make_fx(f, tracing_mode="symbolic")(torch.randn(8, 16))
    sizes = [d for n in graph.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor) for d in n.meta["val"].shape]
    env = next(d for d in sizes if isinstance(d, torch.SymInt)).node.shape_env
    assert not env.guards  # reading the hints specialized nothing

    hinted, unbacked = (r["layers"][0] for r in reports)
    tensor = {"kind": "tensor", "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    assert hinted["input"] == {"args": [dict(tensor, shape=[8, 16])], "kwargs": {}}
    metrics = hinted["metrics"]
    assert (metrics["module_flops"]["value"], metrics["dmas"]["value"]) == (128, 256)

    symbol = unbacked["input"]["args"][0]["shape"][0]
    assert isinstance(symbol, str) and symbol.startswith("u")
    assert unbacked["input"]["args"][0] == dict(tensor, shape=[symbol, 2])
    assert unbacked["output"] == dict(tensor, shape=[symbol, 2])
    assert unbacked["metrics"]["module_flops"]["status"] == "unavailable"
    messages = {d["message"] for d in reports[1]["diagnostics"] if d.get("metric") == "module_flops"}
    assert messages == {"ValueError: input has an invalid shape"}
