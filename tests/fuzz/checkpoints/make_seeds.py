"""Writes the generated seeds of tests/fuzz/checkpoints/ (run from the repository root with the .venv's
python; torch, safetensors and gguf as in requirements-dev.txt): small files that between them hold every
dtype, container and metadata type the readers know, for test_hostile.c and `make fuzz`."""

from __future__ import annotations

import collections
import struct
from pathlib import Path

import gguf
import numpy as np
import torch
from safetensors.torch import save_file

ROOT = Path("tests/fuzz/checkpoints")


def torch_objects() -> dict:
    base = torch.arange(6, dtype=torch.float32)
    lin = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    state = lin.state_dict()
    return {
        "state": state,
        "dtypes": [torch.ones(2, dtype=d) for d in (torch.float16, torch.bfloat16, torch.float64, torch.int64,
                                                     torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool,
                                                     torch.complex64)],
        "view": base[2:5],  # shares base's storage at an offset
        "base": base,
        "scalar": torch.tensor(3.5),
        "empty": torch.empty(0, 3),
        "strided": torch.ones(2, 3).t(),
        "param": torch.nn.Parameter(torch.ones(2)),
        "meta": ("text", None, True, 1.25, 2**40, -7, b"\x00\x01", (1, (2, 3)), [4, 5]),
        "ordered": collections.OrderedDict(a=1, b=[torch.zeros(1)]),
    }


def main() -> None:
    torch.manual_seed(0)
    torch.save(torch_objects(), ROOT / "torch_zip" / "kinds.pt")
    torch.save(torch_objects(), ROOT / "torch_legacy" / "kinds.pt", _use_new_zipfile_serialization=False)
    torch.save(torch_objects()["state"], ROOT / "torch_legacy" / "proto2.pt",
               _use_new_zipfile_serialization=False, pickle_protocol=2)
    tensors = {f"t.{d}": torch.ones(2, dtype=getattr(torch, d)) for d in
               ("float64", "float16", "bfloat16", "int64", "int32", "int16", "int8", "uint8", "bool",
                "float8_e4m3fn", "float8_e5m2")}
    tensors["scalar"] = torch.tensor(1.0)
    tensors["empty"] = torch.empty(0, 2)
    tensors["model.layers.0.w"] = torch.ones(2, 2)
    tensors["model.layers.1.w"] = torch.ones(2, 2)
    save_file(tensors, str(ROOT / "safetensors" / "kinds.safetensors"), metadata={"format": "pt", "k": "v"})

    w = gguf.GGUFWriter(str(ROOT / "gguf" / "kinds.gguf"), "llama")
    w.add_custom_alignment(16)
    w.add_uint8("k.u8", 1)
    w.add_int8("k.i8", -1)
    w.add_uint16("k.u16", 2)
    w.add_int16("k.i16", -2)
    w.add_uint32("k.u32", 3)
    w.add_int32("k.i32", -3)
    w.add_uint64("k.u64", 4)
    w.add_int64("k.i64", -4)
    w.add_float32("k.f32", 1.5)
    w.add_float64("k.f64", 2.5)
    w.add_bool("k.bool", False)
    w.add_string("k.str", "s")
    w.add_array("k.ints", [1, 2, 3])
    w.add_array("k.strs", ["a", "b"])
    w.add_array("k.floats", [0.5, 1.5])
    w.add_tensor("token_embd.weight", np.ones((2, 4), dtype=np.float16))
    w.add_tensor("blk.0.attn_q.weight", np.ones((4,), dtype=np.float32))
    w.add_tensor("blk.0.ffn.weight", np.zeros((2, 2), dtype=np.int8))
    block, size = gguf.constants.GGML_QUANT_SIZES[gguf.GGMLQuantizationType.Q8_0]
    raw = np.zeros((1, size), dtype=np.uint8)
    w.add_tensor("blk.1.attn_q.weight", raw, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    raw = bytearray((ROOT / "gguf" / "kinds.gguf").read_bytes())
    struct.pack_into("<I", raw, 4, 2)  # version 2
    (ROOT / "gguf" / "kinds_v2.gguf").write_bytes(bytes(raw))


if __name__ == "__main__":
    main()
