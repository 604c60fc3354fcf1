"""CUDA checks of the measurement functions, for a lent GPU machine.

Not part of `make test` (CI has no GPU). Each check compares our number with
one taken independently on the same device (CUDA events, the caching
allocator's own counters, FlopCounterMode) and prints one JSON line; the last
line says how many checks held. Run on the device machine after
tools/device/build-ext.sh:

    PYTHONPATH=python python3 tools/device/gpu_checks.py
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

os.environ.setdefault("KINETO_LOG_LEVEL", "6")

import torchscan  # noqa: E402
from torchscan import crawl_module, measure_flops, measure_latency, measure_workload, profile_workload  # noqa: E402
from torchscan.process import measure_peak_memory  # noqa: E402

RESULTS: list[tuple[str, bool]] = []
DEV = torch.device("cuda", 0)
MIB = 1 << 20


def record(name: str, ok: bool, **facts: object) -> None:
    RESULTS.append((name, ok))
    print(json.dumps({"check": name, "ok": ok, **facts}, default=str), flush=True)


def check(fn):  # noqa: ANN001, ANN201
    def run() -> None:
        try:
            fn()
        except Exception as exc:  # a crash is a failed check, the others still run
            record(fn.__name__, False, error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc()[-1500:])

    return run


def event_seconds(fn, repeats: int = 50) -> float:  # noqa: ANN001
    """Median per-call device time of fn from CUDA events (independent of our timer)."""
    for _ in range(5):
        fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    times.sort()
    return times[len(times) // 2]


@check
def peak_memory() -> None:
    keep: list[torch.Tensor] = []

    def workload() -> None:
        a = torch.empty(64 * MIB, dtype=torch.uint8, device=DEV)
        b = torch.empty(128 * MIB, dtype=torch.uint8, device=DEV)
        keep.append(a)
        del b

    torch.cuda.synchronize(DEV)
    allocated_before = torch.cuda.memory_allocated(DEV)
    result = measure_peak_memory(workload, device="cuda")
    expected_allocated_peak = allocated_before + 192 * MIB
    record(
        "peak_memory_cuda",
        result["device"] == "cuda:0"
        and result["metric"] == "pytorch_reserved_bytes"
        and result["allocated_peak_bytes"] == expected_allocated_peak
        and result["peak_bytes"] >= expected_allocated_peak
        and result["peak_bytes"] == torch.cuda.max_memory_reserved(DEV),
        result=result,
        expected_allocated_peak=expected_allocated_peak,
        max_memory_reserved_after=torch.cuda.max_memory_reserved(DEV),
    )


def matmul_workload():  # noqa: ANN201
    a = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=DEV, dtype=torch.bfloat16)
    return lambda: a @ b


@check
def latency() -> None:
    workload = matmul_workload()
    reference = event_seconds(workload)
    report = measure_latency(workload, device="cuda", warmup=5, min_run_time=0.5)
    ours = report["totals"]["latency"]["value"]
    # An unsynchronized clock would see only the launch (~10 us) of a ~1.4 ms product.
    ratio = ours / reference
    record(
        "latency_cuda_vs_events",
        0.9 <= ratio <= 1.15 and report["context"]["device"] == "cuda:0",
        ours_s=ours,
        cuda_events_s=reference,
        ratio=ratio,
        tflops=2 * 8192**3 / ours / 1e12,
        first_call_s=report["totals"]["first_call_latency"]["value"],
        device_name=report["context"]["device_name"],
        measurement=report["measurement"],
    )


@check
def profile() -> None:
    workload = matmul_workload()
    reference = event_seconds(workload, repeats=20)
    report = profile_workload(workload, device="cuda", limit=5)
    rows = report["operators"]
    mm = [r for r in rows if r["operator"] == "aten::mm"]
    device_mm = mm[0]["device_self_seconds"] if mm else None
    record(
        "profile_cuda_device_time",
        report["context"]["device_time_supported"] is True
        and not report["diagnostics"]
        and device_mm is not None
        and 0.7 <= device_mm / reference <= 1.4
        and rows[0]["operator"] == "aten::mm",
        rows=rows,
        cuda_events_s=reference,
        context=report["context"],
    )


@check
def workload_report() -> None:
    workload = matmul_workload()
    report = measure_workload(workload, device="cuda", profile=True, print_summary=False, min_run_time=0.3)
    totals = report["totals"]
    statuses = {name: metric["status"] for name, metric in totals.items()}
    flops = totals["operator_flops"]
    record(
        "measure_workload_cuda",
        all(statuses[m] == "complete" for m in ("latency", "throughput", "operator_flops", "peak_memory", "first_call_latency"))
        and flops["value"] == 2 * 8192**3
        and totals["peak_memory"]["method"] == "torch.cuda.max_memory_reserved"
        and report["context"]["profile_status"] == "complete",
        statuses=statuses,
        peak_memory=totals["peak_memory"],
        profile_status=report["context"]["profile_status"],
        diagnostics=report.get("diagnostics"),
    )


def fcm_total(fn) -> int:  # noqa: ANN001
    with FlopCounterMode(display=False) as mode:
        fn()
    return int(mode.get_total_flops())


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).flatten(1))


@check
def crawl_cpu_equals_cuda() -> None:
    torch.manual_seed(0)
    model = SmallCNN()
    cpu = crawl_module(model, (3, 32, 32))
    gpu = crawl_module(model.to(DEV), (3, 32, 32))
    keys = ("module_flops", "macs", "dmas", "operator_flops", "parameters")
    same = {k: cpu["totals"][k] == gpu["totals"][k] for k in keys}
    record(
        "crawl_cnn_cuda_equals_cpu",
        all(same.values()) and gpu["totals"]["operator_flops"]["status"] == "complete",
        same=same,
        cuda_operator_flops=gpu["totals"]["operator_flops"],
        diagnostics=[(d["code"], d.get("message", "")[:160]) for d in gpu["diagnostics"]],
    )


@check
def training_step_cpu_equals_cuda() -> None:
    # Forward + backward + SGD: cuDNN's BatchNorm and its backward run on CUDA.
    def step_of(device: torch.device):  # noqa: ANN202
        torch.manual_seed(0)
        model = SmallCNN().to(device).train()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        x = torch.randn(4, 3, 32, 32, device=device)

        def step() -> None:
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()

        return step

    cpu = measure_flops(step_of(torch.device("cpu")))
    gpu = measure_flops(step_of(DEV))
    only_gpu = {k: v for k, v in gpu["by_operator"].items() if cpu["by_operator"].get(k) != v}
    only_cpu = {k: v for k, v in cpu["by_operator"].items() if gpu["by_operator"].get(k) != v}
    record(
        "training_step_cuda_equals_cpu",
        gpu["total"]["status"] == "complete" and gpu["total"]["value"] == cpu["total"]["value"],
        cpu_total=cpu["total"],
        cuda_total=gpu["total"],
        differing_cuda=only_gpu,
        differing_cpu=only_cpu,
        diagnostics=[(d["code"], d.get("message", "")[:160]) for d in gpu["diagnostics"]],
    )


@check
def sdpa_kernels() -> None:
    # Which fused attention kernels each backend runs, and how we count them.
    q, k, v = (torch.randn(2, 4, 128, 64, device=DEV, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    from torch.nn.attention import SDPBackend, sdpa_kernel

    seen = {}
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.MATH):

        def step() -> None:
            with sdpa_kernel(backend):
                out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
                out.sum().backward()

        try:
            report = measure_flops(step)
        except Exception as exc:
            seen[backend.name] = f"{type(exc).__name__}: {exc}"
            continue
        seen[backend.name] = {
            "total": report["total"],
            "by_operator": report["by_operator"],
            "fcm": fcm_total(step),
            "diagnostics": [(d["code"], d.get("message", "")[:160]) for d in report["diagnostics"]],
        }
    record("sdpa_fused_kernels_cuda", True, kernels=seen)


@check
def hf_sdpa_model() -> None:
    import transformers
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
    )
    config._attn_implementation = "sdpa"
    torch.manual_seed(0)
    model = LlamaForCausalLM(config).to(DEV).eval()
    ids = torch.randint(0, 128, (1, 16), device=DEV)
    gpu = crawl_module(model, args=(ids,))
    attention_ops = {
        name: count for name, count in measure_flops(lambda: model(ids))["by_operator"].items()
        if "attention" in name or "softmax" in name or "bmm" in name
    }
    bf16 = model.to(torch.bfloat16)
    bf16_report = measure_flops(lambda: bf16(ids))
    cpu = crawl_module(model.float().to("cpu"), args=(ids.cpu(),))
    flops = gpu["totals"]["operator_flops"]
    record(
        "hf_llama_sdpa_cuda",
        flops["status"] == "complete",
        transformers=transformers.__version__,
        cuda_operator_flops=flops,
        cuda_attention_ops=attention_ops,
        cpu_operator_flops=cpu["totals"]["operator_flops"],
        cuda_module_flops=gpu["totals"]["module_flops"]["status"],
        diagnostics=sorted({(d["code"], d.get("message", "")[:120]) for d in gpu["diagnostics"]}),
        bf16_total=bf16_report["total"],
        bf16_attention_ops={k: v for k, v in bf16_report["by_operator"].items() if "attention" in k},
        bf16_diagnostics=sorted({d["code"] for d in bf16_report["diagnostics"]}),
    )


@check
def token_dependencies_cuda_masks() -> None:
    # CUDA masks are copied to the host outside every dispatch mode: the relations equal the CPU ones, and
    # the copy is neither counted nor listed among ignored operators.
    torch.manual_seed(0)
    layer = nn.TransformerDecoderLayer(8, 2, 16, dropout=0.0, batch_first=True)
    tgt, memory = torch.randn(2, 4, 8), torch.randn(2, 6, 8)
    causal = nn.Transformer.generate_square_subsequent_mask(4)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    kwargs = {"tgt_mask": causal, "memory_key_padding_mask": padding}
    cpu = crawl_module(layer, args=(tgt, memory), kwargs=kwargs)
    gpu_kwargs = {k: v.to(DEV) for k, v in kwargs.items()}
    tgt, memory = tgt.to(DEV), memory.to(DEV)
    gpu = crawl_module(layer.to(DEV), args=(tgt, memory), kwargs=gpu_kwargs)
    layer.eval()
    with torch.no_grad():  # the same forward, counted without a crawl (no mask is read)
        plain = measure_flops(lambda: layer(tgt, memory, **gpu_kwargs))
    padded = {**gpu_kwargs, "memory_key_padding_mask": gpu_kwargs["memory_key_padding_mask"].clone()}
    padded["memory_key_padding_mask"][0, -1] = True
    excluded = crawl_module(layer, args=(tgt, memory), kwargs=padded)
    record(
        "token_dependencies_cuda_masks",
        cpu["layers"][0]["token_dependencies"] == gpu["layers"][0]["token_dependencies"]
        and gpu["layers"][0]["token_dependencies"]["sources"][0]["relation"] == {"kind": "prefix"}
        and gpu["operator_flops"]["ignored_operators"] == plain["ignored_operators"]
        and excluded["layers"][0]["token_dependencies"]["status"] == "unavailable",
        cuda=gpu["layers"][0]["token_dependencies"]["sources"],
        ignored=sorted(gpu["operator_flops"]["ignored_operators"]),
    )


def main() -> int:
    print(json.dumps({
        "torch": torch.__version__, "cuda": torch.version.cuda, "gpu": torch.cuda.get_device_name(0),
        "python": sys.version.split()[0], "torchscan": getattr(torchscan, "__version__", "?"),
    }), flush=True)
    start = time.perf_counter()
    for fn in (
        peak_memory, latency, profile, workload_report, crawl_cpu_equals_cuda,
        training_step_cpu_equals_cuda, sdpa_kernels, hf_sdpa_model, token_dependencies_cuda_masks,
    ):
        fn()
    passed = sum(ok for _, ok in RESULTS)
    print(f"gpu_checks: {passed} passed, {len(RESULTS) - passed} failed ({time.perf_counter() - start:.1f} s)")
    return 0 if passed == len(RESULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
