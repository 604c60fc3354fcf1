"""The phases of a training step in measure_flops (issue 19, item 2).

Each phase is checked against a number derived without the phase split:
forward = measure_flops of the forward (and loss) alone; backward = hand
arithmetic of the layers' gradients, and PyTorch's FlopCounterMode on the
backward alone for the matrix products it counts; optimizer = the hand
arithmetic of docs/operator-flops.md's optimizer formulas (SGD: N*(2 + 1 + 1)
in a steady momentum step, AdamW: N*(12 + [beta2 != 0] + [wd != 0]) plus one
step-counter add per parameter tensor), the same for foreach and for-loop
steps; the phases sum to the total; the same on meta.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import torch.optim.optimizer as optim_module
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import torchscan

PHASES = ("forward", "backward", "optimizer")
B, IN, HID, OUT = 5, 4, 3, 2


def _hooks() -> tuple[int, int]:
    return len(optim_module._global_optimizer_pre_hooks), len(optim_module._global_optimizer_post_hooks)


def _mlp(device: str) -> tuple[nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(IN, HID), nn.ReLU(), nn.Linear(HID, OUT)).to(device)
    return model, torch.randn(B, IN, device=device)


def _optimizer(name: str, foreach: bool, params: Any) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, foreach=foreach)
    return torch.optim.AdamW(params, lr=1e-3, foreach=foreach)


def _optimizer_flops(name: str, model: nn.Module) -> int:
    """docs/operator-flops.md: aten._fused_sgd_ / aten._fused_adamw_ per element, which the for-loop and
    foreach steps equal; AdamW's step counters are one add per parameter tensor."""
    n = sum(p.numel() for p in model.parameters())
    tensors = len(list(model.parameters()))
    if name == "sgd":
        # momentum != 0 and not the first step: 2 + [dampening != 0]; the update: 1 + [lr != -1]
        return n * (2 + 0 + 1 + 1)
    # lr != 0 AdamW: 12 + [beta2 != 0] + [wd != 0] (+ amsgrad, maximize, grad_scale: off)
    return n * (12 + 1 + 1) + tensors


def _phase_totals(report: dict[str, Any]) -> dict[str, int]:
    return {p: report["phases"][p]["total"]["value"] for p in PHASES}


def _check_additive(report: dict[str, Any]) -> None:
    phases = report["phases"]
    assert set(phases) == set(PHASES)
    assert sum(_phase_totals(report).values()) == report["total"]["value"]
    for op, flops in report["by_operator"].items():
        assert sum(phases[p]["by_operator"].get(op, 0) for p in PHASES) == flops, op
    for p in PHASES:
        assert sum(phases[p]["by_operator"].values()) == phases[p]["total"]["value"]
        assert phases[p]["total"]["status"] == "complete"


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("name", ["sgd", "adamw"])
@pytest.mark.parametrize("foreach", [False, True])
def test_mlp_training_step(device: str, name: str, foreach: bool) -> None:
    model, x = _mlp(device)
    opt = _optimizer(name, foreach, model.parameters())

    def step() -> None:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    step()  # the momentum buffers / Adam state exist: a steady step
    before = _hooks()
    report = torchscan.measure_flops(step, modules=model)
    assert _hooks() == before
    _check_additive(report)
    assert report["total"]["status"] == "complete"

    alone = torchscan.measure_flops(lambda: model(x).sum())
    forward = report["phases"]["forward"]
    assert forward["total"]["value"] == alone["total"]["value"]
    assert forward["by_operator"] == alone["by_operator"]
    # the top-level by_module keeps its meaning: the forward's own work per module
    assert forward["by_module"] == report["by_module"]

    # backward by hand: Linear(i, o) on B rows: dW 2*B*i*o, db B*o - o, dX 2*B*i*o unless its input
    # needs no gradient (the first layer); ReLU's threshold_backward B*HID
    fc0 = 2 * B * IN * HID + (B * HID - HID)
    relu = B * HID
    fc2 = 2 * 2 * B * HID * OUT + (B * OUT - OUT)
    backward = report["phases"]["backward"]
    assert backward["by_module"] == {"": 0, "0": fc0, "1": relu, "2": fc2}
    # SumBackward0 (the loss) only expands: no FLOPs; AccumulateGrad only detaches (set_to_none)
    assert backward["total"]["value"] == fc0 + relu + fc2
    layers = {(r["path"], r["call_index"]): r["operator_flops"] for r in backward["layers"]}
    assert layers[("2", 0)]["value"] == fc2
    assert layers[("2", 0)]["scope"] == "module_call_self"

    assert report["phases"]["optimizer"]["total"]["value"] == _optimizer_flops(name, model)
    assert all(v == 0 for v in report["phases"]["optimizer"]["by_module"].values())


