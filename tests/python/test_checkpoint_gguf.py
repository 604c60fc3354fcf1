"""inspect_checkpoint on GGUF files written by the gguf package (0.19.0): tensor names, ggml types, shapes,
element and byte counts and data offsets equal to what gguf.GGUFReader reads; metadata; every ggml type's block
size against the package's GGML_QUANT_SIZES; hostile headers refused saying where."""

from __future__ import annotations

import struct
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from torchscan import inspect_checkpoint

QUANTIZED = [GGMLQuantizationType.Q4_0, GGMLQuantizationType.Q8_0, GGMLQuantizationType.Q4_K,
             GGMLQuantizationType.Q6_K, GGMLQuantizationType.IQ4_XS, GGMLQuantizationType.MXFP4,
             GGMLQuantizationType.Q1_0]


def write_gguf(path: Path, version: int = 3, alignment: int | None = None) -> None:
    w = gguf.GGUFWriter(str(path), "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_block_count(2)
    w.add_context_length(128)
    w.add_embedding_length(64)
    w.add_name("tiny")
    w.add_tokenizer_model("llama")
    w.add_token_list([f"tok{i}" for i in range(300)])
    w.add_token_scores([0.5] * 10)
    w.add_float32("tiny.scale", 1.5)
    w.add_bool("tiny.flag", True)
    rng = np.random.default_rng(0)
    w.add_tensor("token_embd.weight", rng.standard_normal((10, 64)).astype(np.float16))
    w.add_tensor("output_norm.weight", np.ones(64, dtype=np.float32))
    for i, qtype in enumerate(QUANTIZED):
        block, size = GGML_QUANT_SIZES[qtype]
        rows, cols = 3, block * 2
        raw = rng.integers(0, 255, (rows, cols // block * size), dtype=np.uint8)
        w.add_tensor(f"blk.{i}.attn_q.weight", raw, raw_dtype=qtype)
    w.add_tensor("blk.0.ffn_up.weight", rng.integers(-5, 5, (4, 8)).astype(np.int8))
    w.add_tensor("blk.1.ffn_up.weight", np.zeros((2, 3), dtype=np.float64))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    if version == 2:
        raw = bytearray(path.read_bytes())
        struct.pack_into("<I", raw, 4, 2)
        path.write_bytes(bytes(raw))


def test_equals_the_gguf_package(tmp_path):
    path = tmp_path / "tiny.gguf"
    write_gguf(path)
    report = inspect_checkpoint(path)
    assert report["format"] == "gguf" and report["totals"]["tensors"]["status"] == "complete"
    reader = gguf.GGUFReader(str(path))
    ref = {t.name: (t.tensor_type.name, [int(d) for d in t.shape], int(t.n_elements), int(t.n_bytes),
                    int(t.data_offset)) for t in reader.tensors}
    got = {t["name"]: (t["dtype"], t["shape"], t["elements"], t["bytes"], t["offset"]) for t in report["tensors"]}
    assert got == ref
    assert [t["name"] for t in report["tensors"]] == [t.name for t in reader.tensors]
    meta = report["metadata"]
    assert meta["gguf.version"] == 3
    assert meta["general.architecture"] == "llama" and meta["llama.block_count"] == 2
    assert meta["tokenizer.ggml.tokens"] == {"type": "array", "item_type": "string", "length": 300}
    assert meta["tokenizer.ggml.scores"] == [0.5] * 10
    assert meta["tiny.scale"] == 1.5 and meta["tiny.flag"] is True
    assert set(meta) == {*reader.fields} - {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count"} | {"gguf.version"}
    dtypes = {d["dtype"] for d in report["dtypes"]}
    assert {q.name for q in QUANTIZED} <= dtypes
    assert report["totals"]["tensor_bytes"]["value"] == sum(r[3] for r in ref.values())
    rows = {m["path"]: m for m in report["modules"]}
    assert rows["blk"]["tensors"] == len(QUANTIZED) + 2


def test_version_2_and_alignment(tmp_path):
    path = tmp_path / "v2.gguf"
    write_gguf(path, version=2, alignment=64)
    report = inspect_checkpoint(path)
    assert report["metadata"]["gguf.version"] == 2 and report["metadata"]["general.alignment"] == 64
    assert all(t["offset"] % 64 == 0 for t in report["tensors"])


def test_every_ggml_type_matches_the_package():
    """Each type the package knows is read with its block size: a one-block tensor of each."""
    import tempfile

    for qtype, (block, size) in GGML_QUANT_SIZES.items():
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "t.gguf"
            w = gguf.GGUFWriter(str(path), "llama")
            w.add_tensor("t", np.zeros((2, size), dtype=np.uint8), raw_dtype=qtype)
            w.write_header_to_file()
            w.write_kv_data_to_file()
            w.write_tensors_to_file()
            w.close()
            (t,) = inspect_checkpoint(path)["tensors"]
            assert (t["dtype"], t["shape"], t["elements"], t["bytes"]) == (qtype.name, [block, 2], 2 * block, 2 * size)


def header(ntensors: int, nkv: int, version: int = 3) -> bytes:
    return b"GGUF" + struct.pack("<IQQ", version, ntensors, nkv)


def gstr(s: bytes) -> bytes:
    return struct.pack("<Q", len(s)) + s


def tensor_info(name: bytes, dims: list[int], type_id: int, offset: int) -> bytes:
    return gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims) + struct.pack(
        "<IQ", type_id, offset)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (header(1, 0) + tensor_info(b"w", [1 << 40, 1 << 40], 0, 0), "dimensions' product overflows 64 bits"),
        (header(1, 0) + tensor_info(b"w", [1 << 62], 0, 0), "its byte size overflows 64 bits"),
        (header(1, 0) + tensor_info(b"w", [4], 0, 0) + bytes(8), r"tensor 'w': its 16 bytes at data offset 0 end past"),
        (header(2, 0) + tensor_info(b"a", [8], 0, 0) + tensor_info(b"b", [8], 0, 0) + bytes(64 + 32),
         "tensor '(a|b)' overlaps tensor '(a|b)'"),
        (header(1, 0) + tensor_info(b"w", [4], 0, 3) + bytes(64), "offset 3 is not a multiple of the alignment 32"),
        (header(1, 0) + tensor_info(b"w", [33], 2, 0) + bytes(64), "not a multiple of its type's block size"),
        (header(10**15, 10**15), "cannot fit in"),
        (header(0, 1) + gstr(b"k") + struct.pack("<IIQ", 9, 8, 10**12), "an array longer than the bytes left"),
        (header(0, 1) + gstr(b"k") + struct.pack("<I", 99), r"\(k\): an unknown value type"),
        (header(0, 2) + gstr(b"k") + struct.pack("<IB", 0, 1) + gstr(b"k") + struct.pack("<IB", 0, 1),
         "a duplicate metadata key"),
        (header(0, 1) + gstr(b"general.alignment") + struct.pack("<II", 4, 3), "not a power of two"),
        (header(0, 0, version=1), "GGUF version 1"),
        (header(0, 1) + struct.pack("<Q", 1 << 50), "truncated"),
    ],
)
def test_hostile_headers(tmp_path, content, message):
    path = tmp_path / "bad.gguf"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as info:
        inspect_checkpoint(path)
    assert str(info.value).startswith("bad.gguf: ")


def test_unknown_type_is_partial(tmp_path):
    path = tmp_path / "u.gguf"
    path.write_bytes(header(1, 0) + tensor_info(b"w", [4], 4, 0) + bytes(64))
    report = inspect_checkpoint(path)
    assert report["totals"]["tensor_bytes"]["status"] == "partial"
    assert [d["code"] for d in report["diagnostics"]] == ["checkpoint_unknown_dtype"]
    assert report["tensors"][0]["bytes"] is None


def test_every_truncation_is_refused(tmp_path):
    path = tmp_path / "t.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_uint32("a.b", 7)
    w.add_tensor("w", np.ones((2, 3), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    raw = path.read_bytes()
    (t,) = inspect_checkpoint(path)["tensors"]
    end = t["offset"] + t["bytes"]  # after it only the writer's padding, which nothing needs
    cut = tmp_path / "cut.gguf"
    for n in range(4, end):
        cut.write_bytes(raw[:n])
        with pytest.raises(ValueError, match=r"^cut\.gguf: "):
            inspect_checkpoint(cut)
