"""crawl_module / summary contract (contract 1.1-1.3, 5.1)."""

from __future__ import annotations

import copy
import functools
import json
import re

import pytest
import torch
from torch import nn

import torchscan
from torchscan import IncompleteAnalysisError, crawl_module, measure_flops, summary
from torchscan.process import measure_peak_memory

from conftest import CountingModule, UnsupportedLeaf, assert_nothing_left, json_roundtrip, training_flags

X = torch.rand(1, 4)


# ---------------------------------------------------------------------------------------------------------------
# Input validation: raised before the model runs
# ---------------------------------------------------------------------------------------------------------------

BAD_CRAWL_CALLS = [
    pytest.param(dict(input_shape=(4,), args=(X,)), ValueError, "Exactly one", id="both-sources"),
    pytest.param(dict(input_shape=(4,), kwargs={"x": X}), ValueError, "Exactly one", id="shape-and-kwargs"),
    pytest.param(dict(), ValueError, "Exactly one", id="no-source"),
    pytest.param(dict(args=(X,), dtype=torch.float64), ValueError, None, id="dtype-with-args"),
    pytest.param(dict(args=(X,), device="cpu"), ValueError, None, id="device-with-args"),
    pytest.param(dict(kwargs={"x": X}, device="cpu"), ValueError, None, id="device-with-kwargs"),
    pytest.param(dict(args=[X]), TypeError, None, id="args-list"),
    pytest.param(dict(args=X), TypeError, None, id="args-tensor"),
    pytest.param(dict(args=(X,), kwargs={1: X}), TypeError, None, id="kwargs-int-key"),
    pytest.param(dict(args=(X,), kwargs=[("x", X)]), TypeError, None, id="kwargs-not-mapping"),
    pytest.param(dict(input_shape=[[4]]), TypeError, None, id="shape-list-of-lists"),
    pytest.param(dict(input_shape=[4]), TypeError, None, id="shape-list-of-ints"),
    pytest.param(dict(input_shape=[]), TypeError, None, id="shape-empty-list"),
    pytest.param(dict(input_shape=(4.0,)), TypeError, None, id="shape-float-dim"),
    pytest.param(dict(input_shape=("4",)), TypeError, None, id="shape-str-dim"),
    pytest.param(dict(input_shape=[(4,), (4,)], dtype=[torch.float32]), ValueError, None, id="dtype-too-short"),
    pytest.param(dict(input_shape=(4,), dtype=[torch.float32, torch.float32]), ValueError, None, id="dtype-too-long"),
    pytest.param(dict(input_shape=(4,), dtype=["float32"]), TypeError, None, id="dtype-entry-str"),
    pytest.param(dict(input_shape=(4,), dtype="float32"), TypeError, None, id="dtype-str"),
    pytest.param(dict(input_shape=(4,), mode="fast"), ValueError, None, id="unknown-mode"),
    pytest.param(dict(input_shape=(3, -4)), ValueError, r"input_shape dimensions must be >= 0, got \(3, -4\)", id="shape-negative"),
    pytest.param(dict(input_shape=[(4,), (2, -1)]), ValueError, "input_shape", id="shape-negative-second"),
    pytest.param(dict(input_shape=(4,), device="gpu"), ValueError, "device 'gpu' is not a device name", id="device-bad-name"),
    pytest.param(dict(input_shape=(4,), device=0.5), TypeError, "device must be a str", id="device-float"),
    pytest.param(
        dict(input_shape=(4,), device="cuda:7"),
        RuntimeError,
        "device 'cuda:7': CUDA",
        id="device-cuda-missing",
        marks=pytest.mark.skipif(torch.cuda.device_count() > 7, reason="this machine has a cuda:7"),
    ),
    pytest.param(dict(input_shape=(4,), strict="yes"), TypeError, "strict must be a bool, got 'yes'", id="strict-str"),
    pytest.param(dict(input_shape=(4,), strict=None), TypeError, "strict must be a bool", id="strict-none"),
    pytest.param(dict(input_shape=(4,), strict=2), TypeError, "strict must be a bool", id="strict-two"),
    pytest.param(
        dict(input_shape=(4,), custom_mapping={torch.ops.aten.addmm.default: lambda *a, **k: 0}),
        TypeError,
        "operator packets",
        id="overload-key",
    ),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_CRAWL_CALLS)
def test_crawl_module_rejects_bad_arguments_before_running(kwargs, error, match):
    model = CountingModule()
    flags = training_flags(model)
    with pytest.raises(error, match=match):
        crawl_module(model, **kwargs)
    assert model.calls == 0
    assert training_flags(model) == flags
    assert_nothing_left(model)


def test_what_the_reference_accepts_stays_accepted():
    # strict=1 and strict=0 work in the reference; a zero dimension is an empty input, not a mistake; meta holds
    # the generated inputs of a model on any device
    model = nn.Linear(4, 2)
    assert crawl_module(model, (4,), strict=1)["totals"]["module_flops"]["status"] == "complete"
    assert crawl_module(model, (4,), strict=0)["totals"]["parameters"]["value"] == 10
    assert crawl_module(model, (0, 4))["inputs"]["args"][0]["shape"] == [1, 0, 4]
    meta = crawl_module(nn.Linear(4, 2, device="meta"), (4,), device="meta")
    assert meta["inputs"]["args"][0]["device"] == "meta"
    # Linear(4, 2) on one row: 2 outputs of 2*4 - 1 operations plus the bias
    assert meta["totals"]["module_flops"]["value"] == 2 * (2 * 4 - 1) + 2
    assert crawl_module(model, (4,), device=torch.device("cpu"))["inputs"]["args"][0]["device"] == "cpu"


@pytest.mark.parametrize(("kwargs", "error", "match"), BAD_CRAWL_CALLS[:6])
def test_summary_rejects_bad_arguments_before_running(kwargs, error, match, capsys):
    model = CountingModule()
    with pytest.raises(error, match=match):
        summary(model, **kwargs)
    assert model.calls == 0
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param(dict(max_depth=-1), ValueError, id="negative-max-depth"),
        pytest.param(dict(max_depth=2), ValueError, id="max-depth-deeper-than-the-model"),
        pytest.param(dict(wrap_mode="start"), ValueError, id="bad-wrap-mode"),
        pytest.param(dict(wrap_mode="MID"), ValueError, id="wrap-mode-case"),
    ],
)
def test_summary_rejects_display_arguments_before_running(kwargs, error, capsys):
    model = CountingModule()
    with pytest.raises(error):
        summary(model, (4,), **kwargs)
    assert model.calls == 0
    assert capsys.readouterr().out == ""
    assert_nothing_left(model)


@pytest.mark.parametrize("wrap_mode", ["mid", "end", None])
def test_summary_accepts_documented_wrap_modes(wrap_mode, capsys):
    model = CountingModule()
    summary(model, (4,), wrap_mode=wrap_mode)
    assert model.calls == 1
    assert "Total params: 10" in capsys.readouterr().out  # Linear(4, 2): 8 + 2


def test_measure_flops_rejects_overload_keys_before_running():
    calls = []
    with pytest.raises(TypeError, match="operator packets"):
        measure_flops(lambda: calls.append(1), custom_mapping={torch.ops.aten.sin.default: lambda *a, **k: 0})
    assert calls == []


@pytest.mark.parametrize("workload", [None, 42, "torch.sin", torch.ones(2)])
def test_non_callable_workloads_are_rejected(workload):
    with pytest.raises(TypeError):
        measure_flops(workload)
    with pytest.raises(TypeError):
        measure_peak_memory(workload, device="cpu")


def test_peak_memory_rejects_unsupported_device_before_running():
    calls = []
    with pytest.raises(NotImplementedError):
        measure_peak_memory(lambda: calls.append(1), device="meta")
    assert calls == []


def test_non_module_is_rejected():
    with pytest.raises(TypeError):
        crawl_module(lambda x: x, args=(X,))


# ---------------------------------------------------------------------------------------------------------------
# Inputs: caller values forwarded unchanged, generated inputs as documented
# ---------------------------------------------------------------------------------------------------------------


class Recorder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list = []
        self.lin = nn.Linear(4, 4)

    def forward(self, x, *, mask=None, extra=None):
        self.seen.append((x, mask, extra, torch.is_grad_enabled(), [m.training for m in self.modules()]))
        return self.lin(x)


def test_a_model_type_name_utf8_cannot_encode_is_refused_before_the_forward():
    """A class whose qualified name holds a lone surrogate: refused before the model runs (it was a ValueError
    from the report's check after the forward), as a module name that UTF-8 cannot encode is."""
    odd = type("Odd", (CountingModule,), {"__qualname__": "Odd\udc80"})
    model = odd()
    with pytest.raises(UnicodeEncodeError):
        crawl_module(model, args=(torch.ones(1, 4),))
    assert model.calls == 0
    assert_nothing_left(model)


def _module_attribute_raising(error: BaseException) -> type:
    """A CountingModule class whose metaclass makes reading the class's __module__ raise ``error``."""

    class Meta(type):
        @property
        def __module__(cls):  # type: ignore[override]
            raise error

    return Meta("Raising", (CountingModule,), {})


