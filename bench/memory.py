"""Memory planning on the meta device: estimate_memory of a Llama-3-70B training step, next to MemTracker.

The Llama-3-70B configuration (transformers' LlamaConfig: 80 layers, hidden 8192, MLP 28672, 64 query and 8
key/value heads, vocabulary 128,256, untied embeddings) is built on ``meta`` in bf16, so nothing is allocated.
One AdamW step (state in the parameters' dtype, bf16) runs first without TorchScan; the second step, the steady
state, batch 1 and sequence 4096, is simulated with ``attention="fused"`` (SDPA as a fused kernel) and
``"as_run"`` (on meta SDPA runs its math path, which materialises the attention matrix). It prints the peaks,
where they happen, the composition against the closed form (parameters 2N, gradients 2N, AdamW state 4N bytes
plus one float32 step scalar per parameter tensor, on the CPU), the wall time and the peak RSS of this process.

torch.distributed._tools.mem_tracker.MemTracker runs next to it on the same step of the same configuration cut
to 2 layers (same shapes per layer; MemTracker's Python dispatch mode and module hooks take about 100 s for the
80 layers here): ``--memtracker-full`` runs it on the 80 layers too. Nothing is asserted; the figures are quoted
in docs/memory-planning.md.
"""

from __future__ import annotations

import resource
import sys
import time

import torch

import torchscan

GiB = 2**30


def _rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GiB


def _config(layers: int):
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=128256,
        hidden_size=8192,
        intermediate_size=28672,
        num_hidden_layers=layers,
        num_attention_heads=64,
        num_key_value_heads=8,
        max_position_embeddings=8192,
        rope_theta=500000.0,
        tie_word_embeddings=False,
    )


def _setup(layers: int, batch: int, seq: int):
    """The model on meta in bf16, AdamW, and a step whose first call already ran (steady state)."""
    from transformers import LlamaForCausalLM

    with torch.device("meta"):
        model = LlamaForCausalLM._from_config(_config(layers), attn_implementation="sdpa", dtype=torch.bfloat16)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.zeros(batch, seq, dtype=torch.long, device="meta")

    def step() -> None:
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # the first step creates AdamW's state; the second is the steady state
    return model, opt, step


def _comp(c: dict) -> str:
    return ", ".join(f"{k} {v / GiB:.2f}" for k, v in c.items())


def _memtracker(model, opt, step) -> dict | None:
    try:
        from torch.distributed._tools.mem_tracker import MemTracker
    except ImportError:
        print("MemTracker: not available in this PyTorch")
        return None
    t = time.perf_counter()
    try:
        tracker = MemTracker()
        tracker.track_external(model, opt)
        with tracker:
            step()
        snap = tracker.get_tracker_snapshot("peak")
    except Exception as error:  # noqa: BLE001 - a bench reports, it does not fail
        print(f"MemTracker on the same step failed: {type(error).__name__}: {error}")
        return None
    print(f"  MemTracker ({time.perf_counter() - t:.1f} s), GiB at its peak:")
    for device, parts in snap.items():
        print(f"    {device}: " + ", ".join(f"{getattr(k, 'value', k)} {v / GiB:.2f}" for k, v in parts.items()))
    return snap


def main() -> None:
    try:
        import transformers  # noqa: F401
    except ImportError:
        print("bench/memory.py: transformers is not installed; skipped")
        return
    batch, seq = 1, 4096
    t0 = time.perf_counter()
    model, opt, step = _setup(80, batch, seq)
    n = sum(p.numel() for p in model.parameters())
    count = len(list(model.parameters()))
    print(
        f"Llama-3-70B config on meta, bf16, batch {batch}, sequence {seq}: N = {n:,} parameters in {count} "
        f"tensors; built and first step in {time.perf_counter() - t0:.1f} s"
    )
    print(
        f"closed form: parameters 2N = {2 * n / GiB:.2f} GiB, gradients 2N = {2 * n / GiB:.2f} GiB, "
        f"AdamW state 4N + 4 x {count} = {(4 * n + 4 * count) / GiB:.2f} GiB"
    )
    for attention in ("fused", "as_run"):
        t = time.perf_counter()
        r = torchscan.estimate_memory(step, modules=model, attention=attention)
        wall = time.perf_counter() - t
        peak, rp = r["peak"], r["resident_peak"]
        in_step = r["phases"]["optimizer"]["resident_peak"]["composition"]
        print(f"\nattention={attention!r}: simulated step {wall:.1f} s, peak RSS of this process {_rss_gib():.2f} GiB")
        print(
            f"  peak_bytes          {r['totals']['peak_bytes']['value'] / GiB:8.2f} GiB at {peak['operator']} "
            f"({peak['phase']}, {peak['layer']})"
        )
        print(
            f"  resident_peak_bytes {r['totals']['resident_peak_bytes']['value'] / GiB:8.2f} GiB at "
            f"{rp['operator']} ({rp['phase']}, {rp['layer']})"
        )
        print("  GiB at the resident peak: " + _comp(rp["composition"]))
        print("  GiB at the optimizer step's resident peak: " + _comp(in_step))
        print("  bytes by device at the resident peak: " + ", ".join(f"{k} {v:,}" for k, v in rp["by_device"].items()))
        print(
            f"  closed form: parameters {in_step['parameter'] == 2 * n}, gradients {in_step['gradient'] == 2 * n}, "
            f"optimizer_state {in_step['optimizer_state'] == 4 * n + 4 * count}"
        )
        for name, ph in r["phases"].items():
            print(
                f"  {name:9} {ph['operators']:6} operators, own peak {ph['peak_bytes'] / GiB:7.2f} GiB, "
                f"resident peak {ph['resident_peak_bytes'] / GiB:7.2f} GiB"
            )
    full = "--memtracker-full" in sys.argv[1:]
    layers = 80 if full else 2
    if not full:
        del model, opt, step
        model, opt, step = _setup(layers, batch, seq)
    print(f"\nSide by side on the same step, {layers} layers, attention as run (MemTracker sees what ran):")
    r = torchscan.estimate_memory(step, modules=model)
    print(f"  estimate_memory, GiB at the resident peak: {_comp(r['resident_peak']['composition'])}; "
          f"total {r['totals']['resident_peak_bytes']['value'] / GiB:.2f}")
    _memtracker(model, opt, step)


if __name__ == "__main__":
    sys.exit(main())
