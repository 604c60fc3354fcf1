"""The two command lines: ``python -m torchscan`` (demo, summary) and the C ``torchscan`` tool (table, compare)."""

from __future__ import annotations

import json
import os
from collections import OrderedDict
import resource
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from torch import nn

from torchscan import _engine, crawl_module

TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))

FACTORIES = textwrap.dedent(
    """
    import os
    import torch
    from torch import nn

    with open(os.environ["TS_MARKER"] + ".imported", "a") as f:
        f.write("imported\\n")

    def _ran():
        with open(os.environ["TS_MARKER"], "a") as f:
            f.write("factory ran\\n")

    def conv():
        _ran()
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())

    class Sine(nn.Module):
        def forward(self, x):
            return torch.sin(x)

    def unknown_leaf():
        _ran()
        return nn.Sequential(Sine())

    not_a_model = 42

    class Masked(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(50, 8)
            self.lin = nn.Linear(8, 4)

        def forward(self, ids, *, attention_mask, scale=1.0):
            return self.lin(self.emb(ids)) * attention_mask.unsqueeze(-1) * scale

    def masked():
        _ran()
        return Masked()

    class TwoInputs(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 3)
            self.emb = nn.Embedding(10, 3)

        def forward(self, x, ids):
            return self.lin(x).unsqueeze(1) + self.emb(ids)

    def two_inputs():
        _ran()
        return TwoInputs()

    def conv64():
        _ran()
        return nn.Conv2d(3, 8, 3).double()

    def meta_conv():
        _ran()
        with torch.device("meta"):
            return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())

    def _bert():
        from transformers import BertConfig, BertModel

        config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=32)
        torch.manual_seed(0)
        return BertModel(config)

    def tiny_bert():
        _ran()
        return _bert()
    """
)


@pytest.fixture()
def cli(tmp_path: Path):
    (tmp_path / "cli_models.py").write_text(FACTORIES)
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TS_MARKER": str(marker)}

    def run(*args: str, limit_file_size: int | None = None, input: str | None = None) -> subprocess.CompletedProcess[str]:
        def preexec() -> None:
            if limit_file_size is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

        return subprocess.run(
            [sys.executable, "-m", "torchscan", *args],
            cwd=tmp_path,
            env=env,
            input=input,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=preexec,
            check=False,
        )

    run.ran_model = lambda: marker.exists()  # type: ignore[attr-defined]
    run.imported = lambda: Path(f"{marker}.imported").exists()  # type: ignore[attr-defined]
    return run