def test_a_class_module_that_cannot_be_read_is_the_crawls_error_before_the_forward():
    """Whether a class is a model library's (to trust its forward) reads its __module__: an error there, out of
    memory included, is raised before the forward, with nothing left; it was taken as 'no library'."""
    import torch.ao.quantization  # noqa: F401 - one of the libraries whose classes the crawl recognises

    model = nn.Sequential(_module_attribute_raising(MemoryError())())
    with pytest.raises(MemoryError):
        crawl_module(model, args=(torch.ones(1, 4),))
    assert model[0].calls == 0
    assert_nothing_left(model)
    # a class without a __module__ at all is simply no library's class: the crawl goes on
    model = nn.Sequential(_module_attribute_raising(AttributeError("__module__"))())
    report = crawl_module(model, args=(torch.ones(1, 4),))
    assert model[0].calls == 1 and [layer["path"] for layer in report["layers"]] == ["", "0", "0.lin"]
    assert_nothing_left(model)


def test_caller_args_are_forwarded_unchanged():
    model = Recorder()
    x = torch.rand(3, 4, dtype=torch.float64, requires_grad=True)  # float64 into a float32 model: no cast allowed
    model.lin.double()
    mask = torch.tensor([True, False, True])
    extra = {"k": [1, 2]}
    crawl_module(model, args=(x,), kwargs={"mask": mask, "extra": extra})
    ((seen_x, seen_mask, seen_extra, grad_enabled, flags),) = model.seen
    assert seen_x is x and seen_mask is mask and seen_extra is extra
    assert seen_x.dtype == torch.float64 and seen_x.shape == (3, 4) and seen_x.requires_grad
    assert extra == {"k": [1, 2]}
    assert grad_enabled is False  # the forward runs under no_grad
    assert flags == [False, False]  # every module in eval during the forward
    assert model.training and model.lin.training  # and restored afterwards


def test_keyword_only_call():
    model = Recorder()
    x = torch.rand(2, 4)
    report = crawl_module(model, kwargs={"x": x})
    assert model.seen[0][0] is x
    assert report["inputs"]["args"] == []
    assert report["inputs"]["kwargs"]["x"]["shape"] == [2, 4]
    assert report["layers"][0]["input"]["kwargs"]["x"]["shape"] == [2, 4]


class TwoInputs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seen = []

    def forward(self, a, b):
        self.seen.append((a, b))
        return a.float().sum() + b.float().sum()


def test_generated_inputs_batch_dtype_and_values():
    model = TwoInputs()
    report = crawl_module(model, [(2, 3), (5,)], dtype=[torch.bool, torch.int64])
    ((a, b),) = model.seen
    assert a.shape == (1, 2, 3) and a.dtype == torch.bool and bool(a.all())  # bool -> ones
    assert b.shape == (1, 5) and b.dtype == torch.int64 and not bool(b.any())  # integer -> zeros
    assert report["inputs"]["source"] == "generated"
    assert [m["shape"] for m in report["inputs"]["args"]] == [[1, 2, 3], [1, 5]]
    assert [m["dtype"] for m in report["inputs"]["args"]] == ["torch.bool", "torch.int64"]


def test_generated_inputs_follow_model_dtype_and_device_override():
    model = nn.Linear(4, 2).double()
    report = crawl_module(model, (4,))
    assert report["inputs"]["args"][0]["dtype"] == "torch.float64"
    assert report["context"]["dtypes"] == ["torch.float64"]
    model = TwoInputs()  # parameterless: cpu / float32 defaults
    crawl_module(model, [(2,), (2,)], device="cpu")
    a, b = model.seen[0]
    assert a.dtype == torch.float32 and a.device.type == "cpu"
    assert float(a.min()) >= 0.0 and float(a.max()) < 1.0  # torch.rand


# ---------------------------------------------------------------------------------------------------------------
# Restoration: flags, hooks, dispatch modes, exceptions, BatchNorm stats
# ---------------------------------------------------------------------------------------------------------------


class Mixed(nn.Module):
    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.fail = fail
        self.conv = nn.Conv2d(3, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.drop = nn.Dropout(0.5)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 6 * 6, 3))
        self.error = RuntimeError("forward failed on purpose")

    def forward(self, x):
        y = self.drop(self.bn(self.conv(x)))
        if self.fail:
            raise self.error
        return self.head(y)


def _mixed(fail: bool = False) -> Mixed:
    model = Mixed(fail)
    model.train()
    model.drop.eval()
    model.head[1].eval()
    with torch.no_grad():  # non-trivial running statistics
        model.bn.running_mean.uniform_(-1, 1)
        model.bn.running_var.uniform_(0.5, 2)
    return model


def test_training_flags_hooks_and_modes_restored_after_success():
    model = _mixed()
    flags = training_flags(model)
    stats = copy.deepcopy(model.bn.state_dict())
    report = crawl_module(model, (3, 8, 8))
    assert training_flags(model) == flags
    assert report["context"]["training_before"] is True
    assert_nothing_left(model)
    for key, value in model.bn.state_dict().items():
        assert torch.equal(value, stats[key]), key  # eval mode: running stats untouched
    assert [layer["path"] for layer in report["layers"]] == ["", "conv", "bn", "drop", "head", "head.0", "head.1"]


def test_training_before_reports_root_flag():
    model = _mixed().eval()
    report = crawl_module(model, (3, 8, 8))
    assert report["context"]["training_before"] is False
    assert not any(training_flags(model).values())


@pytest.mark.parametrize("mode", ["full", "structure"])
def test_forward_exception_propagates_and_everything_is_restored(mode):
    model = _mixed(fail=True)
    flags = training_flags(model)
    stats = copy.deepcopy(model.bn.state_dict())
    with pytest.raises(RuntimeError) as info:
        crawl_module(model, (3, 8, 8), mode=mode)
    assert info.value is model.error
    assert training_flags(model) == flags
    assert_nothing_left(model)
    for key, value in model.bn.state_dict().items():
        assert torch.equal(value, stats[key]), key
    # the model is still usable and the crawl works again
    model.fail = False
    report = crawl_module(model, (3, 8, 8), mode=mode)
    assert len(report["layers"]) == 7
    assert_nothing_left(model)


def test_keyboard_interrupt_restores_everything():
    class Interrupting(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            self.lin(x)
            raise KeyboardInterrupt

    model = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        crawl_module(model, (4,))
    assert model.training and model.lin.training
    assert_nothing_left(model)


class _InterruptedInstall:
    """A crawl session whose install is followed by a Ctrl-C: CPython delivers a pending SIGINT as a call
    returns, so the real install has run when KeyboardInterrupt is raised."""

    def __init__(self, *args, **kwargs):
        self.real = torchscan._engine.Crawl(*args, **kwargs)

    def install(self, *args):
        self.real.install(*args)
        raise KeyboardInterrupt

    def __getattr__(self, name):
        return getattr(self.real, name)


@pytest.mark.parametrize("entry", ["crawl_module", "measure_flops"])
def test_an_interrupt_as_install_returns_restores_everything(monkeypatch, entry):
    import types

    import torchscan.crawler
    import torchscan.flops

    engine = types.SimpleNamespace(**{k: getattr(torchscan._engine, k) for k in dir(torchscan._engine)})
    engine.Crawl = _InterruptedInstall
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.rand(1, 4)
    with monkeypatch.context() as patch:
        patch.setattr(torchscan.crawler, "_engine", engine)
        patch.setattr(torchscan.flops, "_engine", engine)
        with pytest.raises(KeyboardInterrupt):
            if entry == "crawl_module":
                crawl_module(model, args=(x,))
            else:
                measure_flops(lambda: model(x), modules=model)
    assert training_flags(model) == {"": True, "0": True, "1": True}
    assert_nothing_left(model)


def test_an_interrupt_as_install_returns_with_saved_activations(monkeypatch):
    import types

    import torchscan.crawler

    engine = types.SimpleNamespace(**{k: getattr(torchscan._engine, k) for k in dir(torchscan._engine)})
    engine.Crawl = _InterruptedInstall
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    model[1].eval()
    with torch.no_grad(), monkeypatch.context() as patch:
        patch.setattr(torchscan.crawler, "_engine", engine)
        with pytest.raises(KeyboardInterrupt):
            crawl_module(model, args=(torch.rand(1, 4),), saved_activations=True)
        assert not torch.is_grad_enabled()
    assert training_flags(model) == {"": True, "0": True, "1": False}
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None
    assert_nothing_left(model)


def test_uninstall_restores_flags_without_running_module_setattr():
    # nn.Module.__setattr__ is Python code, where a Ctrl-C could land between two modules; the flags are
    # written with the generic setter, so a class's __setattr__ does not run for them
    class Watching(nn.Linear):
        seen: list = []

        def __setattr__(self, name, value):
            Watching.seen.append(name)
            super().__setattr__(name, value)

    model = nn.Sequential(Watching(4, 4))
    Watching.seen.clear()
    crawl_module(model, (4,))
    assert model[0].training and Watching.seen.count("training") == 1  # eval() sets it; the restore does not


def test_strict_failure_restores_everything():
    model = nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf())
    model[0].eval()
    flags = training_flags(model)
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(model, (4,), strict=True)
    assert training_flags(model) == flags
    assert_nothing_left(model)


