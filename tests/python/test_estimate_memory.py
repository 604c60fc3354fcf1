"""estimate_memory: the simulated tensor memory of a workload, against hand arithmetic and against
measure_peak_memory on CPU (PyTorch profiler's allocation events), for small models only."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchscan
from torchscan.process import measure_peak_memory

transformers = pytest.importorskip("transformers")

TOLERANCE = 64 * 1024  # the bound: within 5% or 64 KiB, whichever is larger


def _mlp() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))


def _n_bytes(model: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in model.parameters())


def _peak(report) -> int:
    metric = report["totals"]["peak_bytes"]
    assert metric["status"] == "complete", report["diagnostics"]
    assert metric["method"] == "torchscan_memory_simulation"
    return metric["value"]


def test_inference_by_hand():
    """Linear(64,128) -> ReLU -> Linear(128,10) at batch 32 without grad: addmm's 32x128 float output
    (16,384 B) and ReLU's (16,384 B) are alive together, the peak (32,768 B) at ReLU in layer "1"; the
    resident peak adds the parameters (9,610 floats) and the input (32x64 floats)."""
    model = _mlp()
    x = torch.randn(32, 64)

    def workload():
        with torch.no_grad():
            model(x)

    report = torchscan.estimate_memory(workload, modules=model)
    assert _peak(report) == 32 * 128 * 4 * 2
    assert report["totals"]["resident_peak_bytes"]["value"] == 9610 * 4 + 32 * 64 * 4 + 32 * 128 * 4 * 2
    peak = report["peak"]
    assert peak["operator"] == "aten.relu"
    assert peak["phase"] == "forward"
    assert peak["layer"] == {"path": "1", "call_index": 0}
    assert peak["composition"]["parameter"] == 9610 * 4
    assert peak["composition"]["activation"] == 32 * 128 * 4 * 2
    assert peak["composition"]["other"] == 32 * 64 * 4  # the input, there before the call
    assert peak["allocated_composition"]["parameter"] == 0
    assert report["existing_bytes"] == 9610 * 4 + 32 * 64 * 4
    # 16,384 + 16,384 + 1,280 allocated; the first two freed, the output's freed as the call returns
    assert report["allocated_bytes"] == 32 * 128 * 4 * 2 + 32 * 10 * 4
    assert report["context"]["method"] == "torchscan_memory_simulation"
    assert "not a measured peak" in report["context"]["scope"]
    assert _peak(report) == measure_peak_memory(workload, device="cpu")["peak_bytes"]


def test_fake_tensors_give_the_real_figures():
    from torch._subclasses.fake_tensor import FakeTensorMode

    def figures(model, x):
        def workload():
            with torch.no_grad():
                model(x)

        report = torchscan.estimate_memory(workload, modules=model)
        return _peak(report), report["totals"]["resident_peak_bytes"]["value"], report["peak"]["layer"]

    real = figures(_mlp(), torch.randn(32, 64))
    with FakeTensorMode():
        fake = figures(_mlp(), torch.empty(32, 64))
    assert fake == real == (32_768, 79_400, {"path": "1", "call_index": 0})


def test_composite_operators_run_whole():
    """Under inference_mode, composite operators (CompositeImplicitAutograd) reach the dispatch mode; while
    simulating, the counter runs them whole instead of decomposing them: one operator, its output only.
    layer_norm's kernel also holds its mean and rstd (4 x 64 floats each, 2,048 bytes) inside the kernel."""
    x = torch.randn(4, 64, 128)

    def workload():
        with torch.inference_mode():
            torch.nn.functional.layer_norm(x, (128,))

    report = torchscan.estimate_memory(workload, timeline=True)
    assert [e["operator"] for e in report["timeline"]] == ["aten.layer_norm", "aten.layer_norm"]
    assert _peak(report) == 4 * 64 * 128 * 4
    assert measure_peak_memory(workload, device="cpu")["peak_bytes"] - _peak(report) == 2 * 4 * 64 * 4


def test_views_and_in_place_allocate_nothing():
    x = torch.randn(256)

    def workload():
        y = x * 2  # 1,024 B
        z = y.view(16, 16).t()  # views share y's storage
        z.add_(1)  # in place
        return y.sum()  # 4 B

    report = torchscan.estimate_memory(workload, timeline=True)
    assert _peak(report) == 1024 + 4
    deltas = [e["delta"] for e in report["timeline"]]
    assert deltas == [1024, 4, -1024, -4]
    assert [e["operator"] for e in report["timeline"]][:2] == ["aten.mul", "aten.sum"]