def test_backward_products_match_flopcountermode() -> None:
    model, x = _mlp("cpu")
    loss = model(x).sum()
    with FlopCounterMode(display=False) as reference:
        loss.backward(retain_graph=True)
    mm = reference.get_flop_counts()["Global"][torch.ops.aten.mm]
    model.zero_grad(set_to_none=True)
    report = torchscan.measure_flops(lambda: loss.backward())
    assert set(report["phases"]) == set(PHASES)
    assert report["phases"]["backward"]["by_operator"]["aten.mm"] == mm
    assert report["phases"]["backward"]["total"]["value"] == report["total"]["value"]
    assert report["phases"]["forward"]["total"]["value"] == 0


def test_forward_only_has_no_phases() -> None:
    model, x = _mlp("cpu")
    report = torchscan.measure_flops(lambda: model(x).sum(), modules=model)
    assert "phases" not in report


def test_gradient_accumulation_is_backward() -> None:
    """Grads that exist are accumulated by AccumulateGrad: an add per element, in the backward."""
    model, x = _mlp("cpu")
    model(x).sum().backward()  # .grad exists now
    report = torchscan.measure_flops(lambda: model(x).sum().backward(), modules=model)
    n = sum(p.numel() for p in model.parameters())
    backward = report["phases"]["backward"]
    assert backward["by_operator"]["aten.add_"] == n
    # AccumulateGrad nodes belong to no layer call: their adds are outside the layer rows
    assert backward["total"]["value"] - sum(backward["by_module"].values()) == n


def test_checkpoint_recompute_is_backward() -> None:
    from torch.utils.checkpoint import checkpoint

    model, x = _mlp("cpu")
    x.requires_grad_(False)

    def step() -> None:
        checkpoint(model, x, use_reentrant=False).sum().backward()

    report = torchscan.measure_flops(step)
    plain = torchscan.measure_flops(lambda: model(x).sum())
    assert report["phases"]["forward"]["total"]["value"] == plain["total"]["value"]
    fc0 = 2 * B * IN * HID + (B * HID - HID)
    fc2 = 2 * 2 * B * HID * OUT + (B * OUT - OUT)
    # the recomputed forward runs inside the engine; checkpoint stops recomputing once every saved
    # tensor is back: Linear 0 and the ReLU (Linear 2's output was never saved)
    recompute = 2 * B * IN * HID + B * HID
    assert report["phases"]["backward"]["total"]["value"] == recompute + fc0 + B * HID + fc2


class _Boom(torch.optim.SGD):
    @torch.no_grad()
    def step(self, closure: Any = None) -> Any:
        for group in self.param_groups:
            for p in group["params"]:
                p.mul_(2.0)
        raise RuntimeError("boom in step")


def test_hooks_removed_when_the_workload_raises() -> None:
    model, x = _mlp("cpu")
    opt = _Boom(model.parameters(), lr=0.1)
    before = _hooks()

    def step() -> None:
        model(x).sum().backward()
        opt.step()

    with pytest.raises(RuntimeError, match="boom in step"):
        torchscan.measure_flops(step, modules=model)
    assert _hooks() == before
    # nothing left: a later count of the same model has no optimizer phase
    report = torchscan.measure_flops(lambda: model(x).sum().backward())
    assert report["phases"]["optimizer"]["total"]["value"] == 0


def test_nested_optimizer_step_counts_once() -> None:
    """A wrapper whose step calls an inner optimizer's step: one optimizer phase, nothing counted twice."""
    model, x = _mlp("cpu")
    inner = torch.optim.SGD(model.parameters(), lr=0.1)

    class Wrapper(torch.optim.Optimizer):
        def __init__(self) -> None:
            super().__init__(model.parameters(), {})

        def step(self, closure: Any = None) -> Any:
            return inner.step()

    outer = Wrapper()

    def step() -> None:
        model(x).sum().backward()
        outer.step()
        model(x).sum()  # after the step: forward again

    report = torchscan.measure_flops(step)
    n = sum(p.numel() for p in model.parameters())
    # plain SGD: p.add_(grad, alpha=-lr): 2 per element
    assert report["phases"]["optimizer"]["total"]["value"] == 2 * n
    plain = torchscan.measure_flops(lambda: model(x).sum())
    assert report["phases"]["forward"]["total"]["value"] == 2 * plain["total"]["value"]