def test_preexisting_user_hooks_survive():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    calls = []
    handle = model[0].register_forward_hook(lambda m, i, o: calls.append("post"))
    pre = model.register_forward_pre_hook(lambda m, i: calls.append("pre"))
    crawl_module(model, (4,))
    assert calls == ["pre", "post"]
    assert len(model[0]._forward_hooks) == 1 and len(model._forward_pre_hooks) == 1
    handle.remove()
    pre.remove()
    assert_nothing_left(model)


def test_a_result_replaced_by_a_user_forward_hook_is_what_the_row_records():
    # module(x) returns what the forward hooks return; the row and its formulas describe that value, as
    # under per-module hooks registered after the user's (the reference's way of observing)
    model = nn.Sequential(nn.Linear(4, 6), nn.ReLU())
    handle = model[0].register_forward_hook(lambda m, i, o: o[:, :3])
    try:
        report = crawl_module(model, (4,))
    finally:
        handle.remove()
    linear, relu = report["layers"][1], report["layers"][2]
    assert linear["output"]["shape"] == [1, 3] and relu["input"]["args"][0]["shape"] == [1, 3]
    assert linear["metrics"]["module_flops"]["value"] == 2 * 4 * 3  # Linear formula: 2 * in * out elements
    assert relu["output"]["shape"] == [1, 3]
    assert_nothing_left(model)


def test_a_layer_deep_copied_inside_forward_is_a_working_unobserved_copy():
    # copy.deepcopy copies the instance dict (our forward wrapper) and the hook tables (our hooks); the copy is
    # not in the model, so it gets no row and its work is its caller's own operator FLOPs
    class Copying(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)  # observed through a forward wrapper
            self.hooked = nn.Linear(4, 4)  # observed through hooks (it has a user forward hook)
            self.handle = self.hooked.register_forward_hook(lambda m, i, o: o * 2)
            self.copies: list[nn.Module] = []

        def forward(self, x):
            twin, twin2 = copy.deepcopy(self.lin), copy.deepcopy(self.hooked)
            self.copies = [twin, twin2]
            with torch.no_grad():
                twin.weight.zero_()
            return self.lin(x) + twin(x) + twin2(x) + self.hooked(x)

    model, x = Copying(), torch.randn(1, 4)
    report = crawl_module(model, args=(x,))
    assert [(row["name"], row["call_index"]) for row in report["layers"]] == [
        ("copying", 0),
        ("lin", 0),
        ("hooked", 0),
    ]
    own = {row["name"]: row["metrics"]["operator_flops"]["value"] for row in report["layers"]}
    # Linear(4, 4) on one row: 2*4*4 = 32; the hook's doubling 4; the three sums 3*4
    assert own == {"copying": 32 + (32 + 4) + 3 * 4, "lin": 32, "hooked": 32 + 4}
    twin, twin2 = model.copies
    assert torch.equal(twin(x), twin.bias.expand(1, 4))  # the copy's own (zeroed) weight, not lin's
    assert torch.equal(twin2(x), model.hooked(x))
    model.handle.remove()
    assert_nothing_left(model)


def test_global_forward_hooks_replacing_results_are_seen_on_every_row():
    model = nn.Sequential(nn.Linear(4, 6), nn.Sequential(nn.ReLU()))

    def first_two(module, args, output):
        return output[:, :2] if isinstance(module, nn.Linear) else None

    handle = torch.nn.modules.module.register_module_forward_hook(first_two)
    try:
        report = crawl_module(model, (4,), mode="structure")
    finally:
        handle.remove()
    assert [row["output"]["shape"] for row in report["layers"]] == [[1, 2]] * 4
    assert_nothing_left(model)


# ---------------------------------------------------------------------------------------------------------------
# A child whose exception the parent catches
# ---------------------------------------------------------------------------------------------------------------


class Boom(nn.Module):
    def forward(self, x):
        raise ValueError("boom")


class Catching(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.boom = Boom()
        self.lin = nn.Linear(4, 2)

    def forward(self, x):
        try:
            self.boom(x)
        except ValueError:
            pass
        return self.lin(x)


def test_caught_child_failure_is_reported():
    model = Catching()
    report = crawl_module(model, (4,))
    rows = {layer["path"]: layer for layer in report["layers"]}
    assert list(rows) == ["", "boom", "lin"]
    assert rows["boom"]["output"] == {"kind": "failed"}
    assert rows["boom"]["metrics"]["calls"]["value"] == 1
    (diag,) = [d for d in report["diagnostics"] if d["code"] == "module_forward_error"]
    assert diag["metric"] == "calls" and diag["path"] == "boom" and diag["severity"] == "warning"
    # a metric leaf that failed: its estimates are unavailable with method forward_failed
    flops = rows["boom"]["metrics"]["module_flops"]
    assert flops["status"] == "unavailable" and flops["value"] is None and flops["method"] == "forward_failed"
    # totals: the failed row is unknown, lin is known: Linear(4, 2) on (1, 4) = 2*(2*4-1) + 2 = 16
    total = report["totals"]["module_flops"]
    assert total["status"] == "partial" and total["known_value"] == 16 and total["value"] is None
    assert rows["lin"]["output"]["shape"] == [1, 2]
    with pytest.raises(IncompleteAnalysisError) as info:
        crawl_module(model, (4,), strict=True)
    assert "calls" in str(info.value)
    assert_nothing_left(model)


def test_caught_child_failure_in_structure_mode():
    model = Catching()
    report = crawl_module(model, (4,), mode="structure")
    boom = report["layers"][1]
    assert boom["output"] == {"kind": "failed"}
    assert set(boom["metrics"]) == {"calls"}
    assert [d["code"] for d in report["diagnostics"]] == ["module_forward_error"]


# ---------------------------------------------------------------------------------------------------------------
# Layer records and parameter attribution
# ---------------------------------------------------------------------------------------------------------------


class SharedBlock(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = nn.Linear(4, 4)
        self.stage = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))
        self.register_buffer("scale", torch.ones(3))
        self.unused = nn.Linear(7, 7)  # never called: only in model totals

    def forward(self, x):
        return self.stage(self.block(self.block(x)))


def test_layer_records_and_shared_attribution():
    model = SharedBlock()
    report = crawl_module(model, (4,))
    keys = [(layer["path"], layer["call_index"]) for layer in report["layers"]]
    assert keys == [("", 0), ("block", 0), ("block", 1), ("stage", 0), ("stage.0", 0), ("stage.1", 0)]
    names = [layer["name"] for layer in report["layers"]]
    assert names == ["sharedblock", "block", "block", "stage", "0", "1"]
    assert [layer["depth"] for layer in report["layers"]] == [0, 1, 1, 1, 2, 2]
    assert [layer["type"] for layer in report["layers"]] == [
        "SharedBlock",
        "Linear",
        "Linear",
        "Sequential",
        "ReLU",
        "Linear",
    ]
    rows = report["layers"]
    # the root owns only its direct buffer (3 float32 elements = 12 bytes), no direct parameters
    assert rows[0]["parameters"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": False}
    assert rows[0]["buffers"] == {"elements": 3, "bytes": 12, "shared": False}
    # first call of block: 16 + 4 parameters = 20, 80 bytes
    assert rows[1]["parameters"] == {"trainable": 20, "frozen": 0, "bytes": 80, "shared": False}
    # second call of the same instance adds nothing and is marked shared
    assert rows[2]["parameters"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}
    assert rows[3]["parameters"]["trainable"] == 0  # Sequential has no direct parameters
    assert rows[5]["parameters"] == {"trainable": 10, "frozen": 0, "bytes": 40, "shared": False}
    # totals count unique tensors of the whole model, including the uncalled module (7*7 + 7 = 56)
    totals = report["totals"]
    assert totals["parameters"]["value"] == 20 + 10 + 56
    assert totals["parameters"]["value"] == sum(p.numel() for p in model.parameters())
    assert totals["buffer_elements"]["value"] == 3 and totals["buffer_bytes"]["value"] == 12
    assert totals["parameter_bytes"]["value"] == 86 * 4
    # each call has its own metrics: Linear(4, 4) on (1, 4): 4*(2*4-1) + 4 = 32 FLOPs, per call
    assert rows[1]["metrics"]["module_flops"]["value"] == 32
    assert rows[2]["metrics"]["module_flops"]["value"] == 32
    for row in rows:
        assert row["metrics"]["calls"] == {
            "status": "complete",
            "value": 1,
            "known_value": 1,
            "unit": "calls",
            "scope": "module_call",
            "method": "pytorch_hook",
        }


def test_shared_tensor_across_modules_and_frozen_parameters():
    first = nn.Linear(4, 4)
    second = nn.Linear(4, 4)
    second.weight = first.weight  # tied weight
    second.bias.requires_grad_(False)
    model = nn.Sequential(first, second)
    report = crawl_module(model, (4,))
    rows = report["layers"]
    assert rows[1]["parameters"] == {"trainable": 20, "frozen": 0, "bytes": 80, "shared": False}
    # the tied weight was already seen: only the frozen bias (4) is new
    assert rows[2]["parameters"] == {"trainable": 0, "frozen": 4, "bytes": 16, "shared": True}
    totals = report["totals"]
    assert totals["parameters"]["value"] == 24  # 16 + 4 + 4, the tied weight once
    assert totals["trainable_parameters"]["value"] == 20
    assert totals["frozen_parameters"]["value"] == 4


# ---------------------------------------------------------------------------------------------------------------
# Structure mode
# ---------------------------------------------------------------------------------------------------------------


def test_structure_mode():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())
    report = crawl_module(model, (3, 32, 32), mode="structure")
    assert report["context"]["analysis_mode"] == "structure"
    for layer in report["layers"]:
        assert set(layer["metrics"]) == {"calls"}
    assert report["layers"][1]["output"]["shape"] == [1, 8, 30, 30]
    totals = report["totals"]
    assert totals["parameters"]["value"] == 224
    for name in ("module_flops", "macs", "dmas", "operator_flops"):
        assert totals[name]["status"] == "unavailable", name
        assert totals[name]["value"] is None and totals[name]["known_value"] is None
        assert totals[name]["method"] == "not_requested", name
    flop = report["operator_flops"]
    assert flop["context"]["method"] == "not_requested"
    assert flop["by_operator"] == {} and flop["by_module"] == {}
    assert flop["ignored_operators"] == {} and flop["diagnostics"] == []
    assert flop["total"]["status"] == "unavailable" and flop["total"]["method"] == "not_requested"
    assert report["diagnostics"] == []
    # strict passes: not-requested totals are not incomplete
    assert crawl_module(model, (3, 32, 32), mode="structure", strict=True) == report
    # and full mode has no analysis_mode key
    assert "analysis_mode" not in crawl_module(model, (3, 32, 32))["context"]


