"""crawl_module(saved_activations=True): bytes saved for backward per layer call (issue #19, item 3).

The numbers are derived independently: by hand for small models (what each autograd node saves, in bytes), and
for GPT-2 and Llama from small configs by a plain Python saved_tensors_hooks reference written here, which
dedupes by storage and excludes parameters and buffers in its own few lines.
"""

from __future__ import annotations

import gc
import itertools
import json
import os
import weakref
from collections import Counter
from typing import Any

import pytest
import torch
import zoo
from conftest import assert_nothing_left, training_flags
from test_leaks import _check_no_growth
from torch import nn

from torchscan import IncompleteAnalysisError, crawl_module

F32 = 4  # bytes per float32 element


def _rows(report: dict[str, Any]) -> dict[tuple[str, int], int]:
    """{(path, call_index): saved bytes} of the complete rows (asserts every row is complete)."""
    rows = {}
    for layer in report["layers"]:
        metric = layer["metrics"]["saved_activation_bytes"]
        assert metric["status"] == "complete", (layer["path"], metric)
        assert (metric["unit"], metric["scope"]) == ("bytes", "module_call_self")
        assert metric["method"] == "torch.autograd.graph.saved_tensors_hooks"
        rows[(layer["path"], layer["call_index"])] = metric["value"]
    return rows


def _total(report: dict[str, Any]) -> int:
    metric = report["totals"]["saved_activation_bytes"]
    assert metric["status"] == "complete"
    assert (metric["unit"], metric["scope"]) == ("bytes", "forward")
    return metric["value"]


def _assert_nothing_left(model: nn.Module, flags: dict[str, bool], grad: bool) -> None:
    assert_nothing_left(model)
    assert training_flags(model) == flags
    assert torch.is_grad_enabled() is grad
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None, "a saved-tensor hook was left"


# ---- hand arithmetic ---------------------------------------------------------------------------------------


def test_linear_relu_saves_the_linear_input_and_the_relu_output():
    n, d_in, d_out = 4, 5, 3
    model = nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU())
    report = crawl_module(model, args=(torch.rand(n, d_in),), saved_activations=True)
    # addmm saves its input (for the weight's gradient); the weight it also saves is a parameter, and the input
    # needs no gradient here so the weight is not even saved; relu saves its output
    assert _rows(report) == {("", 0): 0, ("0", 0): n * d_in * F32, ("1", 0): n * d_out * F32}
    assert _total(report) == (n * d_in + n * d_out) * F32 == 128
    assert report["context"]["execution_mode"] == "training_forward_grad_enabled"
    assert report["diagnostics"] == []


def test_a_storage_saved_by_two_layers_counts_for_the_first():
    # the second Linear saves its input, the ReLU's output: the ReLU saved that storage first; its weight (saved
    # because its input requires grad) is a parameter and counts nothing
    n = 6
    model = nn.Sequential(nn.Linear(5, 3), nn.ReLU(), nn.Linear(3, 2))
    x = torch.rand(n, 5, requires_grad=True)
    rows = _rows(crawl_module(model, args=(x,), saved_activations=True))
    assert rows == {("", 0): 0, ("0", 0): n * 5 * F32, ("1", 0): n * 3 * F32, ("2", 0): 0}


def test_conv_batchnorm_in_training_mode():
    n, c_in, c_out, hw = 2, 3, 8, 6
    model = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out)).train()
    flags = training_flags(model)
    report = crawl_module(model, args=(torch.rand(n, c_in, hw, hw),), saved_activations=True)
    conv_in = n * c_in * hw * hw * F32  # convolution saves its input (and its weight: a parameter)
    # training batch norm saves its input, the batch mean and inverse std (C floats each); weight, running
    # mean and variance are a parameter and buffers
    bn = n * c_out * hw * hw * F32 + 2 * c_out * F32
    assert _rows(report) == {("", 0): 0, ("0", 0): conv_in, ("1", 0): bn}
    assert (conv_in, bn) == (864, 2368)
    assert training_flags(model) == flags  # the caller's modes were used and are still set
    assert report["context"]["training_before"] is True


def test_the_callers_eval_mode_is_kept():
    # the same model in eval: batch norm saves no batch statistics (0-element tensors), its input still
    n, c = 2, 8
    model = nn.Sequential(nn.BatchNorm2d(c)).eval()
    report = crawl_module(model, args=(torch.rand(n, c, 4, 4, requires_grad=True),), saved_activations=True)
    assert _rows(report) == {("", 0): 0, ("0", 0): n * c * 4 * 4 * F32}
    assert not model.training and not model[0].training