def test_summary_prints_the_table_and_writes_the_report(cli, tmp_path):
    result = cli("summary", "cli_models:conv", "--input-shape", "3,32,32", "--json", "out.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "out.json").read_text())
    # the contract's pinned Conv2d(3, 8, 3) on (3, 32, 32): 224 parameters, 388,800 FLOPs; ReLU on its
    # 8 x 30 x 30 output: one per element
    assert report["totals"]["parameters"]["value"] == 224
    assert report["totals"]["module_flops"]["value"] == 388_800 + 8 * 30 * 30
    assert result.stdout.strip() == _engine.format_summary(report, "mid", False, False, -1).strip()
    assert "Conv2d" in result.stdout and not result.stderr
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(
    "shape", ["3,x,8", "-3,8,8", "", "3,,8", "0,8,8", "99999999999,99999999999,99999999999", "3,\u00b2,8"]
)
def test_bad_input_shapes_are_refused_before_the_model_is_built(cli, shape):
    result = cli("summary", "cli_models:conv", f"--input-shape={shape}")
    assert result.returncode == 2
    assert "--input-shape" in result.stderr and "Traceback" not in result.stderr
    assert not cli.ran_model()


@pytest.mark.parametrize(
    "spec, message",
    [("no_such_module:conv", "cannot load"), ("cli_models:nope", "cannot load"), ("cli_models:not_a_model", "nn.Module")],
)
def test_factories_that_cannot_be_loaded_are_reported(cli, spec, message):
    result = cli("summary", spec, "--input-shape", "3,8,8")
    assert result.returncode == 1
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("spec", ["cli_models.conv", ".cli_models:conv"])
def test_a_malformed_model_spec_is_bad_usage(cli, spec):
    result = cli("summary", spec, "--input-shape", "3,8,8")
    assert result.returncode == 2 and "package.module:factory" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("target", ["missing_dir/out.json", "."])
def test_an_unwritable_json_path_is_refused_before_the_model_runs(cli, target):
    result = cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--json", target)
    assert result.returncode == 2 and "--json" in result.stderr
    assert not cli.ran_model()


def test_a_too_deep_max_depth_still_saves_the_report(cli, tmp_path):
    for depth in ("2", "99999999999"):
        result = cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--max-depth", depth, "--json", "r.json")
        assert result.returncode == 2
        assert "cannot be higher than module depth" in result.stderr and "Traceback" not in result.stderr
        assert json.loads((tmp_path / "r.json").read_text())["layers"][0]["type"] == "Sequential"
    result = cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--max-depth", "-1")
    assert result.returncode == 2 and "--max-depth" in result.stderr


def test_strict_exits_3_and_saves_the_incomplete_report(cli, tmp_path):
    result = cli("summary", "cli_models:unknown_leaf", "--input-shape", "4", "--strict", "--json", "r.json")
    assert result.returncode == 3
    assert "incomplete" in result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["totals"]["module_flops"]["status"] == "partial"
    # without --strict the same analysis succeeds
    assert cli("summary", "cli_models:unknown_leaf", "--input-shape", "4").returncode == 0


def test_a_failed_write_keeps_the_previous_file_whole(cli, tmp_path):
    previous = tmp_path / "r.json"
    previous.write_text('{"previous": true}')
    result = cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--json", "r.json", limit_file_size=512)
    assert result.returncode == 1 and "cannot write r.json" in result.stderr
    assert json.loads(previous.read_text()) == {"previous": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli_models.py", "marker", "marker.imported", "r.json"]


def test_json_goes_through_links_keeps_permissions_and_feeds_pipes(cli, tmp_path):
    target = tmp_path / "target.json"
    target.write_text("{}")
    target.chmod(0o600)
    (tmp_path / "link.json").symlink_to("target.json")
    assert cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--json", "link.json").returncode == 0
    assert (tmp_path / "link.json").is_symlink()
    assert json.loads(target.read_text())["layers"][0]["type"] == "Sequential"
    assert target.stat().st_mode & 0o777 == 0o600
    long_name = "r" * 240 + ".json"  # a valid name; a temporary name built from it would not be
    assert cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--json", long_name).returncode == 0
    os.mkfifo(tmp_path / "pipe")
    reader = subprocess.Popen(["cat", str(tmp_path / "pipe")], stdout=subprocess.PIPE)
    assert cli("summary", "cli_models:conv", "--input-shape", "3,8,8", "--json", "pipe").returncode == 0
    assert json.loads(reader.communicate(timeout=60)[0])["layers"][0]["type"] == "Sequential"
    assert (tmp_path / "pipe").is_fifo()
    assert not [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("command", [("demo",), ("summary", "cli_models:conv", "--input-shape", "3,8,8")])
def test_an_empty_json_path_is_bad_usage(cli, command):
    result = cli(*command, "--json", "")
    assert result.returncode == 2 and "--json" in result.stderr
    assert not cli.ran_model()


# ---- summary: dtype, device, several inputs, keyword inputs ------------------------------------------------------


def _tensor(shape: list[int], dtype: str, device: str = "cpu") -> dict:
    return {"kind": "tensor", "shape": shape, "dtype": f"torch.{dtype}", "device": device, "requires_grad": False}


def _conv_flops(c_in: int, c_out: int, k: int, h: int, w: int) -> int:
    # contract 2.1: 2 * c_in * k * k FLOPs per output element (bias included), a stride-1 unpadded output
    return c_out * (h - k + 1) * (w - k + 1) * 2 * c_in * k * k


MASKED_INPUTS = {
    "args": [{"shape": [2, 16], "dtype": "int64", "fill": "randint", "high": 50}],
    "kwargs": {"attention_mask": {"shape": [2, 16], "dtype": "int64", "fill": "ones"}, "scale": 2.0},
}


@pytest.mark.parametrize("from_stdin", [False, True])
def test_summary_takes_positional_and_keyword_inputs_from_json(cli, tmp_path, from_stdin):
    (tmp_path / "in.json").write_text(json.dumps(MASKED_INPUTS))
    if from_stdin:
        result = cli("summary", "cli_models:masked", "--inputs-json", "-", "--json", "r.json",
                     input=json.dumps(MASKED_INPUTS))
    else:
        result = cli("summary", "cli_models:masked", "--inputs-json", "in.json", "--json", "r.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["inputs"] == {
        "source": "provided",
        "args": [_tensor([2, 16], "int64")],
        "kwargs": {"attention_mask": _tensor([2, 16], "int64"), "scale": {"kind": "scalar", "type": "float"}},
    }
    lin = next(row for row in report["layers"] if row["path"] == "lin")
    # Linear(8, 4) on (2, 16, 8): 2 * 16 * 4 outputs, 2 * 8 FLOPs each
    assert lin["metrics"]["module_flops"]["value"] == 2 * 16 * 4 * 2 * 8
    assert "Masked" in result.stdout


def test_summary_dtype_for_generated_inputs(cli, tmp_path):
    result = cli("summary", "cli_models:conv64", "--input-shape", "3,8,8", "--dtype", "float64", "--json", "r.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["inputs"]["args"] == [_tensor([1, 3, 8, 8], "float64")]
    assert report["totals"]["module_flops"]["value"] == _conv_flops(3, 8, 3, 8, 8)
    # one dtype per input
    result = cli("summary", "cli_models:two_inputs", "--input-shape", "4", "--input-shape", "5",
                 "--dtype", "torch.float32", "--dtype", "int64", "--json", "r2.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r2.json").read_text())
    assert report["inputs"]["args"] == [_tensor([1, 4], "float32"), _tensor([1, 5], "int64")]
    # a spec without a dtype takes the model's (float64 here), or --dtype's
    (tmp_path / "in.json").write_text('{"args": [{"shape": [1, 3, 8, 8]}]}')
    assert cli("summary", "cli_models:conv64", "--inputs-json", "in.json", "--json", "r3.json").returncode == 0
    assert json.loads((tmp_path / "r3.json").read_text())["inputs"]["args"] == [_tensor([1, 3, 8, 8], "float64")]
    (tmp_path / "in.json").write_text('{"args": [{"shape": [1, 4], "dtype": "float32"}], "kwargs": {"ids": {"shape": [1, 5]}}}')
    result = cli("summary", "cli_models:two_inputs", "--inputs-json", "in.json", "--dtype", "int64", "--json", "r4.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r4.json").read_text())
    assert report["inputs"]["args"] == [_tensor([1, 4], "float32")]
    assert report["inputs"]["kwargs"] == {"ids": _tensor([1, 5], "int64")}


def test_summary_device_meta_counts_without_allocating(cli, tmp_path):
    result = cli("summary", "cli_models:meta_conv", "--input-shape", "3,8,8", "--device", "meta", "--json", "r.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["inputs"]["args"] == [_tensor([1, 3, 8, 8], "float32", "meta")]
    flops = _conv_flops(3, 8, 3, 8, 8) + 8 * 6 * 6  # the ReLU: one per element
    assert report["totals"]["module_flops"] == {
        "status": "complete", "value": flops, "known_value": flops,
        "unit": "FLOPs", "scope": "forward", "method": "torchscan_module_formula",
    }
    (tmp_path / "in.json").write_text('{"args": [{"shape": [1, 3, 8, 8], "fill": "randn"}]}')
    result = cli("summary", "cli_models:meta_conv", "--inputs-json", "in.json", "--device", "meta", "--json", "r2.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r2.json").read_text())
    assert report["inputs"]["args"] == [_tensor([1, 3, 8, 8], "float32", "meta")]
    assert report["totals"]["module_flops"]["value"] == flops


def test_summary_of_a_hugging_face_model_with_keyword_inputs(cli, tmp_path):
    inputs = {"kwargs": {
        "input_ids": {"shape": [2, 8], "dtype": "int64", "fill": "randint", "high": 64},
        "attention_mask": {"shape": [2, 8], "dtype": "int64", "fill": "ones"},
        "token_type_ids": {"shape": [2, 8], "dtype": "int64"},
    }}
    (tmp_path / "in.json").write_text(json.dumps(inputs))
    result = cli("summary", "cli_models:tiny_bert", "--inputs-json", "in.json", "--json", "r.json")
    assert result.returncode == 0, result.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["inputs"]["kwargs"] == {name: _tensor([2, 8], "int64") for name in inputs["kwargs"]}
    assert report["context"]["model_type"] == "transformers.models.bert.modeling_bert.BertModel"
    # the same call made through the API in this process gives the same counts
    import torch

    namespace: dict = {}
    exec(FACTORIES[FACTORIES.index("def _bert"):FACTORIES.index("def tiny_bert")], {"torch": torch}, namespace)
    direct = crawl_module(namespace["_bert"](), kwargs={
        "input_ids": torch.randint(0, 64, (2, 8)),
        "attention_mask": torch.ones(2, 8, dtype=torch.int64),
        "token_type_ids": torch.zeros(2, 8, dtype=torch.int64),
    })
    for metric in ("parameters", "module_flops", "operator_flops", "macs"):
        assert report["totals"][metric] == direct["totals"][metric], metric
    assert [row["path"] for row in report["layers"]] == [row["path"] for row in direct["layers"]]


INPUTS_ERRORS = [
    ('{"args": [{"shape": [1, -3]}]}', "args[0].shape: expected a list of non-negative integers"),
    ('{"args": [{"shape": [2], "colour": 1}]}', "args[0]: unknown key 'colour'"),
    ('{"args": [{"shape": [2], "dtype": "int64", "fill": "randint"}]}', "args[0].high: randint needs"),
    ('{"args": [{"shape": [2], "dtype": "float32", "fill": "randint", "high": 3}]}', "args[0].dtype: randint needs"),
    ('{"args": [{"shape": [2], "dtype": "int64", "fill": "randn"}]}', "args[0].fill: randn needs a floating"),
    ('{"args": [{"shape": [2], "fill": "random"}]}', "args[0].fill: expected one of"),
    ('{"args": [{"shape": [2], "high": 3}]}', "args[0].high: high applies only"),
    ('{"args": [{"shape": [2], "dtype": "float99"}]}', "args[0].dtype: 'float99' is not a torch dtype"),
    ('{"args": [[1, 2]]}', "args[0]: expected a tensor"),
    ('{"kwargs": {"not a name": 1}}', "kwargs: expected an object keyed by argument names"),
    ('{"kwargs": {"mask": {"shape": [99999999999, 99999999999]}}}', "kwargs.mask.shape: the number of elements"),
    ('{"inputs": []}', 'expected an object {"args"'),
    ('{"args": [', "not JSON"),
]


@pytest.mark.parametrize("content, message", INPUTS_ERRORS)
def test_bad_inputs_json_is_refused_before_the_model_is_imported(cli, tmp_path, content, message):
    (tmp_path / "in.json").write_text(content)
    result = cli("summary", "cli_models:masked", "--inputs-json", "in.json")
    assert result.returncode == 2, result.stderr
    assert "torchscan: --inputs-json in.json" in result.stderr and message in result.stderr
    assert "Traceback" not in result.stderr
    assert not cli.imported() and not cli.ran_model()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--input-shape", "3,8,8", "--dtype", "float33"], "argument --dtype: 'float33' is not a torch dtype"),
        (["--input-shape", "3,8,8", "--dtype", "Size"], "argument --dtype: 'Size' is not a torch dtype"),
        (["--input-shape", "3,8,8", "--device", "nonsense"], "argument --device: 'nonsense' is not a device name"),
        (["--input-shape", "3,8,8", "--device", "cuda:99"], "--device 'cuda:99'"),
        (["--input-shape", "4", "--input-shape", "5", "--dtype", "float32", "--dtype", "int64", "--dtype", "bool"],
         "--dtype: give it once, or once per --input-shape (2), not 3 times"),
        (["--inputs-json", "in.json", "--dtype", "float32", "--dtype", "int64"],
         "--dtype: give it once with --inputs-json"),
        (["--inputs-json", "missing.json"], "--inputs-json missing.json: No such file"),
        (["--inputs-json", "in.json", "--input-shape", "3,8,8"], "not allowed with argument"),
        ([], "one of the arguments --input-shape --inputs-json is required"),
    ],
)
def test_bad_input_options_are_refused_before_the_model_is_imported(cli, tmp_path, args, message):
    (tmp_path / "in.json").write_text(json.dumps(MASKED_INPUTS))
    result = cli("summary", "cli_models:masked", *args)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not cli.imported() and not cli.ran_model()