def test_structure_mode_strict_passes_even_with_unsupported_leaf():
    model = nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf())
    report = crawl_module(model, (4,), mode="structure", strict=True)
    assert report["diagnostics"] == []
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(model, (4,), strict=True)


# ---------------------------------------------------------------------------------------------------------------
# Metadata and privacy
# ---------------------------------------------------------------------------------------------------------------


class Anything(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, options, *, flag=None, n=3, items=(), blob=None):
        return self.lin(x), None, [x, (x, 7)]


def test_metadata_kinds_and_privacy():
    model = Anything()
    x = torch.full((1, 4), 12345.25)
    secret_path = "/home/user/secret.txt"
    options = {"alpha": x, 3: 12345.25, secret_path: x}
    report = crawl_module(
        model,
        args=(x, options),
        kwargs={"flag": None, "n": 12345.25, "items": [x, (x, secret_path)], "blob": object()},
    )
    text = json.dumps(report, allow_nan=False)
    assert "12345" not in text
    assert "secret" not in text and "/home/user" not in text
    assert "object at 0x" not in text

    tensor = {"kind": "tensor", "shape": [1, 4], "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    args = report["inputs"]["args"]
    assert args[0] == tensor
    mapping = args[1]
    assert mapping["kind"] == "mapping" and mapping["type"] == "dict"
    kept = [item["key"] for item in mapping["items"] if "key" in item]
    assert kept == ["alpha", 3]  # identifier and int keys only, in order
    assert [item["key_type"] for item in mapping["items"] if "key" in item] == ["str", "int"]
    assert all(item.get("key") != secret_path for item in mapping["items"])
    assert mapping["items"][0]["value"] == tensor
    assert mapping["items"][1]["value"] == {"kind": "scalar", "type": "float"}
    kwargs = report["inputs"]["kwargs"]
    assert kwargs["flag"] == {"kind": "none"}
    assert kwargs["n"] == {"kind": "scalar", "type": "float"}
    assert kwargs["items"] == {
        "kind": "list",
        "items": [tensor, {"kind": "tuple", "items": [tensor, {"kind": "scalar", "type": "str"}]}],
    }
    assert kwargs["blob"]["kind"] == "object" and kwargs["blob"]["type"] == "object"
    # the root row describes the same call, and the output tree
    root = report["layers"][0]
    assert root["input"] == {"args": args, "kwargs": kwargs}
    assert root["output"] == {
        "kind": "tuple",
        "items": [
            tensor,
            {"kind": "none"},
            {
                "kind": "list",
                "items": [tensor, {"kind": "tuple", "items": [tensor, {"kind": "scalar", "type": "int"}]}],
            },
        ],
    }
    assert json_roundtrip(report) == report


@pytest.mark.parametrize(
    ("value", "type_name"),
    [(True, "bool"), (3, "int"), (2.5, "float"), (1 + 2j, "complex"), ("s", "str"), (b"b", "bytes")],
)
def test_scalar_metadata(value, type_name):
    class Echo(nn.Module):
        def forward(self, x, v):
            return x

    report = crawl_module(Echo(), args=(torch.ones(1), value))
    assert report["inputs"]["args"][1] == {"kind": "scalar", "type": type_name}


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
@pytest.mark.parametrize("mode", ["structure", "full"])
def test_nested_tensor_metadata_has_no_shape(layout, mode):
    # strided nested tensors raise on .shape; jagged ones are a subclass with a symbolic dimension
    class Sin(nn.Module):
        def forward(self, x):
            return x.sin()

    nested = torch.nested.nested_tensor([torch.ones(2, 4), torch.ones(3, 4)], layout=layout)
    report = crawl_module(Sin(), args=(nested,), mode=mode)
    expected = {"kind": "nested_tensor", "dtype": "torch.float32", "device": "cpu", "requires_grad": False}
    assert report["inputs"]["args"][0] == expected
    assert report["layers"][0]["input"]["args"][0] == expected
    assert report["layers"][0]["output"] == expected
    if mode == "full":
        # the operator counter reads the same tensor: no shape, so the sin it ran is not counted
        flops = report["operator_flops"]
        assert flops["total"]["status"] == "partial" and flops["total"]["known_value"] == 0
        assert [(d["code"], d["operator"]) for d in flops["diagnostics"]] == [
            ("unsupported_operator_formula", "aten.sin")
        ]
        assert "nested" in flops["diagnostics"][0]["message"]


def test_report_shape_and_json_roundtrip():
    model = SharedBlock()
    report = crawl_module(model, (4,))
    assert set(report) == {"schema_version", "context", "inputs", "layers", "operator_flops", "totals", "diagnostics"}
    context = report["context"]
    assert context["torch_version"] == torch.__version__
    assert context["torchscan_version"] == torchscan.__version__
    assert context["model_type"] == f"{SharedBlock.__module__}.SharedBlock"
    assert context["execution_mode"] == "evaluation_no_grad"
    assert context["devices"] == ["cpu"] and context["dtypes"] == ["torch.float32"]
    assert set(report["totals"]) == {
        "parameters",
        "trainable_parameters",
        "frozen_parameters",
        "parameter_bytes",
        "buffer_elements",
        "buffer_bytes",
        "module_flops",
        "operator_flops",
        "macs",
        "dmas",
    }
    for name in ("parameters", "trainable_parameters", "frozen_parameters", "buffer_elements"):
        assert report["totals"][name]["unit"] == "elements" and report["totals"][name]["scope"] == "model"
        assert report["totals"][name]["method"] == "pytorch"
    for layer in report["layers"]:
        assert set(layer) >= {
            "path",
            "call_index",
            "name",
            "depth",
            "type",
            "input",
            "output",
            "parameters",
            "buffers",
            "metrics",
        }
    assert json_roundtrip(report) == report
    assert report["totals"]["operator_flops"] == report["operator_flops"]["total"]


def test_reports_are_deterministic():
    torch.manual_seed(0)
    model = SharedBlock()
    assert crawl_module(model, (4,)) == crawl_module(model, (4,))


# ---------------------------------------------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------------------------------------------


class Deep(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU())
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.pool(self.features(x)))


def test_summary_returns_the_crawl_report(capsys):
    model = Deep()
    printed = summary(model, (3, 8, 8))
    capsys.readouterr()
    assert printed == crawl_module(model, (3, 8, 8))


def _table_rows(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("=")) + 1
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("="))
    return lines[start:end]


def test_summary_max_depth_limits_printed_rows(capsys):
    model = Deep()
    full = summary(model, (3, 8, 8))
    rows = _table_rows(capsys.readouterr().out)
    assert len(rows) == 8  # root, features, features.0, features.1, pool, head, head.0, head.1
    assert [r.split()[0] for r in rows][:2] == ["deep", "├─features"]

    limited = summary(model, (3, 8, 8), max_depth=1)
    out = capsys.readouterr().out
    rows = _table_rows(out)
    assert [r.split()[0] for r in rows] == ["deep", "├─features", "├─pool", "├─head"]
    assert "└─" not in out
    assert len(limited["layers"]) == len(full["layers"]) == 8  # the returned report is complete
    assert "Total params: 122" in out  # totals unchanged: conv 4*27+4 = 112, linear 4*2+2 = 10

    summary(model, (3, 8, 8), max_depth=0)
    assert [r.split()[0] for r in _table_rows(capsys.readouterr().out)] == ["deep"]


def test_summary_depth_two_rows_use_nested_prefix(capsys):
    summary(Deep(), (3, 8, 8), max_depth=2)
    rows = _table_rows(capsys.readouterr().out)
    assert [r.split()[0] for r in rows] == [
        "deep",
        "├─features",
        "|",
        "|",
        "├─pool",
        "├─head",
        "|",
        "|",
    ]
    assert rows[2].startswith("|    └─0")
    assert rows[7].startswith("|    └─1")