class Square(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * x  # mul saves both operands: the same storage twice


class ViewSin(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, 1:3].sin()  # sin saves its input: a view of x


def test_one_storage_saved_twice_counts_once():
    x = torch.rand(3, 4, requires_grad=True)
    assert _rows(crawl_module(Square(), args=(x,), saved_activations=True)) == {("", 0): 3 * 4 * F32}


def test_a_saved_view_counts_its_whole_storage():
    x = torch.rand(4, 6, requires_grad=True)
    # the view is 4 x 2, its storage is x's: 4 x 6 floats
    assert _rows(crawl_module(ViewSin(), args=(x,), saved_activations=True)) == {("", 0): 4 * 6 * F32}


def test_frozen_parameters_and_inputs_without_grad_save_what_autograd_saves():
    n = 3
    frozen = nn.Sequential(nn.Linear(4, 5), nn.ReLU(), nn.Linear(5, 2)).requires_grad_(False)
    report = crawl_module(frozen, args=(torch.rand(n, 4),), saved_activations=True)
    assert set(_rows(report).values()) == {0} and _total(report) == 0  # no graph at all
    frozen[2].requires_grad_(True)  # only the last Linear trains: it saves its input, nothing before it
    rows = _rows(crawl_module(frozen, args=(torch.rand(n, 4),), saved_activations=True))
    assert rows == {("", 0): 0, ("0", 0): 0, ("1", 0): 0, ("2", 0): n * 5 * F32}


def test_a_repeated_call_gets_its_own_row():
    lin = nn.Linear(4, 4)

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = lin

        def forward(self, x):
            return self.lin(self.lin(x))

    x = torch.rand(2, 4, requires_grad=True)
    rows = _rows(crawl_module(Twice(), args=(x,), saved_activations=True))
    # each call saves its own input: x, then the first call's output
    assert rows == {("", 0): 0, ("lin", 0): 2 * 4 * F32, ("lin", 1): 2 * 4 * F32}


class SparseProduct(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sparse = torch.eye(3).to_sparse()  # a plain attribute, not a buffer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sparse.mm(self.sparse, x).relu()


def test_a_sparse_saved_tensor_makes_the_row_and_the_total_partial():
    x = torch.rand(3, 2, requires_grad=True)
    report = crawl_module(SparseProduct(), args=(x,), saved_activations=True)
    row = report["layers"][0]["metrics"]["saved_activation_bytes"]
    # the relu output is measured (3 x 2 floats); the sparse operand has no readable storage
    assert row["status"] == "partial" and row["value"] is None
    assert row["known_value"] >= 3 * 2 * F32
    assert report["totals"]["saved_activation_bytes"]["status"] == "partial"
    codes = [d for d in report["diagnostics"] if d["code"] == "unmeasured_saved_tensor"]
    assert len(codes) == 1 and codes[0]["metric"] == "saved_activation_bytes"
    assert "Sparse" in codes[0]["message"] or "sparse" in codes[0]["message"]
    with pytest.raises(IncompleteAnalysisError):
        crawl_module(SparseProduct(), args=(x,), saved_activations=True, strict=True)


def test_structure_mode_measures_the_same_bytes():
    model = nn.Sequential(nn.Linear(5, 3), nn.ReLU())
    x = torch.rand(4, 5)
    full = crawl_module(model, args=(x,), saved_activations=True)
    structure = crawl_module(model, args=(x,), saved_activations=True, mode="structure")
    assert _rows(full) == _rows(structure)


# ---- the contract without the option ------------------------------------------------------------------------


def test_without_the_option_the_report_is_unchanged():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU()).train()
    x = torch.rand(1, 3, 6, 6)
    default = crawl_module(model, args=(x,))
    explicit = crawl_module(model, args=(x,), saved_activations=False)
    assert json.dumps(default) == json.dumps(explicit)
    assert "saved_activation_bytes" not in json.dumps(default)
    assert default["context"]["execution_mode"] == "evaluation_no_grad"
    assert default["layers"][0]["output"]["requires_grad"] is False


@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_saved_activations_must_be_a_bool(value):
    model = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="saved_activations"):
        crawl_module(model, (2,), saved_activations=value)


def test_inference_mode_is_refused_before_the_model_runs():
    model = Failing(ValueError)  # would raise ValueError if it ran
    with torch.inference_mode(), pytest.raises(RuntimeError, match="inference_mode"):
        crawl_module(model, args=(torch.rand(2, 4),), saved_activations=True)
    assert model.raised == []


# ---- nothing left behind ------------------------------------------------------------------------------------