# ---- the C tool -------------------------------------------------------------------------------------------------


def _tool(*args: str, stdout=subprocess.PIPE, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert TOOL is not None, "the torchscan tool is installed next to the interpreter"
    return subprocess.run([TOOL, *args], stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=60, cwd=cwd, check=False)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("reports")
    small = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU()), (3, 16, 16))
    bigger = crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 8, 3)), (3, 16, 16))
    (directory / "small.json").write_text(json.dumps(small))
    (directory / "bigger.json").write_text(json.dumps(bigger))
    (directory / "pair.json").write_text(json.dumps({"a": small, "b": bigger}))
    (directory / "pair2.json").write_text(json.dumps({"a": bigger, "b": bigger}))
    deep = json.loads(json.dumps(small))
    deep["layers"][1]["depth"] = 2_000_000_000
    (directory / "deep.json").write_text(json.dumps(deep))
    return directory


def test_tool_table_matches_the_python_table(saved):
    result = _tool("table", str(saved / "small.json"))
    assert result.returncode == 0
    report = json.loads((saved / "small.json").read_text())
    assert result.stdout.strip() == _engine.format_summary(report, "mid", False, False, -1).strip()


@pytest.mark.parametrize(
    ("flags", "rf", "stats", "header"),
    [
        (("--receptive-field",), True, False, "Receptive field"),
        (("--receptive-field", "--effective-rf-stats"), True, True, "Effective padding"),
    ],
)
def test_tool_table_receptive_field_columns_as_summary_prints_them(saved, flags, rf, stats, header):
    result = _tool("table", str(saved / "small.json"), *flags)
    assert result.returncode == 0, result.stderr
    report = json.loads((saved / "small.json").read_text())
    assert result.stdout.strip() == _engine.format_summary(report, "mid", rf, stats, -1).strip()
    assert header in result.stdout.splitlines()[1]
    assert ("Effective stride" in result.stdout) == stats