def test_summary_max_depth_deeper_than_model_raises(capsys):
    model = Deep()
    with pytest.raises(ValueError):
        summary(model, (3, 8, 8), max_depth=3)
    assert_nothing_left(model)


def test_summary_structure_mode_prints_unavailable_compute(capsys):
    summary(nn.Conv2d(3, 8, 3), (3, 32, 32), mode="structure")
    out = capsys.readouterr().out
    assert "Total params: 224" in out
    assert "388.80" not in out


def test_summary_receptive_field_columns(capsys):
    summary(nn.Conv2d(3, 8, 3, stride=2, padding=1), (3, 32, 32), receptive_field=True, effective_rf_stats=True)
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("Layer"))
    assert re.split(r"\s{2,}", header.strip())[-3:] == ["Receptive field", "Effective stride", "Effective padding"]
    row = next(line for line in out.splitlines() if line.startswith("conv2d"))
    # rf 3, stride 2, padding 1 for a single 3x3/2 conv with padding 1
    assert row.split()[-3:] == ["3", "2", "1"]


def test_summary_prints_diagnostic_count(capsys):
    summary(nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf()), (4,))
    out = capsys.readouterr().out
    # unsupported_module_metric on module_flops, macs, dmas and one receptive-field diagnostic
    assert "Diagnostics: 4 (inspect report['diagnostics'])" in out
    assert "Module-formula forward FLOPs: known 32.00 FLOPs" in out  # Linear(4,4) on (1,4): 4*7 + 4


# ---------------------------------------------------------------------------------------------------------------
# Unsupported leaves and native-subclass detection
# ---------------------------------------------------------------------------------------------------------------


def test_unknown_leaf_is_partial_never_zero():
    model = nn.Sequential(nn.Linear(4, 4), UnsupportedLeaf())
    report = crawl_module(model, (4,))
    leaf = report["layers"][2]
    for name in ("module_flops", "macs", "dmas"):
        metric = leaf["metrics"][name]
        assert metric["status"] == "partial" and metric["value"] is None and metric["known_value"] == 0, name
        assert metric["scope"] == "module_call" and metric["method"] == "torchscan_module_formula"
    for name in ("receptive_field", "effective_stride", "effective_padding"):
        assert leaf["metrics"][name]["status"] == "unavailable", name
    diags = [d for d in report["diagnostics"] if d.get("path") == "1"]
    assert {d["metric"] for d in diags} == {"module_flops", "macs", "dmas", "receptive_field"}
    assert {d["code"] for d in diags} == {"unsupported_module_metric"}
    assert all("Module type not supported" in d["message"] for d in diags)
    total = report["totals"]["module_flops"]
    # Linear(4,4) on (1,4): 4*(2*4-1) + 4 = 32 known; the leaf adds an unknown amount
    assert total == {
        "status": "partial",
        "value": None,
        "known_value": 32,
        "unit": "FLOPs",
        "scope": "forward",
        "method": "torchscan_module_formula",
    }
    # the operator report still counts the leaf's multiply: 4 elements * 1 = 4, plus addmm 2*1*4*4 = 32
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 32, "aten.mul": 4}


class KeepsForward(nn.Linear):
    """A subclass that only adds a method: still a Linear."""

    def describe(self) -> str:
        return "linear"


class OverridesForward(nn.Linear):
    """A subclass with its own forward: its work is no longer Linear's."""

    def forward(self, x):
        return super().forward(x) * 2


def test_native_subclass_detection():
    kept = crawl_module(KeepsForward(4, 4), (4,))
    assert kept["layers"][0]["metrics"]["module_flops"]["status"] == "complete"
    assert kept["layers"][0]["metrics"]["module_flops"]["value"] == 32  # 4*(2*4-1) + 4
    assert kept["diagnostics"] == []

    overridden = crawl_module(OverridesForward(4, 4), (4,))
    metric = overridden["layers"][0]["metrics"]["module_flops"]
    assert metric["status"] == "partial" and metric["known_value"] == 0
    assert "unsupported_module_metric" in {d["code"] for d in overridden["diagnostics"]}
    # the message says why a Linear is "not supported": its forward is not Linear's
    why = "Module type not supported: OverridesForward (its forward is not the native class's"
    assert all(d["message"].startswith(why) for d in overridden["diagnostics"])
    # a forward replaced on the instance (accelerate's hooks, functools.partial) likewise
    patched = nn.Linear(4, 4)
    patched.forward = functools.partial(patched.forward)
    report = crawl_module(patched, (4,))
    assert report["layers"][0]["metrics"]["module_flops"]["status"] == "partial"
    assert report["diagnostics"][0]["message"].startswith("Module type not supported: Linear (its forward is not")


def test_strict_passes_on_fully_supported_model():
    report = crawl_module(Deep(), (3, 8, 8), strict=True)
    assert report["diagnostics"] == []
    for name in ("module_flops", "macs", "dmas", "operator_flops"):
        assert report["totals"][name]["status"] == "complete", name


def test_incomplete_analysis_error_is_exported_and_carries_report():
    assert issubclass(torchscan.IncompleteAnalysisError, RuntimeError)
    with pytest.raises(IncompleteAnalysisError) as info:
        crawl_module(Catching(), (4,), strict=True)
    report = info.value.report
    assert [layer["path"] for layer in report["layers"]] == ["", "boom", "lin"]
    # totals not complete: module_flops, macs, dmas (partial). Diagnostic metrics: calls.
    assert str(info.value) == "Analysis is incomplete for: calls, dmas, macs, module_flops."


# ---------------------------------------------------------------------------------------------------------------
# Modules that change during the forward; pathological structures
# ---------------------------------------------------------------------------------------------------------------


def test_lazy_module_is_counted_after_materialization():
    model = nn.LazyLinear(3)
    report = crawl_module(model, (5,))
    assert report["totals"]["parameters"]["value"] == 18  # materialized during the call: 5*3 + 3
    metrics = report["layers"][0]["metrics"]
    # Linear(5, 3) on (1, 5): O*(2*5 - 1) + O = 3*9 + 3 = 30 FLOPs; in*O = 15 MACs
    assert metrics["module_flops"]["value"] == 30
    assert metrics["macs"]["value"] == 15


def test_subtree_owning_rows_attribute_what_parameters_and_buffers_list():
    # MultiheadAttention and the Transformer family own their subtree: their row carries every tensor that
    # module.parameters() / module.buffers() list (each module and tensor once), and later rows inside see them
    # as shared
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    layer.linear1.weight.requires_grad_(False)
    layer.norm1.register_buffer("extra", torch.zeros(3))
    layer.again = layer.linear2  # one module under two names: counted once
    model = nn.Sequential(nn.Linear(8, 8), layer)
    report = crawl_module(model, (4, 8), mode="structure")
    rows = {row["path"]: row for row in report["layers"]}
    frozen = layer.linear1.weight.numel()
    total = sum(p.numel() for p in layer.parameters())
    assert rows["1"]["parameters"] == {"trainable": total - frozen, "frozen": frozen, "bytes": 4 * total, "shared": False}
    assert rows["1"]["buffers"] == {"elements": 3, "bytes": 12, "shared": False}
    assert rows["1.self_attn"]["parameters"] == {"trainable": 0, "frozen": 0, "bytes": 0, "shared": True}
    assert report["totals"]["parameters"]["value"] == sum(p.numel() for p in model.parameters())