class Failing(nn.Module):
    """Raises a new `error_type` after saving activations; `raised` is the last one."""

    def __init__(self, error_type: type[BaseException]) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.drop = nn.Dropout(0.5)
        self.error_type = error_type
        self.raised: list[BaseException] = []

    def forward(self, x):
        self.drop(self.lin(x).relu())
        self.raised[:] = [self.error_type("model fails")]
        raise self.raised[0]


@pytest.mark.parametrize("error_type", [ValueError, KeyboardInterrupt])
@pytest.mark.parametrize("grad", [True, False])
def test_a_raising_forward_leaves_nothing_behind(error_type, grad):
    model = Failing(error_type).train()
    model.drop.eval()  # mixed flags, restored as they were
    flags = training_flags(model)
    with torch.set_grad_enabled(grad):
        with pytest.raises(error_type) as caught:
            crawl_module(model, args=(torch.rand(2, 4),), saved_activations=True)
        assert caught.value is model.raised[0]  # the same object propagates
        _assert_nothing_left(model, flags, grad)


class InterruptingTensor(torch.Tensor):
    """Reading its storage (as the pack hook does) raises KeyboardInterrupt."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    def untyped_storage(self):
        raise KeyboardInterrupt


class FailingStorageTensor(torch.Tensor):
    """Reading its storage raises an Exception: measured as unreadable."""

    __torch_function__ = torch._C._disabled_torch_function_impl

    def untyped_storage(self):
        raise RuntimeError("no storage here")


def test_a_tensor_whose_storage_raises_is_unmeasured():
    x = torch.rand(2, 4).as_subclass(FailingStorageTensor)
    report = crawl_module(nn.Linear(4, 4), args=(x,), saved_activations=True)
    metric = report["layers"][0]["metrics"]["saved_activation_bytes"]
    assert (metric["status"], metric["known_value"]) == ("partial", 0)
    (diagnostic,) = report["diagnostics"]
    assert diagnostic["code"] == "unmeasured_saved_tensor" and diagnostic["path"] == ""
    assert "FailingStorageTensor" in diagnostic["message"] and "no storage here" in diagnostic["message"]


def test_an_interrupt_in_the_pack_hook_propagates_and_leaves_nothing():
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = torch.rand(2, 4).as_subclass(InterruptingTensor)
    flags = training_flags(model)
    with pytest.raises(KeyboardInterrupt):
        crawl_module(model, args=(x,), saved_activations=True)
    _assert_nothing_left(model, flags, True)
    # the same model measures normally afterwards
    assert _total(crawl_module(model, args=(torch.rand(2, 4),), saved_activations=True)) == 2 * 4 * F32 * 2


def test_the_crawl_releases_every_saved_tensor():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    x = torch.rand(3, 4, requires_grad=True)
    kept = []

    def keep(module, args, output):
        kept.append(weakref.ref(output))

    handle = model[1].register_forward_hook(keep)
    try:
        crawl_module(model, args=(x,), saved_activations=True)
    finally:
        handle.remove()
    refs = [weakref.ref(model), weakref.ref(x), *kept]
    del model, x
    gc.collect()
    assert all(ref() is None for ref in refs), "the crawl kept a model, input or saved activation alive"


@pytest.mark.skipif(
    "libasan" in os.environ.get("LD_PRELOAD", ""),
    reason="ASan's quarantine keeps freed memory resident: RSS growth is no leak measure under make asan-ext",
)
def test_repeated_crawls_do_not_leak():
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(), nn.Linear(64, 3))
    x = torch.rand(1, 3, 6, 6)
    _check_no_growth(lambda: crawl_module(model, args=(x,), saved_activations=True), iterations=200)
    failing = Failing(ValueError)

    def failed() -> None:
        with pytest.raises(ValueError):
            crawl_module(failing, args=(torch.rand(2, 4),), saved_activations=True)

    _check_no_growth(failed, iterations=200)


# ---- transformers: the plain Python reference ---------------------------------------------------------------


def _reference(model: nn.Module, args: tuple, kwargs: dict) -> dict[tuple[str, int], int]:
    """Bytes saved per (path, call_index): storages deduplicated, parameters and buffers excluded, attributed
    to the innermost module call active when first saved. Tensors are kept in a list (the graph holds
    indices) so that no saved output references itself."""
    paths: dict[int, str] = {}
    for name, module in model.named_modules():
        paths.setdefault(id(module), name)
    excluded = {t.untyped_storage()._cdata for t in itertools.chain(model.parameters(), model.buffers())}
    stack, calls, rows, seen, kept = [], Counter(), {}, set(), []

    def pre(module, args):
        path = paths[id(module)]
        stack.append((path, calls[path]))
        calls[path] += 1
        rows.setdefault(stack[-1], 0)

    def post(module, args, output):
        stack.pop()

    def pack(t):
        kept.append(t)
        storage = t.untyped_storage()
        if storage._cdata not in seen and storage._cdata not in excluded:
            seen.add(storage._cdata)
            rows[stack[-1]] += storage.nbytes()
        return len(kept) - 1

    handles = [m.register_forward_pre_hook(pre) for m in model.modules()]
    handles += [m.register_forward_hook(post) for m in model.modules()]
    try:
        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, kept.__getitem__):
            model(*args, **kwargs)
    finally:
        for handle in handles:
            handle.remove()
    return rows


@pytest.mark.parametrize("family", ["gpt2", "llama"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_transformers_match_a_python_saved_tensors_hooks_reference(family, attn):
    pytest.importorskip("transformers")
    case = getattr(zoo, family)(attn)
    model = case.model.train()
    for module in model.modules():  # dropout off: the same forward twice (sizes do not depend on it anyway)
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    expected = _reference(model, case.args, case.kwargs)
    report = crawl_module(model, args=case.args, kwargs=case.kwargs, saved_activations=True)
    rows = _rows(report)
    assert rows == {key: expected.get(key, 0) for key in rows}
    assert set(expected) <= set(rows)
    assert _total(report) == sum(expected.values()) > 0
    # the embedding's output, the attention and MLP activations: most rows save something
    assert sum(1 for value in rows.values() if value > 0) >= 8


@pytest.mark.parametrize("reentrant", [False, True])
def test_activation_checkpointing_saves_the_region_inputs_only(reentrant):
    from torch.utils.checkpoint import checkpoint

    inner = nn.Sequential(nn.Linear(4, 4), nn.ReLU())

    class Checkpointed(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return checkpoint(self.inner, x, use_reentrant=reentrant)

    x = torch.rand(3, 4, requires_grad=True)
    plain = _rows(crawl_module(inner, args=(x,), saved_activations=True))
    assert plain == {("", 0): 0, ("0", 0): 3 * 4 * F32, ("1", 0): 3 * 4 * F32}  # input, ReLU output
    rows = _rows(crawl_module(Checkpointed(), args=(x,), saved_activations=True))
    # the checkpoint keeps its input for the recomputation, saved in the calling module's row
    assert rows == {("", 0): 3 * 4 * F32, ("inner", 0): 0, ("inner.0", 0): 0, ("inner.1", 0): 0}


# ---- the pack hook keeps nothing: detached tensors, autograd restores their history -------------------------


def test_a_saved_relu_output_is_freed_without_the_collector():
    """ReLU saves its own output: packed as itself it would hold itself through its grad_fn (a C++ cycle);
    packed detached, dropping the output frees it at once, with the collector off."""
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
    x = torch.rand(3, 4)
    outputs = []
    handle = model.register_forward_hook(lambda m, a, out: outputs.append(out))
    gc.disable()
    try:
        report = crawl_module(model, args=(x,), saved_activations=True)
        # the hook's detach is not the model's operator
        assert "aten.detach" not in report["operator_flops"]["ignored_operators"]
        out = outputs.pop()
        ref = weakref.ref(out)
        assert out.grad_fn is not None
        del out
        assert ref() is None, "the saved ReLU output is kept alive"
    finally:
        gc.enable()
        handle.remove()


def _grads(model: nn.Module, x: torch.Tensor, crawled: bool, create_graph: bool) -> list[torch.Tensor]:
    outputs = []
    handle = model.register_forward_hook(lambda m, a, out: outputs.append(out))
    try:
        if crawled:
            crawl_module(model, args=(x,), saved_activations=True)
        else:
            model(x)
    finally:
        handle.remove()
    (out,) = outputs
    params = list(model.parameters())
    grads = torch.autograd.grad((out**2).sum(), [x, *params], create_graph=create_graph)
    if not create_graph:
        return list(grads)
    # double backward through the crawled forward's saved tensors
    return list(torch.autograd.grad(sum(g.pow(2).sum() for g in grads), [x, *params]))


@pytest.mark.parametrize("create_graph", [False, True])
def test_a_graph_that_outlives_the_crawl_backpropagates(create_graph):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3), nn.Sigmoid()).double()
    x = torch.rand(5, 4, dtype=torch.float64, requires_grad=True)
    expected = _grads(model, x, False, create_graph)
    got = _grads(model, x, True, create_graph)
    assert len(got) == len(expected) == 5
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=0, atol=0)