def test_tool_effective_rf_stats_needs_the_receptive_field(saved):
    result = _tool("table", str(saved / "small.json"), "--effective-rf-stats")
    assert result.returncode == 2 and "--effective-rf-stats needs --receptive-field" in result.stderr


def test_tool_table_of_a_collection_prints_each_report_under_its_name(saved):
    result = _tool("table", str(saved / "pair.json"))
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.split("\n== b ==\n")
    assert first.startswith("== a ==\n")
    assert first.count("Conv2d") == 1 and second.count("Conv2d") == 2


def test_tool_compare_pairs_collections_by_name(saved):
    result = _tool("compare", str(saved / "pair.json"), str(saved / "pair2.json"))
    assert result.returncode == 0, result.stderr
    diff = json.loads(result.stdout)
    assert set(diff) == {"a", "b"}
    # b is the same model on both sides; a gains Conv2d(8, 8, 3): 8*8*9 + 8 = 584 parameters
    assert diff["b"]["totals"]["parameters"]["delta"] == 0
    assert diff["a"]["totals"]["parameters"]["delta"] == 584
    mixed = _tool("compare", str(saved / "pair.json"), str(saved / "small.json"))
    assert mixed.returncode == 1 and "collection" in mixed.stderr


def test_tool_refuses_an_absurd_layer_depth_quickly(saved):
    result = _tool("table", str(saved / "deep.json"))
    assert result.returncode == 1 and "depth 2000000000" in result.stderr


