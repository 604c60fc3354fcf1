"""observe.c: calls whose post-hooks never run (extb).

PyTorch skips a module's always-called forward hooks when its forward raises a BaseException that is not an
Exception (SystemExit, KeyboardInterrupt). When a parent catches it, the child's call is left open; the
parent's post-hook closes it as failed: the child's row carries ``module_forward_error`` ("raised an exception
that a parent module caught") and no module estimate, and the rest of the model is counted
(Linear(2, 2) on (1, 2): 2*1*2*2 = 8 FLOPs).
"""

from __future__ import annotations

import torch
from torch import nn

from conftest import assert_nothing_left
from torchscan import crawl_module


class _Quits(nn.Module):
    def forward(self, x):
        raise SystemExit(3)


class _Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.quits = _Quits()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        try:
            self.quits(x)
        except SystemExit:
            pass
        try:
            raise ValueError("being handled")
        except ValueError:
            try:
                self.quits(x)  # this call begins while another exception is being handled
            except SystemExit:
                pass
        return self.lin(x)


def test_calls_a_parent_caught_are_closed_as_failed():
    model = _Outer()
    report = crawl_module(model, args=(torch.ones(1, 2),))
    rows = {(row["path"], row["call_index"]): row["metrics"] for row in report["layers"]}
    assert set(rows) == {("", 0), ("quits", 0), ("quits", 1), ("lin", 0)}
    for index in (0, 1):
        assert rows[("quits", index)]["calls"]["value"] == 1
        assert rows[("quits", index)]["module_flops"]["status"] == "unavailable"
    assert rows[("lin", 0)]["module_flops"]["value"] == 8
    failed = [d for d in report["diagnostics"] if d["code"] == "module_forward_error"]
    assert [d["path"] for d in failed] == ["quits", "quits"]
    assert {d["message"] for d in failed} == {"The module forward raised an exception that a parent module caught."}
    assert_nothing_left(model)