def _train(model, opt, x, set_to_none=True):
    def step():
        opt.zero_grad(set_to_none=set_to_none)
        model(x).float().pow(2).mean().backward()
        opt.step()

    return step


@pytest.mark.parametrize(
    "make_opt",
    [
        lambda p: torch.optim.SGD(p, lr=0.1),
        lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, foreach=False),
        lambda p: torch.optim.AdamW(p, foreach=False),
        lambda p: torch.optim.AdamW(p, foreach=True),
        lambda p: torch.optim.AdamW(p, fused=True),
        lambda p: torch.optim.Adam(p, foreach=True, amsgrad=True),
    ],
    ids=["sgd", "sgd_momentum", "adamw_for_loop", "adamw_foreach", "adamw_fused", "adam_amsgrad_foreach"],
)
@pytest.mark.parametrize("set_to_none", [True, False])
def test_training_step_matches_measurement(make_opt, set_to_none):
    model = _mlp()
    opt = make_opt(model.parameters())
    step = _train(model, opt, torch.randn(32, 64), set_to_none)
    step()  # steady state: gradients and optimizer state exist
    measured = measure_peak_memory(step, device="cpu")["peak_bytes"]
    report = torchscan.estimate_memory(step, modules=model)
    # the MLP's figures agree to the byte or within a few scalars (observed: 0 to 12 B)
    assert abs(_peak(report) - measured) <= 64, (_peak(report), measured)
    phases = report["phases"]
    assert sum(p["allocated_bytes"] for p in phases.values()) == report["allocated_bytes"]
    assert phases["optimizer"]["operators"] > 0 and phases["backward"]["operators"] > 0