@pytest.mark.parametrize("value", ["", "-1", "+1", "x", "99999999999"])
def test_tool_max_depth_must_be_a_non_negative_integer(saved, value):
    result = _tool("table", str(saved / "small.json"), "--max-depth", value)
    assert result.returncode == 2 and "--max-depth" in result.stderr


def test_tool_max_depth_deeper_than_the_model_is_bad_usage(saved):
    assert _tool("table", str(saved / "small.json"), "--max-depth", "1").returncode == 0
    result = _tool("table", str(saved / "small.json"), "--max-depth", "7")
    assert result.returncode == 2 and "cannot be higher than module depth" in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("table", "small.json"), ("compare", "small.json", "bigger.json")])
def test_tool_reports_output_it_could_not_write(saved, command):
    with open("/dev/full", "w") as full:
        result = _tool(command[0], *(str(saved / name) for name in command[1:]), stdout=full)
    assert result.returncode == 1 and "cannot write" in result.stderr


def test_demo_report_file_reads_back_with_the_tool(cli, tmp_path):
    result = cli("demo", "--json", "demo.json")
    assert result.returncode == 0, result.stderr
    reports = json.loads((tmp_path / "demo.json").read_text())
    assert set(reports) == {"cnn", "text_model"}
    # make run's pictures: the offline pages of both reports, and where they are
    from torchscan import render_report

    pages = {"cnn": tmp_path / "report.html", "text_model": tmp_path / "report.text_model.html"}
    titles = {"cnn": "DemoCNN", "text_model": "DemoTextModel"}
    for name, page in pages.items():
        assert page.read_text() == render_report(reports[name], title=f"{titles[name]} (python -m torchscan demo)")
        assert str(page) in result.stdout
    table = _tool("table", "demo.json", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith("== cnn ==\n") and "\n== text_model ==\n" in table.stdout
    assert "MultiheadAttention" in table.stdout


def test_tool_compare_writes_what_json_dumps_writes(tmp_path):
    from torchscan import compare_reports

    def model(width):
        # a non-ASCII module path: escaped as json.dumps escapes it
        return nn.Sequential(OrderedDict([("módulo", nn.Linear(4, width)), ("act", nn.ReLU())]))

    before, after = crawl_module(model(4), (4,)), crawl_module(model(8), (4,))
    for report, value in ((before, 0.1), (after, 0.30000000000000004)):
        # reals: the shortest text that reads back, as Python writes them
        report["totals"]["module_flops"].update(value=value, known_value=value)
    (tmp_path / "before.json").write_text(json.dumps(before))
    (tmp_path / "after.json").write_text(json.dumps(after))
    result = _tool("compare", str(tmp_path / "before.json"), str(tmp_path / "after.json"))
    assert result.returncode == 0, result.stderr
    expected = json.dumps(compare_reports(before, after), indent=2)
    assert result.stdout == expected + "\n"
    assert "\\u00f3" in result.stdout and "0.30000000000000004" in result.stdout