def test_every_row_with_an_empty_path_is_named_after_its_own_type():
    class Odd(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            setattr(self, "", nn.Linear(4, 4))  # nn.Module accepts an empty child name

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return getattr(self, "")(x)

    report = crawl_module(Odd(), (4,))
    assert [(row["path"], row["name"], row["type"]) for row in report["layers"]] == [
        ("", "odd", "Odd"),
        ("", "linear", "Linear"),
    ]


def test_aliased_module_is_one_path_with_two_calls():
    class Aliased(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.alias = self.lin  # the same instance registered twice

        def forward(self, x):
            return self.alias(self.lin(x))

    report = crawl_module(Aliased(), (4,))
    assert [(row["path"], row["call_index"], row["parameters"]["shared"]) for row in report["layers"]] == [
        ("", 0, False),
        ("lin", 0, False),
        ("lin", 1, True),
    ]


def test_recursive_module_calls():
    class Recursive(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, depth=3):
            x = self.lin(x)
            return self(x, depth - 1) if depth > 1 else x

    report = crawl_module(Recursive(), (4,))
    keys = [(row["path"], row["call_index"]) for row in report["layers"]]
    # pre-hook (call) order: root 0, lin 0, root 1, lin 1, root 2, lin 2
    assert keys == [("", 0), ("lin", 0), ("", 1), ("lin", 1), ("", 2), ("lin", 2)]
    assert report["totals"]["module_flops"]["value"] == 3 * 32  # three Linear(4, 4) calls of 32 FLOPs


def test_self_referencing_and_very_deep_inputs_do_not_crash():
    class Echo(nn.Module):
        def forward(self, x, extra):
            return x

    cycle: list = []
    cycle.append(cycle)
    deep: list = []
    cur = deep
    for _ in range(100_000):
        nxt: list = []
        cur.append(nxt)
        cur = nxt
    for extra in (cycle, deep):
        report = crawl_module(Echo(), args=(torch.ones(1), extra), mode="structure")
        json.dumps(report, allow_nan=False)
        assert report["inputs"]["args"][1]["kind"] == "list"


def test_recursion_error_in_a_very_deep_model_restores_everything():
    model = nn.Linear(2, 2)
    for _ in range(400):  # train() recurses once per level; a forward needs several frames per level
        model = nn.Sequential(model)
    model.train()
    with pytest.raises(RecursionError):
        model(torch.ones(1, 2))  # the plain forward cannot run either
    with pytest.raises(RecursionError):
        crawl_module(model, (2,))
    modules = list(model.modules())
    assert all(m.training for m in modules)
    assert all(not m._forward_hooks and not m._forward_pre_hooks for m in modules)


def test_nested_crawl_inside_a_forward():
    inner = nn.Linear(4, 4)
    inner_reports = []

    class Outer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            inner_reports.append(crawl_module(inner, args=(x,)))
            return self.lin(x)

    outer = Outer()
    report = crawl_module(outer, (4,))
    assert [row["path"] for row in report["layers"]] == ["", "lin"]
    (inner_report,) = inner_reports
    assert [row["path"] for row in inner_report["layers"]] == [""]
    assert inner_report["operator_flops"]["by_operator"] == {"aten.addmm": 32}  # 2*1*4*4
    assert_nothing_left(outer)
    assert_nothing_left(inner)


def test_children_called_with_keyword_inputs_get_formulas():
    class KeywordCalls(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 2)
            self.conv = nn.Conv1d(2, 2, 1)

        def forward(self, x):
            return self.conv(input=self.lin(input=x).unsqueeze(-1))

    report = crawl_module(KeywordCalls(), (4,))
    rows = {layer["path"]: layer["metrics"] for layer in report["layers"]}
    # Linear(4, 2) on (1, 4): 2*(2*4 - 1) + 2 = 16 ; Conv1d(2, 2, 1) on (1, 2, 1): O = 2, 2*(2*2*1 - 1 + 1) = 8
    assert rows["lin"]["module_flops"]["value"] == 16 and rows["lin"]["module_flops"]["status"] == "complete"
    assert rows["conv"]["module_flops"]["value"] == 8
    assert report["diagnostics"] == []


@pytest.mark.parametrize(("dtype", "size"), [(torch.bfloat16, 2), (torch.float16, 2), (torch.float64, 8)])
def test_parameter_bytes_follow_dtype(dtype, size):
    report = crawl_module(nn.Linear(4, 2).to(dtype), (4,))
    assert report["inputs"]["args"][0]["dtype"] == str(dtype)
    assert report["layers"][0]["parameters"] == {"trainable": 10, "frozen": 0, "bytes": 10 * size, "shared": False}
    assert report["totals"]["parameter_bytes"]["value"] == 10 * size
    assert report["context"]["dtypes"] == [str(dtype)]


def test_modules_removed_or_added_during_the_forward():
    class Dynamic(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.b = nn.Linear(4, 4)

        def forward(self, x):
            y = self.b(self.a(x))
            del self.b  # removed from the model while hooked
            self.c = nn.Linear(4, 4)  # added while the crawl runs
            return self.c(y)

    model = Dynamic()
    removed = model.b
    report = crawl_module(model, (4,))
    assert [layer["path"] for layer in report["layers"]] == ["", "a", "b"]
    assert not removed._forward_hooks and not removed._forward_pre_hooks
    assert removed.training and model.c.training and model.training
    assert_nothing_left(model)


def test_user_hooks_registered_during_the_crawl_survive():
    class Registering(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.calls: list = []
            self.handles: list = []

        def forward(self, x):
            if not self.handles:
                self.handles.append(self.a.register_forward_hook(lambda m, i, o: self.calls.append("post")))
                self.handles.append(self.a.register_forward_pre_hook(lambda m, i: self.calls.append("pre")))
            return self.a(x)

    model = Registering()
    crawl_module(model, (4,))
    assert model.calls == ["pre", "post"]
    assert len(model.a._forward_hooks) == 1 and len(model.a._forward_pre_hooks) == 1
    model(torch.ones(1, 4))
    assert model.calls == ["pre", "post", "pre", "post"]
    for handle in model.handles:
        handle.remove()
    assert_nothing_left(model)


def test_concurrent_crawls_in_threads_are_independent():
    import threading

    torch.manual_seed(0)
    models = [nn.Sequential(nn.Conv2d(3, w, 3), nn.ReLU(), nn.Conv2d(w, w, 3)) for w in (4, 6)]
    inputs = [torch.rand(2, 3, 16, 16) for _ in models]
    expected = [crawl_module(m, args=(x,)) for m, x in zip(models, inputs)]
    expected_flops = [measure_flops(lambda m=m, x=x: m(x)) for m, x in zip(models, inputs)]
    mismatches: list = []
    errors: list = []

    def run(i: int) -> None:
        try:
            for _ in range(10):
                if crawl_module(models[i], args=(inputs[i],)) != expected[i]:
                    mismatches.append(("crawl", i))
                if measure_flops(lambda: models[i](inputs[i])) != expected_flops[i]:
                    mismatches.append(("flops", i))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(models))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and mismatches == []
    for model in models:
        assert_nothing_left(model)


def test_mapping_key_rules():
    import types

    class Echo(nn.Module):
        def forward(self, x, options):
            return x

    options = types.MappingProxyType({"a": 1, (1, 2): 2, "b c": 3, "_ok": 4, "ünï": 5, True: 6, -3: 7, "": 8, "x.y": 9})
    report = crawl_module(Echo(), args=(torch.ones(1), options), mode="structure")
    meta = report["inputs"]["args"][1]
    assert meta["kind"] == "mapping" and meta["type"] == "mappingproxy"
    items = meta["items"]
    assert len(items) == 9  # every value is described; only the unsafe keys are dropped
    assert [item.get("key", None) for item in items] == ["a", None, None, "_ok", "ünï", True, -3, None, None]
    assert [item["key_type"] for item in items] == ["str", "tuple", "str", "str", "str", "bool", "int", "str", "str"]


def test_int_mapping_keys_outside_int64_keep_only_their_type():
    # Documented choice: report integers are 64-bit, so a key beyond that range
    # is dropped like a non-identifier string key; its type stays.
    class Echo(nn.Module):
        def forward(self, x, options):
            return x

    report = crawl_module(Echo(), args=(torch.ones(1), {2**70: 1, 7: 2}), mode="structure")
    big, small = report["inputs"]["args"][1]["items"]
    assert "key" not in big and big["key_type"] == "int"
    assert small["key"] == 7 and small["key_type"] == "int"


def test_keyword_names_follow_the_mapping_key_rule():
    # f(**{"/home/user/notes.txt": x}) is legal Python: such names would carry private text
    # (and a NUL or a lone surrogate), so only identifier names are kept, in the inputs and in rows.
    class Inner(nn.Module):
        def forward(self, x, **kw):
            return x

    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x, **kw):
            return self.inner(x, **{"/home/user/notes.txt": 1, "a\0b": x, "\udc80": 2, "ok": x})

    x = torch.ones(2, 3)
    report = crawl_module(Outer(), args=(x,), kwargs={"/home/user/secret.txt": x, "fine_name": 3}, mode="structure")
    assert report["inputs"]["kwargs"] == {"fine_name": {"kind": "scalar", "type": "int"}}
    rows = {row["path"]: row for row in report["layers"]}
    assert rows[""]["input"]["kwargs"] == {"fine_name": {"kind": "scalar", "type": "int"}}
    assert list(rows["inner"]["input"]["kwargs"]) == ["ok"]
    assert "home" not in json.dumps(report)


def test_a_list_emptied_while_it_is_described_is_described_as_it_was():
    # Describing an item can run Python code (here a mapping's items()) that changes the list
    # being described; the list is described from a snapshot taken before.
    holder = []

    class Shrinking(dict):
        def items(self):
            holder.clear()
            return [("a", 1)]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.echo = nn.Identity()

        def forward(self, x):
            holder[:] = [Shrinking(), *[torch.ones(2) for _ in range(200)]]
            return self.echo(holder)

    report = crawl_module(Model(), args=(torch.ones(1),), mode="structure")
    items = report["layers"][1]["input"]["args"][0]["items"]
    assert len(items) == 201 and items[0]["kind"] == "mapping" and items[200]["shape"] == [2]
    assert holder == []


def test_a_mapping_whose_items_list_is_emptied_while_described_is_described_as_it_was():
    # items() may return a list that describing a value changes (the same hazard as for lists).
    shared = []

    class Clearer(dict):
        def items(self):
            shared.clear()
            return [("k", 1)]

    class Shared(dict):
        def items(self):
            return shared

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.echo = nn.Identity()

        def forward(self, x):
            shared[:] = [("a", Clearer()), *[(f"b{i}", [torch.ones(2)]) for i in range(50)]]
            return self.echo(Shared())

    report = crawl_module(Model(), args=(torch.ones(1),), mode="structure")
    items = report["layers"][1]["input"]["args"][0]["items"]
    assert len(items) == 51 and items[0]["key"] == "a" and items[50]["value"]["items"][0]["shape"] == [2]


def test_a_container_sharing_its_children_is_described_in_bounded_time():
    # Every level holds its child twice: 2^depth values unless the description is bounded
    # (a self-referencing list would never finish). Past the bound, values keep their type only.
    shared = []
    shared += [shared, shared]

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.echo = nn.Identity()

        def forward(self, x):
            return self.echo(shared)

    report = crawl_module(Model(), args=(torch.ones(1),), mode="structure")
    meta = report["layers"][1]["output"]
    depth = 0
    while meta.get("kind") == "list":  # depth first: the first branch takes the budget
        meta = meta["items"][0]
        depth += 1
    assert meta == {"kind": "object", "type": "list"}
    assert depth == 65  # the depth bound, on the first branch
    described = json.dumps(report["layers"][1]["output"]).count('"kind"')
    assert 10_000 <= described <= 10_000 + 2 * 65  # the budget, plus the type-only values past it


def test_an_unencodable_type_name_raises_its_own_error():
    # A __qualname__ is any str; one UTF-8 cannot encode surfaces as that error, not as a MemoryError.
    class Odd:
        pass

    Odd.__qualname__ = "\udc80odd"

    class Model(nn.Module):
        def forward(self, x):
            return Odd()

    model = Model()
    with pytest.raises(UnicodeEncodeError):
        crawl_module(model, args=(torch.ones(1),), mode="structure")
    assert_nothing_left(model)


# ---------------------------------------------------------------------------------------------------------------
# How calls are observed: forward wrappers (hook-free fast call path), hooks where PyTorch needs them
# ---------------------------------------------------------------------------------------------------------------


def test_forward_wrappers_keep_signatures_patches_and_identity():
    seen = {}

    class Inspecting(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x, scale: float = 1.0):
            import inspect

            # code that reads a child's forward while the crawl runs sees the real callable's properties
            seen["params"] = list(inspect.signature(self.lin.forward).parameters)
            seen["func"] = self.lin.forward.__func__
            return self.lin(x) * scale

    model = Inspecting()
    patched = nn.Linear(4, 4)
    original = patched.forward
    patched.forward = lambda x: original(x) + 1  # an instance patch: not the native Linear any more
    patch = vars(patched)["forward"]
    wrapper_model = nn.Sequential(model, patched)
    report = crawl_module(wrapper_model, (4,))
    assert seen == {"params": ["input"], "func": nn.Linear.forward}
    assert [row["path"] for row in report["layers"]] == ["", "0", "0.lin", "1"]
    rows = {row["path"]: row for row in report["layers"]}
    assert rows["0.lin"]["metrics"]["module_flops"]["value"] == 4 * (2 * 4 - 1) + 4  # native Linear: 32
    assert rows["1"]["metrics"]["module_flops"]["status"] == "partial"  # the patched one is not native
    assert vars(patched)["forward"] is patch and "forward" not in vars(model.lin)
    assert_nothing_left(wrapper_model)


def test_a_forward_kept_after_the_crawl_only_forwards():
    kept = []

    class Keeping(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            kept.append(self.lin.forward)
            return self.lin(x)

    model = Keeping()
    crawl_module(model, (4,))
    x = torch.ones(1, 4)
    assert torch.equal(kept[0](x), model.lin(x))  # no crawl behind it any more: it just calls Linear.forward
    assert_nothing_left(model)


def test_a_forward_replaced_during_the_crawl_stays_the_callers():
    class Replacing(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            self.lin.forward = lambda x: x  # the caller's own patch, set while wrapped
            return y

    model = Replacing()
    crawl_module(model, (4,))
    assert vars(model.lin)["forward"](3) == 3
    del model.lin.forward
    assert_nothing_left(model)


def test_encoder_layers_keep_their_sub_layer_rows():
    # batch-first, even heads, eval, no_grad: nn.TransformerEncoderLayer could take PyTorch's fused path, which
    # it leaves when hooks are attached; its sub-layers run and are rows, as with per-module hooks
    layer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    model = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval()
    report = crawl_module(model, args=(torch.rand(1, 5, 8),))
    paths = [row["path"] for row in report["layers"]]
    for sub in ("self_attn", "linear1", "dropout", "linear2", "norm1", "norm2", "dropout1", "dropout2"):
        assert f"layers.0.{sub}" in paths and f"layers.1.{sub}" in paths
    assert "aten._transformer_encoder_layer_fwd" not in report["operator_flops"]["by_operator"]
    assert_nothing_left(model)


def test_direct_forward_calls_are_layer_calls():
    # a parent that calls child.forward(...) directly: the child's work happened, so it is a row
    class Direct(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            return self.lin.forward(x)

    report = crawl_module(Direct(), (4,))
    rows = {row["path"]: row for row in report["layers"]}
    assert rows["lin"]["metrics"]["module_flops"]["value"] == 2 * (2 * 4 - 1) + 2  # 16
    assert report["totals"]["module_flops"]["value"] == 16


def test_script_module_is_observed_through_hooks():
    model = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    report = crawl_module(model, (4,))
    # the children run inside TorchScript: only the root call is observable
    assert [row["path"] for row in report["layers"]] == [""]
    assert report["totals"]["parameters"]["value"] == 4 * 4 + 4
    # addmm 2*1*4*4 = 32 and relu 4
    assert report["operator_flops"]["by_operator"] == {"aten.addmm": 32, "aten.relu": 4}
    assert report["totals"]["module_flops"]["status"] != "complete"
    assert_nothing_left(model)


def test_a_script_module_in_training_gets_its_mode_back():
    # TorchScript keeps `training` in the C++ module, not the instance dict: the flag is restored through
    # the module's own setter, so the C++ flag (what the scripted Dropout reads) is training again
    model = torch.jit.script(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)))
    model.train()
    crawl_module(model, (4,))
    assert model.training and model._c.getattr("training")
    assert "training" not in vars(model)
    with torch.no_grad():
        assert bool((model(torch.ones(1000, 4)) == 0).any())  # the dropout zeroes elements again


def test_a_second_crawl_of_an_observed_module_is_refused():
    # two installed crawls on one model would mix their records and restore each other's training flags: the
    # second install is refused and leaves nothing; once the first ends, the model can be observed again
    # (tests/python/test_threads.py: the same from threads)
    from torchscan import _engine

    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout()).train()
    first, second = _engine.Crawl(model, False), _engine.Crawl(model, False)
    first.install(None, True)
    with pytest.raises(RuntimeError, match=r"already observed by another TorchScan call \(in this thread\)"):
        second.install(None, True)
    second.uninstall()  # what the Python layer does after a failed install: nothing of the first is undone
    assert not model.training and any("forward" in vars(m) or m._forward_hooks for m in model.modules())
    first.uninstall()
    assert_nothing_left(model)
    assert model.training
    second.install(None, True)
    second.uninstall()
    assert_nothing_left(model)
    assert model.training


def test_report_containers_are_never_shared():
    # the builder copies repeated records (equal metrics, empty parameter counts): every dict and list of a
    # report must still be its own object, so that editing one row never changes another
    def containers(value, seen):
        if isinstance(value, (dict, list)):
            seen.append(value)
            for item in value.values() if isinstance(value, dict) else value:
                containers(item, seen)
        return seen

    model = nn.Sequential(*[nn.Sequential(nn.Linear(8, 8), nn.ReLU()) for _ in range(6)])
    for mode in ("full", "structure"):
        report = crawl_module(model, (8,), mode=mode)
        seen = containers(report, [])
        assert len({id(c) for c in seen}) == len(seen)
        relus = [row for row in report["layers"] if row["type"] == "ReLU"]
        assert all(row["metrics"] == relus[0]["metrics"] for row in relus)
        relus[0]["metrics"]["calls"]["value"] = 99
        assert relus[1]["metrics"]["calls"]["value"] == 1


def test_repeated_tensor_kinds_are_described_exactly():
    # tensor records are shared between calls with the same shape, dtype and requires_grad: every variation
    # must still get its own record
    from torchscan import _engine

    variants = [
        torch.zeros(1, 4),
        torch.zeros(1, 4, requires_grad=True),
        torch.zeros(1, 4, dtype=torch.float64),
        torch.zeros(4, 1),
        torch.zeros(1, 4, 1),
        torch.zeros(()),
    ]
    for _ in range(2):  # the second pass reads what the first one stored
        for t in variants:
            (meta,) = _engine.describe_call((t,), {})["args"]
            assert meta == {
                "kind": "tensor",
                "shape": list(t.shape),
                "dtype": str(t.dtype),
                "device": "cpu",
                "requires_grad": t.requires_grad,
            }
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 3))
    report = crawl_module(model, (4,))
    shapes = [(row["input"]["args"][0]["shape"], row["output"]["shape"]) for row in report["layers"]]
    assert shapes == [([1, 4], [1, 3]), ([1, 4], [1, 4]), ([1, 4], [1, 4]), ([1, 4], [1, 3])]
    report["layers"][1]["output"]["shape"].append(99)  # report objects are not shared between rows
    assert report["layers"][2]["input"]["args"][0]["shape"] == [1, 4]


