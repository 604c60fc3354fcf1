"""inspect_checkpoint on safetensors files and sharded checkpoints: every tensor's name, dtype, shape and byte
range equal to what the safetensors package reads from the same files; hostile headers refused with a message
that says where; the CLI's `inspect` and `--against`."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from torchscan import crawl_module, format_checkpoint, inspect_checkpoint, match_checkpoint

TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))

ST_DTYPES = {
    "BF16": "torch.bfloat16", "F16": "torch.float16", "F32": "torch.float32", "F64": "torch.float64",
    "I8": "torch.int8", "U8": "torch.uint8", "I16": "torch.int16", "I32": "torch.int32", "I64": "torch.int64",
    "BOOL": "torch.bool", "F8_E4M3": "torch.float8_e4m3fn", "F8_E5M2": "torch.float8_e5m2",
}


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    assert TOOL is not None
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60, check=False)


def llama_like(vocab: int = 64, dim: int = 16, layers: int = 3) -> dict[str, torch.Tensor]:
    """A Llama-shaped state dict: bf16 weights, an fp8 and an int8 tensor, norms in fp32."""
    sd: dict[str, torch.Tensor] = {"model.embed_tokens.weight": torch.randn(vocab, dim).to(torch.bfloat16)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for name, shape in (("self_attn.q_proj", (dim, dim)), ("self_attn.k_proj", (dim // 2, dim)),
                            ("self_attn.v_proj", (dim // 2, dim)), ("self_attn.o_proj", (dim, dim)),
                            ("mlp.gate_proj", (2 * dim, dim)), ("mlp.up_proj", (2 * dim, dim)),
                            ("mlp.down_proj", (dim, 2 * dim))):
            sd[p + name + ".weight"] = torch.randn(*shape).to(torch.bfloat16)
        sd[p + "input_layernorm.weight"] = torch.ones(dim)
        sd[p + "post_attention_layernorm.weight"] = torch.ones(dim)
    sd["model.layers.0.mlp.down_proj.weight_scale"] = torch.ones(1)
    sd["model.layers.1.mlp.up_proj.weight"] = torch.randn(2 * dim, dim).to(torch.float8_e4m3fn)
    sd["model.layers.2.mlp.gate_proj.weight"] = torch.randint(-5, 5, (2 * dim, dim), dtype=torch.int8)
    sd["model.norm.weight"] = torch.ones(dim)
    sd["lm_head.weight"] = torch.randn(vocab, dim).to(torch.bfloat16)
    return sd


def reference(paths: list[Path]) -> dict[str, tuple[str, list[int]]]:
    """What the safetensors package reads: name -> (torch dtype name, shape)."""
    out = {}
    for path in paths:
        with safe_open(str(path), framework="pt") as f:
            for name in f.keys():
                s = f.get_slice(name)
                out[name] = (ST_DTYPES[s.get_dtype()], list(s.get_shape()))
    return out


def ours(report: dict) -> dict[str, tuple[str, list[int]]]:
    return {t["name"]: (t["dtype"], t["shape"]) for t in report["tensors"]}


def test_single_file_equals_the_safetensors_package(tmp_path):
    sd = llama_like()
    path = tmp_path / "model.safetensors"
    save_file(sd, str(path), metadata={"format": "pt"})
    report = inspect_checkpoint(path)
    assert report["report_type"] == "checkpoint" and report["schema_version"] == 1
    assert report["format"] == "safetensors"
    assert ours(report) == reference([path])
    assert report["metadata"] == {"format": "pt"}
    totals = report["totals"]
    assert totals["tensors"] == {"status": "complete", "value": len(sd), "known_value": len(sd),
                                 "unit": "tensors", "scope": "checkpoint", "method": "safetensors_header"}
    assert totals["elements"]["value"] == sum(t.numel() for t in sd.values())
    nbytes = sum(t.numel() * t.element_size() for t in sd.values())
    assert totals["tensor_bytes"]["value"] == totals["stored_bytes"]["value"] == nbytes
    assert totals["file_bytes"]["value"] == path.stat().st_size
    # byte ranges: the data at each offset is the tensor's
    raw = path.read_bytes()
    for t in report["tensors"]:
        data = sd[t["name"]].contiguous().view(torch.uint8).reshape(-1).numpy().tobytes()
        assert raw[t["offset"]:t["offset"] + t["bytes"]] == data
    assert report["diagnostics"] == [] and report["shared"] == []
    assert report["files"] == [{"name": "model.safetensors", "format": "safetensors", "bytes": len(raw),
                                "header_bytes": 8 + struct.unpack("<Q", raw[:8])[0], "tensors": len(sd),
                                "tensor_bytes": nbytes}]
    json.dumps(report, allow_nan=False)


def test_module_tree_and_dtypes(tmp_path):
    sd = llama_like(layers=12)
    path = tmp_path / "m.safetensors"
    save_file(sd, str(path))
    report = inspect_checkpoint(path)
    rows = {m["path"]: m for m in report["modules"]}
    assert report["modules"][0]["path"] == "" and rows[""]["tensors"] == len(sd)
    for prefix in ("model", "model.layers", "model.layers.3", "model.layers.3.mlp", "lm_head"):
        under = [t for n, t in sd.items() if n.startswith(prefix + ".")]
        assert rows[prefix]["tensors"] == len(under)
        assert rows[prefix]["elements"] == sum(t.numel() for t in under)
        assert rows[prefix]["bytes"] == sum(t.numel() * t.element_size() for t in under)
        assert rows[prefix]["depth"] == prefix.count(".") + 1
    # preorder, numeric components in numeric order
    layer_rows = [m["path"] for m in report["modules"] if m["depth"] == 3 and m["path"].startswith("model.layers.")]
    assert layer_rows == [f"model.layers.{i}" for i in range(12)]
    dtypes = {d["dtype"]: d for d in report["dtypes"]}
    for name, t in sd.items():
        assert str(t.dtype) in dtypes, name
    for dtype, d in dtypes.items():
        ts = [t for t in sd.values() if str(t.dtype) == dtype]
        assert (d["tensors"], d["elements"], d["bytes"]) == (
            len(ts), sum(t.numel() for t in ts), sum(t.numel() * t.element_size() for t in ts))
    assert [d["dtype"] for d in report["dtypes"]] == sorted(dtypes)


def write_sharded(tmp_path: Path, sd: dict[str, torch.Tensor], shards: int = 3) -> Path:
    names = sorted(sd)
    weight_map = {}
    for k in range(shards):
        part = {n: sd[n] for n in names[k::shards]}
        fname = f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        save_file(part, str(tmp_path / fname), metadata={"format": "pt"})
        weight_map.update({n: fname for n in part})
    total = sum(t.numel() * t.element_size() for t in sd.values())
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"metadata": {"total_size": total}, "weight_map": weight_map}))
    return index


def test_sharded_checkpoint(tmp_path):
    sd = llama_like()
    index = write_sharded(tmp_path, sd)
    report = inspect_checkpoint(index)
    assert report["format"] == "safetensors_sharded"
    shards = sorted(tmp_path.glob("*.safetensors"))
    assert ours(report) == reference(shards)
    files = report["files"]
    assert files[0]["format"] == "safetensors_index" and files[0]["name"] == index.name
    assert sorted(f["name"] for f in files[1:]) == [p.name for p in shards]
    for f in files[1:]:
        part = [t for t in report["tensors"] if report["files"][t["file"]]["name"] == f["name"]]
        assert f["tensors"] == len(part) and f["tensor_bytes"] == sum(t["bytes"] for t in part)
        assert f["bytes"] == (tmp_path / f["name"]).stat().st_size
    assert report["metadata"]["total_size"] == report["totals"]["tensor_bytes"]["value"]
    assert report["diagnostics"] == []
    assert report["totals"]["file_bytes"]["value"] == sum(p.stat().st_size for p in [index, *shards])


def test_sharded_index_disagreeing_with_its_shards(tmp_path):
    sd = llama_like()
    index = write_sharded(tmp_path, sd)
    doc = json.loads(index.read_text())
    moved = next(iter(doc["weight_map"]))
    doc["weight_map"]["ghost.weight"] = doc["weight_map"][moved]
    doc["weight_map"][moved] = sorted(set(doc["weight_map"].values()))[-1]
    doc["metadata"]["total_size"] += 1
    index.write_text(json.dumps(doc))
    report = inspect_checkpoint(index)
    codes = [d["code"] for d in report["diagnostics"]]
    assert codes.count("checkpoint_index_mismatch") >= 2
    assert any(d.get("path") == "ghost.weight" for d in report["diagnostics"])
    assert report["totals"]["tensors"]["status"] == "partial"


@pytest.mark.parametrize("shard", ["../model.safetensors", "/etc/passwd", "sub/x.safetensors", "..", ""])
def test_an_index_cannot_point_elsewhere(tmp_path, shard):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": shard}}))
    with pytest.raises(ValueError, match=r"weight_map\.w: expected the file name of a shard"):
        inspect_checkpoint(index)


def test_missing_shard_is_an_os_error(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(json.dumps({"weight_map": {"w": "nope.safetensors"}}))
    with pytest.raises(OSError, match="nope.safetensors: cannot open"):
        inspect_checkpoint(index)


def raw_file(header: dict | bytes, data: bytes = b"", length: int | None = None) -> bytes:
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack("<Q", len(text) if length is None else length) + text + data


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                   "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, bytes(12)),
         r"tensor '(a|b)' \(data bytes \d+ to \d+\) overlaps tensor '(a|b)'"),
        (raw_file({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, bytes(8)),
         r"tensor 'a': data_offsets \[0, 16\] end past the end of the file"),
        (raw_file({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, bytes(8)),
         r"data_offsets \[0, 8\] hold 8 bytes, its dtype and shape 12"),
        (raw_file({"a": {"dtype": "F32", "shape": [2], "data_offsets": [8, 0]}}, bytes(8)),
         r"end before they begin"),
        (raw_file({}, b"", length=1 << 40), r"header length 1099511627776 \(byte 0\) is more than"),
        (raw_file({}, b"", length=50), r"truncated: the header \(50 bytes at byte 8\)"),
        (raw_file(b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
                  b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}', bytes(4)),
         r"header at byte \d+: duplicate object key"),
        (raw_file({"a": {"dtype": "Q7", "shape": [1], "data_offsets": [0, 4]}}, bytes(4)), "unknown dtype 'Q7'"),
        (raw_file({"a": {"dtype": "F32", "shape": [1 << 62, 8], "data_offsets": [0, 4]}}, bytes(4)),
         "its size overflows 64 bits"),
        (raw_file({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, bytes(4)),
         r"shape\[0\]: expected a non-negative integer"),
        (raw_file({"a": {"dtype": "F32", "shape": [1] * 65, "data_offsets": [0, 4]}}, bytes(4)),
         "at most 64 sizes"),
        (raw_file({"__metadata__": {"k": 1}}), r"__metadata__\.k: expected text"),
        (raw_file(b'{"a": 1}'), "tensor 'a': expected an object"),
        (b"", "the file is empty"),
        (b"\x00\x01\x02\x03", "it begins with 00 01 02 03"),
    ],
)
def test_hostile_headers_are_refused_saying_where(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message) as info:
        inspect_checkpoint(path)
    assert str(info.value).startswith("bad.safetensors: ")


def test_unreferenced_bytes_are_a_diagnostic(tmp_path):
    path = tmp_path / "gap.safetensors"
    path.write_bytes(raw_file({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, bytes(12)))
    report = inspect_checkpoint(path)
    assert [d["code"] for d in report["diagnostics"]] == ["checkpoint_unreferenced_bytes"]
    assert "8 of its 12 data bytes belong to no tensor" in report["diagnostics"][0]["message"]
    assert report["totals"]["tensors"]["status"] == "complete"


def test_every_truncation_is_refused(tmp_path):
    path = tmp_path / "t.safetensors"
    save_file({"a": torch.ones(3, 2), "b.c": torch.zeros(5, dtype=torch.int64)}, str(path))
    raw = path.read_bytes()
    cut = tmp_path / "cut.safetensors"
    for n in range(len(raw)):
        cut.write_bytes(raw[:n])
        with pytest.raises(ValueError, match=r"^cut\.safetensors: "):
            inspect_checkpoint(cut)


def test_arguments():
    with pytest.raises(OSError, match="model.safetensors: cannot open: No such file"):
        inspect_checkpoint("/nonexistent/model.safetensors")
    with pytest.raises(OSError, match="is a directory"):
        inspect_checkpoint("/")
    with pytest.raises(TypeError):
        inspect_checkpoint(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a checkpoint report"):
        format_checkpoint({"layers": []})
    with pytest.raises(ValueError):
        format_checkpoint({}, max_depth=-1)


# ---- the table, the CLI -----------------------------------------------------------------------------------------


def test_table_and_cli(tmp_path):
    sd = llama_like()
    path = tmp_path / "model.safetensors"
    save_file(sd, str(path))
    report = inspect_checkpoint(path)
    text = format_checkpoint(report, max_depth=2)
    assert text.startswith("Checkpoint (safetensors): 1 file\n")
    assert "(checkpoint)" in text and "    layers" in text and "q_proj" not in text
    assert "torch.float8_e4m3fn" in text
    result = tool("inspect", str(path), "--max-depth", "2")
    assert result.returncode == 0, result.stderr
    assert result.stdout == text
    result = tool("inspect", str(path), "--json")
    assert result.returncode == 0 and json.loads(result.stdout) == report
    two = tool("inspect", str(path), str(path), "--json")
    assert json.loads(two.stdout) == {str(path): report}
    both = tool("inspect", str(path), str(path))
    assert both.stdout == f"== {path} ==\n{format_checkpoint(report)}\n== {path} ==\n{format_checkpoint(report)}"
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"nothing")
    result = tool("inspect", str(bad))
    assert result.returncode == 1 and "bad.bin: not a checkpoint TorchScan reads" in result.stderr
    assert tool("inspect").returncode == 2
    assert tool("inspect", str(path), "--max-depth", "x").returncode == 2
    assert tool("inspect", "-").returncode == 2
    assert "--against" in tool("inspect", "--help").stdout


# ---- matching ---------------------------------------------------------------------------------------------------


def test_match_against_a_state_dict_description(tmp_path):
    sd = llama_like()
    path = tmp_path / "model.safetensors"
    save_file(sd, str(path))
    expected = {"report_type": "state_dict",
                "tensors": [{"name": n, "shape": list(t.shape), "dtype": str(t.dtype)} for n, t in sd.items()]}
    result = match_checkpoint(path, expected)
    assert result == {"schema_version": 1, "report_type": "checkpoint_match", "level": "tensor", "matches": True,
                      "matched": len(sd), "missing": [], "unexpected": [], "mismatched": []}
    expected["tensors"][0]["shape"] = [1, 2]
    expected["tensors"][1]["name"] = "extra.weight"
    result = match_checkpoint(inspect_checkpoint(path), expected)
    assert not result["matches"] and result["matched"] == len(sd) - 2
    first, second = list(sd)[:2]
    assert result["mismatched"] == [{"name": first, "shape": list(sd[first].shape), "dtype": str(sd[first].dtype),
                                     "expected_shape": [1, 2], "expected_dtype": str(sd[first].dtype)}]
    assert [e["name"] for e in result["missing"]] == ["extra.weight"]
    assert [e["name"] for e in result["unexpected"]] == [second]
    # the CLI: exit status 3 when it does not match
    against = tmp_path / "expected.json"
    against.write_text(json.dumps(expected))
    cli = tool("inspect", str(path), "--against", str(against))
    assert cli.returncode == 3
    assert cli.stdout.startswith("does not match (tensor level): %d matched, 1 missing" % (len(sd) - 2))
    cli = tool("inspect", str(path), "--against", str(against), "--json")
    assert cli.returncode == 3 and json.loads(cli.stdout) == result
    own = tmp_path / "own.json"
    own.write_text(json.dumps(inspect_checkpoint(path)))
    assert tool("inspect", str(path), "--against", str(own)).returncode == 0


def test_match_against_an_analysis_report(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 2))
    report = crawl_module(model, (4,), mode="structure")
    sd = {k: v for k, v in model.state_dict().items() if k != "1.num_batches_tracked"}
    sd["1.num_batches_tracked"] = torch.zeros((), dtype=torch.int64)
    path = tmp_path / "m.safetensors"
    save_file(sd, str(path))
    result = match_checkpoint(path, report)
    assert result["level"] == "module" and result["matches"], result
    sd["2.weight"] = torch.zeros(3, 8)
    sd["3.weight"] = torch.zeros(1)
    del sd["0.bias"]
    save_file(sd, str(path))
    result = match_checkpoint(path, report)
    assert not result["matches"]
    mismatched = {e["path"]: (e["elements"], e["expected_elements"]) for e in result["mismatched"]}
    assert mismatched["0"] == (32, 40) and mismatched["2"] == (26, 18)
    assert [e["path"] for e in result["unexpected"]] == ["3"]
    with pytest.raises(ValueError, match="against: expected an AnalysisReport"):
        match_checkpoint(path, {"x": 1})
