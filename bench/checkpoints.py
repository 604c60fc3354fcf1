"""Checkpoint inspection time on a sharded safetensors checkpoint of 100 GB scale (headers only).

    python bench/checkpoints.py [--shards 30] [--layers 80]      (make bench runs it)

Writes a Llama-70B-shaped checkpoint into a temporary folder: `--shards` safetensors files whose headers are
real and whose data is a hole (sparse files: the disk holds a few KiB per shard), and the
`model.safetensors.index.json` that names them. Then times, side by side in one run (median of 7, after one
warm-up): torchscan.inspect_checkpoint (the C readers through the binding), `torchscan inspect --json` (the C
tool: process start included) and the safetensors package reading the same headers (safe_open on each shard:
keys, dtypes and shapes). Prints milliseconds; never asserts a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from safetensors import safe_open

from torchscan import inspect_checkpoint

DIM, FFN, VOCAB, KV = 8192, 28672, 128256, 1024


def llama70b_tensors(layers: int) -> list[tuple[str, list[int]]]:
    out = [("model.embed_tokens.weight", [VOCAB, DIM])]
    for i in range(layers):
        p = f"model.layers.{i}."
        out += [(p + "self_attn.q_proj.weight", [DIM, DIM]), (p + "self_attn.k_proj.weight", [KV, DIM]),
                (p + "self_attn.v_proj.weight", [KV, DIM]), (p + "self_attn.o_proj.weight", [DIM, DIM]),
                (p + "mlp.gate_proj.weight", [FFN, DIM]), (p + "mlp.up_proj.weight", [FFN, DIM]),
                (p + "mlp.down_proj.weight", [DIM, FFN]), (p + "input_layernorm.weight", [DIM]),
                (p + "post_attention_layernorm.weight", [DIM])]
    out += [("model.norm.weight", [DIM]), ("lm_head.weight", [VOCAB, DIM])]
    return out


def write_checkpoint(folder: Path, shards: int, layers: int) -> tuple[Path, int]:
    tensors = llama70b_tensors(layers)
    per = -(-len(tensors) // shards)
    weight_map, total = {}, 0
    for k in range(shards):
        part = tensors[k * per:(k + 1) * per]
        name = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        header, offset = {"__metadata__": {"format": "pt"}}, 0
        for tname, shape in part:
            n = 2
            for d in shape:
                n *= d
            header[tname] = {"dtype": "BF16", "shape": shape, "data_offsets": [offset, offset + n]}
            offset += n
            weight_map[tname] = name
        text = json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        with open(folder / name, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate(8 + len(text) + offset)  # a hole: nothing written
        total += offset
    index = folder / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return index, total


def median_ms(fn, repeat: int = 7) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=30)
    parser.add_argument("--layers", type=int, default=80)
    args = parser.parse_args()
    tool = shutil.which("torchscan", path=os.path.dirname(sys.executable))
    with tempfile.TemporaryDirectory() as d:
        folder = Path(d)
        index, total = write_checkpoint(folder, args.shards, args.layers)
        shards = sorted(folder.glob("*.safetensors"))
        report = inspect_checkpoint(index)
        assert report["totals"]["tensor_bytes"]["value"] == total and report["diagnostics"] == []

        def package() -> int:
            n = 0
            for path in shards:
                with safe_open(str(path), framework="pt") as f:
                    for key in f.keys():
                        s = f.get_slice(key)
                        s.get_dtype(), s.get_shape()
                        n += 1
            return n

        def cli() -> None:
            subprocess.run([tool, "inspect", "--json", str(index), "-o", os.devnull], check=True)

        ours = median_ms(lambda: inspect_checkpoint(index))
        ours_cli = median_ms(cli)
        theirs = median_ms(package)
        disk = sum(p.stat().st_blocks * 512 for p in shards)
        print(f"sharded safetensors checkpoint: {len(shards)} shards, {report['totals']['tensors']['value']} tensors, "
              f"{total / 1e9:.1f} GB of tensor data ({disk / 1e6:.1f} MB on disk: sparse)")
        print(f"  torchscan.inspect_checkpoint           {ours:8.2f} ms  (median of 7)")
        print(f"  torchscan inspect --json (C tool)      {ours_cli:8.2f} ms  (process start included)")
        print(f"  safetensors safe_open, keys and shapes {theirs:8.2f} ms")
        print(f"  ratio safetensors / inspect_checkpoint {theirs / ours:8.2f}")


if __name__ == "__main__":
    main()