class ParamAlsoBuffer(nn.Module):
    """A frozen parameter of one module registered as a buffer of another that runs first."""

    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 3)
        self.second = nn.Linear(3, 2)
        self.second.weight.requires_grad_(False)
        self.first.register_buffer("borrowed", self.second.weight)

    def forward(self, x):
        return self.second(self.first(x))


def test_totals_count_a_tensor_once_parameters_first():
    # `borrowed` is attributed as a buffer of `first` (the first module to run); the totals count it once, as a
    # frozen parameter (parameters come before buffers, as parameters()/buffers() list them).
    model = ParamAlsoBuffer()
    report = crawl_module(model, (3,), mode="structure")
    rows = {layer["path"]: layer for layer in report["layers"]}
    assert rows["first"]["buffers"] == {"elements": 6, "bytes": 24, "shared": False}
    assert rows["second"]["parameters"] == {"trainable": 2, "frozen": 0, "bytes": 8, "shared": True}
    totals = report["totals"]
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert totals["trainable_parameters"]["value"] == 12 + 2 == trainable
    assert totals["frozen_parameters"]["value"] == 6
    assert totals["buffer_elements"]["value"] == 0 and totals["buffer_bytes"]["value"] == 0
    # a second crawl counts the same
    again = crawl_module(model, (3,), mode="structure")["totals"]
    assert again == totals