def test_autocast_step_matches_measurement():
    """Autocast's casts are operators the dispatcher shows (bf16 copies of weights and inputs)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 256))
    opt = torch.optim.AdamW(model.parameters())
    x = torch.randn(64, 256)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()

    step()
    measured = measure_peak_memory(step, device="cpu")["peak_bytes"]
    assert abs(_peak(torchscan.estimate_memory(step, modules=model)) - measured) <= 64


def test_adamw_composition_closed_form():
    """Second AdamW step: parameters 4N, gradients 4N, state 8N bytes plus one float32 step scalar per
    parameter tensor, all alive at the resident peak."""
    model = _mlp()
    opt = torch.optim.AdamW(model.parameters())
    step = _train(model, opt, torch.randn(32, 64), set_to_none=False)
    step()
    report = torchscan.estimate_memory(step, modules=model)
    n = _n_bytes(model)
    comp = report["resident_peak"]["composition"]
    assert comp["parameter"] == n
    assert comp["gradient"] == n
    assert comp["optimizer_state"] == 2 * n + 4 * len(list(model.parameters()))
    # zero_grad(set_to_none=False) zeroes in place: the gradients existed before the call, so a
    # second backward allocates no gradient storage of its own
    assert report["peak"]["allocated_composition"]["gradient"] == 0


def test_set_to_none_frees_and_reallocates_gradients():
    model = _mlp()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step = _train(model, opt, torch.randn(32, 64), set_to_none=True)
    step()
    report = torchscan.estimate_memory(step, modules=model)
    # the gradients of this backward are the workload's own: allocated, alive at the end of backward
    assert report["resident_peak"]["allocated_composition"]["gradient"] == _n_bytes(model)


def _hf(name: str, checkpoint: bool):
    torch.manual_seed(0)
    if name == "gpt2":
        config = transformers.GPT2Config(
            vocab_size=512, n_positions=128, n_embd=128, n_layer=2, n_head=4, bos_token_id=1, eos_token_id=2
        )
        model = transformers.GPT2LMHeadModel._from_config(config, attn_implementation="sdpa")
    else:
        config = transformers.LlamaConfig(
            vocab_size=512,
            hidden_size=128,
            intermediate_size=256,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
        model = transformers.LlamaForCausalLM._from_config(config, attn_implementation="sdpa")
    if checkpoint:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


@pytest.mark.parametrize("name", ["gpt2", "llama"])
@pytest.mark.parametrize(
    "mode,checkpoint",
    [("inference", False), ("sgd", False), ("sgd", True), ("adamw", False), ("adamw", True)],
)
def test_transformers_match_measure_peak_memory(name, mode, checkpoint):
    model = _hf(name, checkpoint)
    ids = torch.randint(0, 512, (2, 64), generator=torch.Generator().manual_seed(1))
    if mode == "inference":
        model.eval()

        def workload():
            with torch.no_grad():
                model(input_ids=ids)

    else:
        model.train()
        opt = (
            torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
            if mode == "sgd"
            else torch.optim.AdamW(model.parameters())
        )

        def workload():
            opt.zero_grad(set_to_none=True)
            model(input_ids=ids, labels=ids).loss.backward()
            opt.step()

        workload()
    measured = measure_peak_memory(workload, device="cpu")["peak_bytes"]
    report = torchscan.estimate_memory(workload, modules=model)
    simulated = _peak(report)
    assert abs(simulated - measured) <= max(TOLERANCE, 0.05 * measured), (simulated, measured)
    # Observed here: 0 to 48 B apart without checkpointing; with it, 5,056 B (5,080 for GPT-2) less:
    # torch.utils.checkpoint saves the CPU RNG state (torch.get_rng_state(), 5,056 B), a tensor made
    # outside the dispatcher that the simulator cannot see (docs/memory-planning.md).
    assert 0 <= measured - simulated <= (5_120 if checkpoint else 64), (simulated, measured)
    if mode != "inference":
        assert report["peak"]["phase"] == "backward"
        # a backward operator is placed in the layer call whose forward it differentiates
        assert set(report["peak"]["layer"]) == {"path", "call_index"}


def test_checkpointing_lowers_the_peak():
    ids = torch.randint(0, 512, (2, 64), generator=torch.Generator().manual_seed(1))
    peaks = []
    for checkpoint in (False, True):
        model = _hf("llama", checkpoint)
        model.train()

        def workload():
            model(input_ids=ids, labels=ids).loss.backward()

        peaks.append(_peak(torchscan.estimate_memory(workload, modules=model)))
    assert peaks[1] < peaks[0]


def test_meta_bf16_adamw_closed_form_and_fused_attention():
    """A small Llama on meta in bf16, second AdamW step (state in bf16): parameters 2N, gradients 2N,
    state 4N + 4 bytes per parameter tensor (the step scalars stay float32 on the CPU)."""
    with torch.device("meta"):
        model = _hf("llama", False).to(torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), foreach=True)
    ids = torch.zeros(1, 512, dtype=torch.long, device="meta")

    def workload():
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    workload()
    reports = {
        a: torchscan.estimate_memory(workload, modules=model, attention=a, timeline=True) for a in ("as_run", "fused")
    }
    n_elems = sum(p.numel() for p in model.parameters())
    count = len(list(model.parameters()))
    for report in reports.values():
        comp = report["resident_peak"]["composition"]
        assert comp["parameter"] == 2 * n_elems
        assert comp["optimizer_state"] == 4 * n_elems + 4 * count
        assert report["resident_peak"]["by_device"]["cpu"] >= 4 * count
        # inside the optimizer step every gradient exists: 2N
        step_comp = report["phases"]["optimizer"]["resident_peak"]["composition"]
        assert step_comp["gradient"] == 2 * n_elems
        assert step_comp["parameter"] == 2 * n_elems
    # the math path materialises each head's 512x512 scores (in float32: it upcasts bf16); the fused
    # kernel does not
    scores = 1 * 4 * 512 * 512 * 4
    as_run = [e for e in reports["as_run"]["timeline"] if e["delta"] == scores and e["operator"] == "aten.bmm"]
    fused = [e for e in reports["fused"]["timeline"] if e["delta"] == scores and e["operator"] == "aten.bmm"]
    assert as_run and not fused
    assert _peak(reports["fused"]) < _peak(reports["as_run"])


def test_unreadable_storage_makes_the_totals_partial():
    indices, values = torch.tensor([[0, 1], [1, 0]]), torch.tensor([1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sparse invariant checks
        sparse = torch.sparse_coo_tensor(indices, values, (2, 2))
    report = torchscan.estimate_memory(lambda: sparse * 2)
    assert report["unobserved"] > 0
    for metric in ("peak_bytes", "resident_peak_bytes"):
        assert report["totals"][metric]["status"] == "partial"
    assert {d["code"] for d in report["diagnostics"]} == {"unobserved_storage"}


def test_nothing_dispatched_is_unavailable():
    report = torchscan.estimate_memory(lambda: None)
    assert report["totals"]["peak_bytes"]["status"] == "unavailable"
    assert report["totals"]["peak_bytes"]["value"] is None
    assert {d["code"] for d in report["diagnostics"]} == {"measurement_unavailable"}


@pytest.mark.parametrize(
    "kwargs,error,word",
    [
        ({"modules": "model"}, TypeError, "modules"),
        ({"modules": []}, TypeError, "modules"),
        ({"optimizers": [1]}, TypeError, "optimizers"),
        ({"optimizers": "adam"}, TypeError, "optimizers"),
        ({"attention": "flash"}, ValueError, "attention"),
        ({"timeline": "yes"}, TypeError, "timeline"),
    ],
)
def test_argument_checks_before_the_workload(kwargs, error, word):
    ran = []
    with pytest.raises(error, match=word):
        torchscan.estimate_memory(lambda: ran.append(1), **kwargs)
    assert ran == []
    with pytest.raises(TypeError, match="workload"):
        torchscan.estimate_memory(42)  # type: ignore[arg-type]


def test_workload_exception_propagates_and_nothing_is_left_behind():
    model = _mlp()
    error = ValueError("boom")

    def workload():
        model(torch.randn(2, 64))
        raise error

    depth = torch._C._len_torch_dispatch_stack()
    with pytest.raises(ValueError) as info:
        torchscan.estimate_memory(workload, modules=model)
    assert info.value is error
    assert torch._C._len_torch_dispatch_stack() == depth
    assert not model._forward_hooks and not model[0]._forward_pre_hooks
    # the same modules can be observed again
    torchscan.estimate_memory(lambda: model(torch.randn(2, 64)), modules=model)


@pytest.mark.parametrize("kernel,channels,size", [(3, 3, 34), (3, 8, 20), (1, 8, 16)])
def test_slow2d_convolution_workspace_matches_measurement(kernel, channels, size):
    """Without oneDNN, CPU convolutions run slow_conv2d, which holds an im2col buffer of batch x (C_in x kH x
    kW) x (H_out x W_out) elements beside its output (none for a 1x1 kernel), and whose backward makes an
    expanded grad_output contiguous: modelled as the kernel's workspace, equal to the measurement."""
    conv = nn.Conv2d(channels, 16, kernel)
    batch = 8 if kernel == 3 else 2
    x = torch.randn(batch, channels, size, size)
    xg = x.clone().requires_grad_()
    out = size - kernel + 1

    def inference():
        with torch.no_grad():
            conv(x)

    def training():
        conv(xg).sum().backward()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flags = torch.backends.mkldnn.flags(enabled=False)
    with flags:
        report = torchscan.estimate_memory(inference, timeline=True)
        columns = 0 if kernel == 1 else batch * channels * kernel * kernel * out * out * 4
        assert _peak(report) == batch * 16 * out * out * 4 + columns
        if columns:
            assert report["peak"]["composition"]["workspace"] == columns
        assert _peak(report) == measure_peak_memory(inference, device="cpu")["peak_bytes"]
        assert _peak(torchscan.estimate_memory(training)) == measure_peak_memory(training, device="cpu")["peak_bytes"]


def test_onednn_convolution_workspace_is_not_modelled():
    """With oneDNN (PyTorch's default CPU backend here), the kernel's output-sized buffer in its blocked layout
    is not documented and not modelled: the simulation holds the output only, the measurement more."""
    conv = nn.Conv2d(3, 16, 3)
    x = torch.randn(8, 3, 34, 34)

    def inference():
        with torch.no_grad():
            conv(x)

    simulated = _peak(torchscan.estimate_memory(inference))
    assert simulated == 8 * 16 * 32 * 32 * 4  # 524,288
    assert measure_peak_memory(inference, device="cpu")["peak_bytes"] >= simulated
    # on meta, planning for another device: no CPU kernel's workspace either
    with torch.device("meta"):
        meta_conv, meta_x = nn.Conv2d(3, 16, 3), torch.empty(8, 3, 34, 34)

    def meta():
        with torch.no_grad():
            meta_conv(meta_x)

    assert _peak(torchscan.estimate_memory(meta)) == 524_288