def _llama(attn: str, device: str) -> tuple[nn.Module, torch.Tensor]:
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=32,
    )
    config._attn_implementation = attn
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.LlamaForCausalLM(config)
    ids = torch.randint(0, 64, (2, 7), device=device)
    return model, ids


@pytest.mark.parametrize("device", ["cpu", "meta"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
@pytest.mark.parametrize("foreach", [False, True])
def test_llama_training_step(device: str, attn: str, foreach: bool) -> None:
    model, ids = _llama(attn, device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=foreach)

    def loss() -> torch.Tensor:
        return model(input_ids=ids, labels=ids).loss

    def step() -> None:
        opt.zero_grad()
        loss().backward()
        opt.step()

    step()
    report = torchscan.measure_flops(step, modules=model)
    _check_additive(report)
    assert report["total"]["status"] == "complete"
    alone = torchscan.measure_flops(loss)
    forward = report["phases"]["forward"]
    assert forward["total"]["value"] == alone["total"]["value"]
    assert forward["by_operator"] == alone["by_operator"]
    assert report["phases"]["optimizer"]["total"]["value"] == _optimizer_flops("adamw", model)

    # a Linear without bias whose input needs a gradient: backward = dX + dW = 2x its forward; where
    # several Linears read one input (q, k, v; gate, up), the engine adds their dX (B*T*hidden per add)
    # in the call of the node that delivered the later one
    backward = report["phases"]["backward"]
    bw, fw = backward["by_module"], forward["by_module"]
    tokens_hidden = ids.numel() * model.config.hidden_size
    assert bw["lm_head"] == 2 * fw["lm_head"]
    for i in range(model.config.num_hidden_layers):
        layer = f"model.layers.{i}."
        for one in ("self_attn.o_proj", "mlp.down_proj"):
            assert bw[layer + one] == 2 * fw[layer + one], one
        qkv = [layer + f"self_attn.{p}_proj" for p in "qkv"]
        assert sum(bw[p] for p in qkv) == 2 * sum(fw[p] for p in qkv) + 2 * tokens_hidden
        gate_up = [layer + "mlp.gate_proj", layer + "mlp.up_proj"]
        assert sum(bw[p] for p in gate_up) == 2 * sum(fw[p] for p in gate_up) + tokens_hidden

    # the backward alone, measured without phases of its own making; not for SDPA's math path (meta):
    # its backward is grouped as one attention backward only when the same count saw its forward
    # (docs/methodology.md)
    if attn == "sdpa" and device == "meta":
        return
    opt.zero_grad(set_to_none=True)
    graph = loss()
    only = torchscan.measure_flops(lambda: graph.backward())
    assert only["total"]["value"] == backward["total"]["value"]


def test_llama_backward_products_match_flopcountermode() -> None:
    model, ids = _llama("eager", "cpu")
    graph = model(input_ids=ids, labels=ids).loss
    with FlopCounterMode(display=False) as reference:
        graph.backward(retain_graph=True)
    counts = {str(k): v for k, v in reference.get_flop_counts()["Global"].items()}
    model.zero_grad(set_to_none=True)
    step = model(input_ids=ids, labels=ids).loss

    def workload() -> None:
        step.backward()

    report = torchscan.measure_flops(workload)
    ours = report["phases"]["backward"]["by_operator"]
    for op in ("aten.mm", "aten.bmm"):
        assert ours[op] == counts[op], op


def test_workload_summary_and_page_show_the_phases() -> None:
    model, x = _mlp("cpu")
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def step() -> None:
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    step()
    report = torchscan.measure_workload(step, device="cpu", metrics=("flops",), print_summary=False)
    phases = report["operator_flops"]["phases"]
    expected = [f"    {name}: {phases[name]['total']['value']:,.3f} FLOPs" for name in PHASES]
    summary = torchscan._engine.workload_summary(report)
    lines = summary.splitlines()
    start = lines.index(f"  Operator FLOPs: {report['totals']['operator_flops']['value']:,.3f} FLOPs")
    assert lines[start + 1 : start + 4] == expected
    page = torchscan.render_report(report)
    for line in expected:
        assert line in page