class ChangesItsParameters(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = nn.Linear(3, 3)
        self.second = nn.Linear(3, 3)

    def forward(self, x):
        y = self.first(x)
        self.first.weight.requires_grad_(False)  # after its layer row was attributed
        self.first.bias.data = torch.zeros(100)  # a new size behind the same Parameter object
        return self.second(y)


def test_totals_describe_the_model_at_report_time():
    model = ChangesItsParameters()
    report = crawl_module(model, args=(torch.ones(1, 3),), mode="structure")
    # the row keeps what the call saw: 9 + 3 trainable
    assert report["layers"][1]["parameters"] == {"trainable": 12, "frozen": 0, "bytes": 48, "shared": False}
    # the totals are what parameters() says after the forward: 100 + 12 trainable, 9 frozen
    totals = report["totals"]
    assert totals["trainable_parameters"]["value"] == 112
    assert totals["trainable_parameters"]["value"] == sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert totals["frozen_parameters"]["value"] == 9
    assert totals["parameter_bytes"]["value"] == 121 * 4


def test_a_module_name_with_a_nul_is_refused_before_the_model_runs():
    # paths are C strings in the engine: "a\0b" would be reported as "a", twice
    model = CountingModule()
    model.add_module("a\x00b", nn.Identity())
    model.train()
    with pytest.raises(ValueError, match="NUL character"):
        crawl_module(model, (4,))
    with pytest.raises(ValueError, match="NUL character"):
        measure_flops(lambda: model(torch.ones(1, 4)), modules=model)
    assert model.calls == 0 and model.training
    assert_nothing_left(model)


class _Chain(nn.Module):
    def __init__(self, n: int) -> None:
        super().__init__()
        self.inner = _Chain(n - 1) if n else nn.Identity()

    def forward(self, x):
        return self.inner(x)


def test_module_calls_made_while_an_input_is_described_keep_the_records_intact():
    # describing an input runs Python (here a tensor subclass's __torch_function__) that calls 41
    # modules of the same crawl, growing the table of open calls while the outer call was opening
    armed = [True]

    class Sneaky(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            if armed[0]:
                armed[0] = False
                root.side(torch.zeros(1))
            return super().__torch_function__(func, types, args, kwargs or {})

    class Root(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.side = _Chain(40)
            self.head = nn.Linear(3, 2)

        def forward(self, x):
            return self.head(x.as_subclass(torch.Tensor))

    root = Root()
    report = crawl_module(root, args=(torch.ones(1, 3).as_subclass(Sneaky),))
    rows = {(row["path"], row["call_index"]): row for row in report["layers"]}
    assert len(rows) == len(report["layers"]) == 1 + 41 + 1 + 1  # root, side chain (+ Identity), head
    assert rows[("", 0)]["output"] == {**rows[("", 0)]["output"], "kind": "tensor", "shape": [1, 2]}
    assert rows[("head", 0)]["metrics"]["module_flops"]["status"] == "complete"
    assert all(row["output"]["kind"] == "tensor" for row in report["layers"])
    assert_nothing_left(root)


def test_a_user_pre_hook_that_raises_on_a_hooked_module_closes_nothing_else():
    from torchscan import ModuleHandler

    class Parent(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
            self.fallback = nn.Linear(8, 8)

        def forward(self, x):
            try:
                return self.enc(x)
            except ValueError:
                return self.fallback(x)

    class Root(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.p = Parent()
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            return self.head(self.p(x))

    def refuse(module, args):
        raise ValueError("refused")

    model = Root()
    handle = model.p.enc.register_forward_pre_hook(refuse)
    report = crawl_module(model, (3, 8), custom_modules={Parent: ModuleHandler(lambda call: {"module_flops": 7})})
    handle.remove()
    rows = {row["path"]: row for row in report["layers"]}
    # the handler's estimate lands on its own call, not on the root's
    assert rows["p"]["metrics"]["module_flops"]["value"] == 7
    assert "module_flops" not in rows[""]["metrics"] or rows[""]["metrics"]["module_flops"]["value"] != 7
    assert all(row["output"]["kind"] == "tensor" for row in report["layers"])
    assert_nothing_left(model)


def test_an_interrupt_caught_above_a_hooked_module_marks_its_call_failed():
    class Stop(BaseException):
        pass

    class Root(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            try:
                self.enc(x)
            except Stop:
                pass
            return self.head(x)

    def stop(module, args):
        raise Stop

    model = Root()
    handle = model.enc.linear1.register_forward_pre_hook(stop)
    report = crawl_module(model, (3, 8))
    handle.remove()
    rows = {row["path"]: row for row in report["layers"]}
    # PyTorch skips always_call hooks for a BaseException: the call is closed as failed when its parent ends
    assert rows["enc"]["output"] == {"kind": "failed"}
    assert any(d["code"] == "module_forward_error" and d.get("path") == "enc" for d in report["diagnostics"])
    assert all(row["output"]["kind"] != "pending" for row in report["layers"])
    assert_nothing_left(model)


def test_formulas_follow_a_submodule_the_forward_switches_to_training():
    # Monte-Carlo dropout: the forward turns its dropout on although the crawl runs in eval
    class MCDropout(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)
            self.drop = nn.Dropout(0.5)

        def forward(self, x):
            self.drop.train()
            return self.drop(self.lin(x))

    model = MCDropout().eval()
    rows = {row["path"]: row for row in crawl_module(model, (3, 4))["layers"]}
    # training dropout: a mask and a scale per element, 2 * 3 * 4 (contract §2.1); in eval it is 0
    assert rows["drop"]["metrics"]["module_flops"]["value"] == 2 * 3 * 4
    assert not model.training and not model.drop.training  # flags restored after the crawl
    plain = {row["path"]: row for row in crawl_module(nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5)), (3, 4))["layers"]}
    assert plain["1"]["metrics"]["module_flops"]["value"] == 0


def test_modules_whose_class_controls_forward_lookup_still_get_rows():
    # a property forward, or an overridden __getattribute__, bypasses an instance attribute
    class PropertyForward(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        @property
        def forward(self):
            return self.lin

    class OwnLookup(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return self.lin(x)

        def __getattribute__(self, name):
            if name == "forward":
                return type(self).forward.__get__(self)
            return super().__getattribute__(name)

    model = nn.Sequential(PropertyForward(), OwnLookup())
    report = crawl_module(model, (4,))
    assert [(row["path"], row["type"]) for row in report["layers"]] == [
        ("", "Sequential"),
        ("0", "PropertyForward"),
        ("0.lin", "Linear"),
        ("1", "OwnLookup"),
        ("1.lin", "Linear"),
    ]
    assert_nothing_left(model)


def test_totals_follow_the_module_tree_as_the_forward_left_it():
    class Grows(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)

        def forward(self, x):
            if not hasattr(self, "b"):
                self.b = nn.Linear(4, 8)  # 40 parameters, created during the call
            return self.b(self.a(x))

    class Shrinks(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = nn.Linear(4, 4)
            self.tmp = nn.Linear(4, 100)

        def forward(self, x):
            if hasattr(self, "tmp"):
                del self.tmp
            return self.a(x)

    for model in (Grows(), Shrinks()):
        report = crawl_module(model, (4,))
        expected = sum(p.numel() for p in model.parameters())  # as parameters() shows it after the call
        assert report["totals"]["parameters"]["value"] == expected
    assert expected == 20


def test_a_leaf_call_without_tensors_has_every_estimate_unavailable_with_a_diagnostic_each():
    # Contract 1.3 step 4: no input or no output tensor -> every requested metric unavailable and one
    # missing_metric_tensor per metric. The receptive-field trio was left out of the row.
    report = crawl_module(nn.Identity(), args=(3,))
    metrics = report["layers"][0]["metrics"]
    names = ["module_flops", "macs", "dmas", "receptive_field", "effective_stride", "effective_padding"]
    for name in names:
        assert metrics[name]["status"] == "unavailable" and metrics[name]["value"] is None, name
    diagnostics = [(d["code"], d["metric"], d["path"]) for d in report["diagnostics"]]
    assert diagnostics == [("missing_metric_tensor", name, "") for name in names]
