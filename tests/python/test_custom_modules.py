"""crawl_module(custom_modules=...): ModuleHandler semantics (contract 1.10)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from torch import nn

from torchscan import IncompleteAnalysisError, ModuleCall, ModuleHandler, crawl_module


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))


class Counted:
    """A callback that counts its calls and returns fixed estimates."""

    def __init__(self, result):
        self.result = result
        self.calls = 0

    def __call__(self, call: ModuleCall):
        self.calls += 1
        return self.result


def rows(report, path):
    return [layer for layer in report["layers"] if layer["path"] == path]


def codes(report):
    return [(d["code"], d["metric"], d.get("path")) for d in report["diagnostics"]]


# ---- validation ----------------------------------------------------------------------------------------------------


class Spy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        self.calls += 1
        return self.lin(x)


@pytest.mark.parametrize(
    ("custom", "error"),
    [
        ([(nn.Linear, ModuleHandler(lambda c: {}))], TypeError),
        ({"Linear": ModuleHandler(lambda c: {})}, TypeError),
        ({int: ModuleHandler(lambda c: {})}, TypeError),
        ({nn.Linear: lambda c: {}}, TypeError),
        ({nn.Linear: ModuleHandler(None)}, TypeError),  # type: ignore[arg-type]
        ({nn.Linear: ModuleHandler(lambda c: {}, subtree_metrics={"macs"})}, ValueError),  # type: ignore[arg-type]
        ({nn.Linear: ModuleHandler(lambda c: {}, subtree_metrics=frozenset({"operator_flops"}))}, ValueError),
    ],
)
def test_bad_custom_modules_are_rejected_before_the_model_runs(custom, error):
    model = Spy()
    with pytest.raises(error):
        crawl_module(model, (2,), custom_modules=custom)
    assert model.calls == 0


# ---- matching and results -------------------------------------------------------------------------------------------


def test_the_closest_class_wins_whatever_the_mapping_order():
    generic, specific = Counted({"module_flops": 1}), Counted({"module_flops": 2})
    report = crawl_module(
        Block(), (4,), custom_modules={nn.Module: ModuleHandler(generic), nn.Linear: ModuleHandler(specific)}
    )
    assert rows(report, "a")[0]["metrics"]["module_flops"]["value"] == 2
    assert rows(report, "")[0]["metrics"]["module_flops"]["value"] == 1
    assert specific.calls == 2 and generic.calls == 1


def test_numbers_are_complete_and_omitted_fields_fall_back_to_formulas_on_leaves():
    # Linear(4, 4) on (1, 4): formula FLOPs = 4 * (2*4 - 1) + 4 = 32, MACs = 16
    handler = Counted({"macs": 7, "dmas": 2.5})
    report = crawl_module(nn.Linear(4, 4), (4,), custom_modules={nn.Linear: ModuleHandler(handler)})
    metrics = report["layers"][0]["metrics"]
    assert metrics["macs"]["value"] == 7 and isinstance(metrics["macs"]["value"], int)
    assert metrics["dmas"]["value"] == 2.5
    assert metrics["macs"]["method"].startswith("custom_module_handler:")
    assert metrics["macs"]["method"].endswith("Counted")
    assert metrics["module_flops"] == {
        "status": "complete",
        "value": 32,
        "known_value": 32,
        "unit": "FLOPs",
        "scope": "module_call",
        "method": "torchscan_module_formula",
    }
    assert report["layers"][0]["metric_ownership"] == {"macs": "module_call", "dmas": "module_call"}
    assert report["diagnostics"] == []


def test_a_real_handler_value_is_summed_into_the_total():
    # Linear(4, 4) on (2, 4): 8 * (2*4 - 1) + 8 = 64 FLOPs; the handler's 1000.5 is added, not dropped
    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    model = nn.Sequential(nn.Linear(4, 4), Double())
    handler = ModuleHandler(lambda c: {"module_flops": 1000.5, "macs": 0.25, "dmas": 3})
    report = crawl_module(model, args=(torch.rand(2, 4),), custom_modules={Double: handler})
    totals = report["totals"]
    assert totals["module_flops"]["status"] == "complete"
    assert totals["module_flops"]["value"] == 64 + 1000.5
    assert totals["macs"]["value"] == 32 + 0.25  # Linear MACs: 8 outputs * 4 inputs
    assert totals["dmas"]["value"] == (8 + 20 + 8) + 3 and isinstance(totals["dmas"]["value"], int)


def test_a_real_total_past_the_float_range_is_unavailable_with_a_diagnostic():
    # two rows of 1.7e308 sum to inf: no JSON number, so the total is unavailable and says why
    model = nn.Sequential(nn.Identity(), nn.Identity())
    handler = ModuleHandler(lambda c: {"module_flops": 1.7e308})
    report = crawl_module(model, (4,), custom_modules={nn.Identity: handler})
    assert report["totals"]["module_flops"]["status"] == "unavailable"
    assert [(d["code"], d["metric"]) for d in report["diagnostics"]] == [("module_metric_error", "module_flops")]
    json.dumps(report, allow_nan=False)


def test_an_explicit_none_never_falls_back():
    report = crawl_module(
        nn.Linear(4, 4), (4,), custom_modules={nn.Linear: ModuleHandler(lambda c: {"module_flops": None})}
    )
    metric = report["layers"][0]["metrics"]["module_flops"]
    assert metric["status"] == "unavailable" and metric["value"] is None
    assert ("custom_metric_unavailable", "module_flops", "") in codes(report)
    assert report["totals"]["module_flops"]["status"] == "unavailable"


def test_structured_results_keep_their_status_and_method():
    partial = {"status": "partial", "value": None, "known_value": 5, "unit": "FLOPs", "scope": "x", "method": "mine"}
    report = crawl_module(Block(), (4,), custom_modules={Block: ModuleHandler(lambda c: {"module_flops": partial})})
    metric = rows(report, "")[0]["metrics"]["module_flops"]
    assert metric["status"] == "partial" and metric["known_value"] == 5 and metric["value"] is None
    assert metric["method"].endswith(":mine") and metric["scope"] == "module_call"
    assert ("custom_metric_partial", "module_flops", "") in codes(report)


@pytest.mark.parametrize(
    "bad",
    [
        -1,
        True,
        math.nan,
        math.inf,
        "12",
        {"status": "complete", "value": 1, "known_value": 2, "unit": "FLOPs", "scope": "s", "method": "m"},
        {"status": "complete", "value": 1, "known_value": 1, "unit": "MACs", "scope": "s", "method": "m"},
        {"status": "complete", "value": 1, "known_value": 1, "unit": "FLOPs", "scope": "", "method": "m"},
        {"status": "done", "value": 1, "known_value": 1, "unit": "FLOPs", "scope": "s", "method": "m"},
        {"status": "complete", "value": 1, "known_value": 1, "unit": "FLOPs", "scope": "s"},
    ],
)
def test_one_invalid_field_is_unavailable_and_the_others_are_kept(bad):
    report = crawl_module(
        Block(), (4,), custom_modules={Block: ModuleHandler(lambda c: {"module_flops": bad, "macs": 3})}
    )
    metrics = rows(report, "")[0]["metrics"]
    assert metrics["module_flops"]["status"] == "unavailable"
    assert metrics["macs"]["value"] == 3
    assert ("custom_metric_invalid", "module_flops", "") in codes(report)


def test_a_raising_callback_makes_every_requested_metric_unavailable():
    def boom(call):
        raise ValueError("no estimate today")

    report = crawl_module(Block(), (4,), custom_modules={Block: ModuleHandler(boom)})
    metrics = rows(report, "")[0]["metrics"]
    for name in ("module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"):
        assert metrics[name]["status"] == "unavailable"
    errors = [d for d in report["diagnostics"] if d["code"] == "custom_handler_error"]
    assert len(errors) == 6
    assert errors[0]["message"].endswith("boom: ValueError: no estimate today")


@pytest.mark.parametrize("result", [[1, 2], 12, {"flops": 3}, {"module_flops": 1, 3: 4}])
def test_invalid_result_shapes_are_reported(result):
    report = crawl_module(Block(), (4,), custom_modules={Block: ModuleHandler(lambda c: result)})
    assert {d["code"] for d in report["diagnostics"]} == {"custom_handler_invalid"}
    assert rows(report, "")[0]["metrics"]["module_flops"]["status"] == "unavailable"


def test_keyboard_interrupt_in_a_callback_propagates_and_restores_the_model():
    def interrupt(call):
        raise KeyboardInterrupt

    model = Block().train()
    with pytest.raises(KeyboardInterrupt):
        crawl_module(model, (4,), custom_modules={Block: ModuleHandler(interrupt)})
    assert model.training and model.a.training
    assert not model._forward_hooks and not model.a._forward_pre_hooks
    assert torch._C._len_torch_dispatch_stack() == 0


# ---- ownership ------------------------------------------------------------------------------------------------------


def test_subtree_ownership_covers_children_and_skips_their_callbacks():
    inner = Counted({"module_flops": 100})
    outer = Counted({"module_flops": 1000, "macs": 10})
    report = crawl_module(
        Block(),
        (4,),
        custom_modules={
            Block: ModuleHandler(outer, subtree_metrics=frozenset({"module_flops", "macs"})),
            nn.Linear: ModuleHandler(inner),
        },
    )
    root = rows(report, "")[0]
    assert root["metrics"]["module_flops"]["scope"] == "subtree"
    assert root["metric_ownership"] == {"module_flops": "subtree", "macs": "subtree"}
    child = rows(report, "a")[0]
    assert "module_flops" not in child["metrics"] and "macs" not in child["metrics"]
    assert child["metric_owners"]["module_flops"] == {"path": "", "call_index": 0}
    # dmas is not owned: the child's callback still answers for it (or its formula does)
    assert child["metrics"]["dmas"]["method"] == "torchscan_module_formula"
    assert inner.calls == 2 and outer.calls == 1
    assert report["totals"]["module_flops"]["value"] == 1000
    assert report["totals"]["macs"]["value"] == 10


def test_full_ownership_means_descendant_callbacks_never_run():
    every = frozenset({"module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"})
    inner = Counted({"module_flops": 1})
    report = crawl_module(
        Block(),
        (4,),
        custom_modules={
            Block: ModuleHandler(lambda c: {name: 1 for name in every}, subtree_metrics=every),
            nn.Linear: ModuleHandler(inner),
        },
    )
    assert inner.calls == 0
    assert set(rows(report, "a")[0]["metrics"]) == {"calls", "operator_flops"}


def test_an_omitted_owned_field_stays_unavailable_without_fallback():
    report = crawl_module(
        Block(),
        (4,),
        custom_modules={Block: ModuleHandler(lambda c: {}, subtree_metrics=frozenset({"macs"}))},
    )
    assert rows(report, "")[0]["metrics"]["macs"]["status"] == "unavailable"
    assert "macs" not in rows(report, "a")[0]["metrics"]
    assert ("custom_metric_unavailable", "macs", "") in codes(report)


def test_nested_owners_the_outer_one_wins():
    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.block = Block()

        def forward(self, x):
            return self.block(x)

    inner = Counted({"module_flops": 5})
    report = crawl_module(
        Outer(),
        (4,),
        custom_modules={
            Outer: ModuleHandler(lambda c: {"module_flops": 50}, subtree_metrics=frozenset({"module_flops"})),
            Block: ModuleHandler(inner, subtree_metrics=frozenset({"module_flops"})),
        },
    )
    assert rows(report, "block")[0]["metric_owners"]["module_flops"]["path"] == ""
    assert rows(report, "block.a")[0]["metric_owners"]["module_flops"]["path"] == ""
    # the inner handler is still asked for the five metrics nobody owns; what it
    # says about the covered one is ignored
    assert inner.calls == 1
    assert "module_flops" not in rows(report, "block")[0]["metrics"]
    assert report["totals"]["module_flops"]["value"] == 50


def test_ownership_follows_the_dynamic_call_a_shared_child_outside_the_owner_counts():
    shared = nn.Linear(4, 4)

    class Owner(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = shared

        def forward(self, x):
            return self.lin(x)

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.owner = Owner()
            self.after = shared

        def forward(self, x):
            return self.after(self.owner(x))

    report = crawl_module(
        Net(),
        (4,),
        custom_modules={Owner: ModuleHandler(lambda c: {"module_flops": 7}, subtree_metrics=frozenset({"module_flops"}))},
    )
    calls = rows(report, "owner.lin")
    assert [c["call_index"] for c in calls] == [0, 1]
    assert "module_flops" not in calls[0]["metrics"]  # inside the owner: covered
    assert calls[1]["metrics"]["module_flops"]["value"] == 32  # outside: counted by its formula
    assert report["totals"]["module_flops"]["value"] == 7 + 32


# ---- execution rules ------------------------------------------------------------------------------------------------


def test_a_failed_forward_never_calls_its_callback():
    class Fails(nn.Module):
        def forward(self, x):
            raise RuntimeError("broken")

    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fails = Fails()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            try:
                self.fails(x)
            except RuntimeError:
                pass
            return self.lin(x)

    handler = Counted({"module_flops": 1})
    report = crawl_module(Parent(), (4,), custom_modules={Fails: ModuleHandler(handler)})
    assert handler.calls == 0
    row = rows(report, "fails")[0]
    assert row["output"] == {"kind": "failed"}
    assert row["metrics"]["module_flops"]["method"] == "forward_failed"


def test_callbacks_see_the_real_call_and_their_tensor_work_is_not_counted():
    seen = []

    def estimate(call: ModuleCall):
        seen.append(call)
        (call.args[0] @ call.args[0].T).sum()  # tensor work inside the callback
        return {"module_flops": 1}

    x = torch.ones(2, 4)
    report = crawl_module(Block(), args=(x,), kwargs={}, custom_modules={Block: ModuleHandler(estimate)})
    (call,) = seen
    assert call.args[0] is x and dict(call.kwargs) == {} and isinstance(call.module, Block)
    assert call.output.shape == (2, 4)
    # the forward's own operators: two addmm (2*2*4*4 = 64 each) and one relu (8)
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 128, "aten.relu": 8}


def test_structure_mode_runs_no_callback():
    handler = Counted({"module_flops": 1})
    report = crawl_module(Block(), (4,), mode="structure", custom_modules={Block: ModuleHandler(handler)})
    assert handler.calls == 0
    assert set(report["layers"][0]["metrics"]) == {"calls"}


def test_strict_passes_when_handlers_complete_every_metric():
    class Opaque(nn.Module):
        def forward(self, x):
            return x * 2

    every = {"module_flops": 4, "macs": 0, "dmas": 8, "receptive_field": 1, "effective_stride": 1, "effective_padding": 0}
    report = crawl_module(Opaque(), (4,), strict=True, custom_modules={Opaque: ModuleHandler(lambda c: every)})
    assert report["totals"]["module_flops"]["value"] == 4
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(Opaque(), (4,), strict=True)


def test_the_complex_valued_extension_example():
    """The reference's complex-layer example: a complex multiply is 6 real FLOPs
    (4 mul + 2 add), a complex add 2, so a complex dot product of length n costs
    6n + 2(n - 1) real FLOPs per output."""

    class ComplexLinear(nn.Module):
        def __init__(self, n_in: int, n_out: int) -> None:
            super().__init__()
            self.weight = nn.Parameter(torch.randn(n_out, n_in, dtype=torch.complex64))

        def forward(self, x):
            return x @ self.weight.T

    def estimate(call: ModuleCall):
        n_in = call.module.weight.shape[1]
        outputs = call.output.numel()
        return {"module_flops": outputs * (6 * n_in + 2 * (n_in - 1)), "macs": outputs * n_in}

    model = ComplexLinear(8, 3)
    report = crawl_module(model, (8,), dtype=torch.complex64, custom_modules={ComplexLinear: ModuleHandler(estimate)})
    # 3 outputs * (6*8 + 2*7) = 3 * 62 = 186
    assert report["totals"]["module_flops"] == {
        "status": "complete",
        "value": 186,
        "known_value": 186,
        "unit": "FLOPs",
        "scope": "forward",
        "method": f"custom_module_handler:{__name__}.test_the_complex_valued_extension_example.<locals>.estimate",
    }
    assert report["totals"]["macs"]["value"] == 24
    json.dumps(report, allow_nan=False)


# ---- an atomic nn.Transformer root --------------------------------------------------------------------------------


def _tiny_transformer():
    torch.manual_seed(0)
    model = nn.Transformer(4, 2, 1, 1, 8, dropout=0.0)
    return model, (torch.rand(3, 1, 4), torch.rand(2, 1, 4))


def test_a_handler_that_runs_inside_an_nn_transformer_expands_its_boundary():
    model, args = _tiny_transformer()
    assert [layer["path"] for layer in crawl_module(model, args=args)["layers"]] == [""]  # atomic
    handler = Counted({"module_flops": 1})
    report = crawl_module(model, args=args, custom_modules={nn.TransformerEncoder: ModuleHandler(handler)})
    root = report["layers"][0]
    assert len(report["layers"]) > 1 and handler.calls == 1
    for name in ("module_flops", "macs", "dmas"):
        assert root["metrics"][name]["status"] == "unavailable"
        assert root["metrics"][name]["method"] == "expanded_atomic_boundary"
    boundary = [d["metric"] for d in report["diagnostics"] if d["code"] == "expanded_atomic_boundary"]
    assert sorted(boundary) == ["dmas", "macs", "module_flops"]
    # the encoder: the caller's number for module_flops, the built-in inclusive formula for the rest
    # (contract: one encoder layer E=4 H=2 F=8 on 3 tokens is 504 MACs; the stack's final LayerNorm adds
    # N*(1+W) = 12*2 = 24)
    encoder = rows(report, "encoder")[0]
    assert encoder["metrics"]["module_flops"]["value"] == 1
    assert encoder["metrics"]["macs"]["value"] == 504 + 24
    assert encoder["metric_ownership"]["macs"] == "subtree"
    assert rows(report, "encoder.layers.0")[0]["metric_owners"]["macs"]["path"] == "encoder"


def test_a_matching_descendant_that_never_runs_keeps_the_inclusive_formula():
    # MultiheadAttention's out_proj is a NonDynamicallyQuantizableLinear that is never called as a module
    from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

    model, args = _tiny_transformer()
    handler = Counted({"module_flops": 1})
    report = crawl_module(
        model, args=args, custom_modules={NonDynamicallyQuantizableLinear: ModuleHandler(handler)}
    )
    assert handler.calls == 0
    root = report["layers"][0]
    # the contract's pinned full one-layer Transformer: 2694 FLOPs, 1088 MACs, 2144 DMAs
    assert [root["metrics"][m]["value"] for m in ("module_flops", "macs", "dmas")] == [2694, 1088, 2144]
    assert root["metric_ownership"]["module_flops"] == "subtree"
    below = report["layers"][1:]
    assert below and all("module_flops" not in layer["metrics"] for layer in below)
    assert all(layer["metric_owners"]["module_flops"]["path"] == "" for layer in below)
    assert report["totals"]["module_flops"]["value"] == 2694
    assert not [d for d in report["diagnostics"] if d["code"] == "expanded_atomic_boundary"]


def test_each_total_names_the_methods_of_its_own_rows():
    # a handler that answers module_flops only: that total names both methods, macs and dmas only the formula's
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    report = crawl_module(model, (4,), custom_modules={nn.Linear: ModuleHandler(lambda call: {"module_flops": 1})})
    for key in ("module_flops", "macs", "dmas"):
        methods = sorted({row["metrics"][key]["method"] for row in report["layers"] if key in row["metrics"]})
        expected = methods[0] if len(methods) == 1 else f"sum_module_estimates[{', '.join(methods)}]"
        assert report["totals"][key]["method"] == expected
    assert report["totals"]["macs"]["method"] == "torchscan_module_formula"
    assert report["totals"]["module_flops"]["method"].startswith("sum_module_estimates[custom_module_handler:")


def test_a_handler_on_a_transformer_layer_keeps_its_own_value_and_the_children_theirs():
    # Contract 1.3 step 3: a caller handler runs first; the built-in handler of the native Transformer family
    # then answers what it did not supply, and only those inclusive fields take the descendants' estimates over.
    # A value the handler supplies is the layer's own (module_call): the children keep theirs for it. (The
    # children were covered for every metric before, so the handler's 1 FLOP stood alone in a complete total.)
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    report = crawl_module(layer, (4, 8), custom_modules={nn.TransformerEncoderLayer: ModuleHandler(lambda c: {"module_flops": 1})})
    rows = {row["path"]: row for row in report["layers"]}
    root = rows.pop("")
    assert root["metric_ownership"]["module_flops"] == "module_call"
    assert root["metrics"]["module_flops"]["value"] == 1
    flops = {path: row["metrics"]["module_flops"]["value"] for path, row in rows.items()}
    # Linear(8, 16) on (1, 4, 8): 4*16 outputs of 2*8 - 1 operations plus the bias; LayerNorm(8): 6N + 2R + 2N
    assert flops["linear1"] == flops["linear2"] == 4 * 16 * (2 * 8 - 1) + 4 * 16
    assert flops["norm1"] == flops["norm2"] == 6 * 32 + 2 * 4 + 2 * 32
    assert flops["dropout1"] == flops["dropout"] == flops["dropout2"] == 0
    x = torch.rand(1, 4, 8)
    attention = crawl_module(layer.self_attn, args=(x, x, x), kwargs={"need_weights": False})
    assert flops["self_attn"] == attention["totals"]["module_flops"]["value"]
    total = report["totals"]["module_flops"]
    assert total["status"] == "complete" and total["value"] == 1 + sum(flops.values())
    # The fields the handler left to the built-in stay inclusive and own the subtree, as without a handler.
    plain = crawl_module(layer, (4, 8))
    for name in ("macs", "dmas"):
        assert root["metric_ownership"][name] == "subtree"
        assert report["totals"][name] == plain["totals"][name]
        assert all(row["metric_owners"][name] == {"path": "", "call_index": 0} for row in rows.values())
    assert report["diagnostics"] == []
