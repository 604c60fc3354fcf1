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
    """
)


@pytest.fixture()
def cli(tmp_path: Path):
    (tmp_path / "cli_models.py").write_text(FACTORIES)
    marker = tmp_path / "marker"
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TS_MARKER": str(marker)}

    def run(*args: str, limit_file_size: int | None = None) -> subprocess.CompletedProcess[str]:
        def preexec() -> None:
            if limit_file_size is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (limit_file_size, limit_file_size))

        return subprocess.run(
            [sys.executable, "-m", "torchscan", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=preexec,
            check=False,
        )

    run.ran_model = lambda: marker.exists()  # type: ignore[attr-defined]
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
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli_models.py", "marker", "r.json"]


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
    assert set(json.loads((tmp_path / "demo.json").read_text())) == {"cnn", "text_model"}
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
