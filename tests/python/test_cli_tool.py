"""The C ``torchscan`` tool beyond table/compare (test_cli.py): export, rss, help/version, '-' for stdin and
stdout, -o, colour, and the manual page against the parser."""

from __future__ import annotations

import csv
import importlib.metadata
import io
import json
import os
import pty
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections import OrderedDict
from pathlib import Path

import pytest
import torch
from torch import nn

from torchscan import ModuleCall, ModuleHandler, crawl_module, inspect_checkpoint
from torchscan.process import measure_peak_rss

ROOT = Path(__file__).resolve().parents[2]
TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))
PY = sys.executable
MiB = 1 << 20
METRICS = ("module_flops", "macs", "dmas", "operator_flops", "parameters", "parameter_bytes")


def tool(*args: str, stdin=None, input: str | None = None, env=None, cwd=None, preexec_fn=None,
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Runs the tool; stdout and stderr decoded as UTF-8 with line ends kept as written (CSV's are CRLF)."""
    assert TOOL is not None, "the torchscan tool is installed next to the interpreter"
    result = subprocess.run(
        [TOOL, *args], stdin=stdin, input=None if input is None else input.encode(), capture_output=True, env=env,
        cwd=cwd, preexec_fn=preexec_fn, timeout=timeout, check=False,
    )
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


# ---- reports ----------------------------------------------------------------------------------------------------


class Sine(nn.Module):
    """No module formula: its module metrics are partial."""

    def forward(self, x):
        return torch.sin(x)


class Probe(nn.Module):
    """Returns no tensor: its module metrics are unavailable (missing_metric_tensor)."""

    def forward(self, x):
        return None


class WithProbe(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.probe = Probe()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        self.probe(x)
        return self.conv(x)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x))


def _conv_flops(c_in: int, c_out: int, k: int, h: int, w: int) -> int:
    # contract 2.1: 2 * c_in * k * k FLOPs per output element (bias included), a stride-1 unpadded output
    return c_out * (h - k + 1) * (w - k + 1) * 2 * c_in * k * k


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("export")
    built = {
        "complete": crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Conv2d(8, 4, 3)), (3, 16, 16)),
        "partial": crawl_module(nn.Sequential(nn.Conv2d(3, 8, 3), Sine()), (3, 8, 8)),
        "unavailable": crawl_module(WithProbe(), (3, 8, 8)),
        # a composite whose handler estimates its subtree: its children hold no module_flops
        "subtree": crawl_module(
            nn.Sequential(Block(), nn.Linear(6, 2)),
            (4,),
            custom_modules={Block: ModuleHandler(_block_estimate, subtree_metrics=frozenset({"module_flops"}))},
        ),
        # text a CSV field must quote and a Markdown cell must escape
        "odd": crawl_module(nn.Sequential(OrderedDict([('a,"b|c', nn.Linear(4, 4)), ("act", nn.ReLU())])), (4,)),
    }
    paths = {}
    for name, report in built.items():
        paths[name] = directory / f"{name}.json"
        paths[name].write_text(json.dumps(report))
    paths["pair"] = directory / "pair.json"
    paths["pair"].write_text(json.dumps({"a": built["complete"], "b": built["partial"]}))
    # a checkpoint and its own report, for inspect (and --against)
    from safetensors.torch import save_file

    paths["checkpoint"] = directory / "model.safetensors"
    save_file({"0.weight": torch.ones(8, 3, 3, 3), "0.bias": torch.zeros(8)}, str(paths["checkpoint"]))
    paths["checkpoint_report"] = directory / "model.json"
    paths["checkpoint_report"].write_text(json.dumps(inspect_checkpoint(paths["checkpoint"])))
    return paths


def _block_estimate(call: ModuleCall) -> dict[str, int]:
    return {"module_flops": 1000}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def _row_metric(row: dict, metric: str) -> dict | None:
    """What a layer row holds for an export metric, read straight from the JSON."""
    if metric in ("parameters", "parameter_bytes"):
        params = row["parameters"]
        value = params["trainable"] + params["frozen"] if metric == "parameters" else params["bytes"]
        return {"status": "complete", "value": value, "known_value": value}
    return row["metrics"].get(metric)


def _text(value) -> str:
    return "" if value is None else json.dumps(value)


# ---- export: csv ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["complete", "partial", "unavailable", "subtree", "odd"])
def test_csv_reads_back_as_the_report_rows(reports, name):
    result = tool("export", str(reports[name]), "--format", "csv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.endswith("\r\n") and "\n" not in result.stdout.replace("\r\n", "")  # RFC 4180 line ends
    rows = list(csv.DictReader(io.StringIO(result.stdout, newline="")))
    layers = _load(reports[name])["layers"]
    assert len(rows) == len(layers)
    header = ["path", "type", "call_index", "depth"] + [f"{m}_{k}" for m in METRICS for k in ("status", "value", "known_value")]
    assert list(rows[0]) == header
    for row, layer in zip(rows, layers, strict=True):
        assert (row["path"], row["type"], row["call_index"], row["depth"]) == (
            layer["path"], layer["type"], str(layer["call_index"]), str(layer["depth"]))
        for metric in METRICS:
            held = _row_metric(layer, metric)
            expected = ("", "", "") if held is None else (
                held["status"], _text(held["value"]), _text(held["known_value"]))
            assert (row[f"{metric}_status"], row[f"{metric}_value"], row[f"{metric}_known_value"]) == expected


def test_csv_quotes_what_needs_quoting(reports):
    result = tool("export", str(reports["odd"]), "--format", "csv", "--metric", "module_flops")
    assert result.returncode == 0, result.stderr
    # Linear(4, 4) on (1, 4): 4 outputs x (2 * 4) FLOPs; the ReLU one per element
    assert '\r\n"a,""b|c",Linear,0,1,complete,32,32\r\n' in result.stdout
    assert "\r\nact,ReLU,0,1,complete,4,4\r\n" in result.stdout
    assert result.stdout.splitlines()[0] == "path,type,call_index,depth,module_flops_status,module_flops_value,module_flops_known_value"


# ---- export: markdown ------------------------------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    """The cells of a Markdown table line: split at unescaped |, backslash escapes undone."""
    assert line.startswith("| ") and line.endswith(" |"), line
    cells, current, i = [], "", 1
    body = line[1:-1]
    while i <= len(body):
        ch = body[i - 1]
        if ch == "\\":
            current += body[i]
            i += 2
            continue
        if ch == "|":
            cells.append(current.strip())
            current = ""
        else:
            current += ch
        i += 1
    cells.append(current.strip())
    return cells


@pytest.mark.parametrize("name", ["partial", "unavailable", "odd"])
def test_markdown_is_a_table_of_the_rows(reports, name):
    result = tool("export", str(reports[name]), "--format", "markdown")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    layers = _load(reports[name])["layers"]
    assert len(lines) == 2 + len(layers)
    assert _cells(lines[0]) == ["path", "type", "call_index", "depth", *METRICS]
    assert _cells(lines[1]) == ["---", "---", "---:", "---:"] + ["---:"] * len(METRICS)
    for line, layer in zip(lines[2:], layers, strict=True):
        cells = _cells(line)
        assert len(cells) == 4 + len(METRICS)
        assert cells[:4] == [layer["path"], layer["type"], str(layer["call_index"]), str(layer["depth"])]
        for cell, metric in zip(cells[4:], METRICS, strict=True):
            held = _row_metric(layer, metric)
            if held is None:
                assert cell == ""
            elif held["status"] == "complete":
                assert cell == json.dumps(held["value"])
            elif held["status"] == "partial":
                assert cell == f">= {json.dumps(held['known_value'])} (partial)"
            else:
                assert cell == "unavailable"
    if name == "odd":
        assert '| a,"b\\|c | Linear |' in result.stdout  # the | of the name is escaped


# ---- export: folded stacks -----------------------------------------------------------------------------------------


def _folded(stdout: str) -> dict[str, int]:
    stacks = {}
    for line in stdout.splitlines():
        stack, _, count = line.rpartition(" ")
        assert stack and count.isdigit(), line  # flamegraph.pl / speedscope: "frames COUNT", an integer
        assert stack not in stacks
        stacks[stack] = int(count)
    return stacks


def test_folded_stacks_sum_to_the_hand_derived_total(reports):
    result = tool("export", str(reports["complete"]), "--format", "folded")
    assert result.returncode == 0 and result.stderr == ""
    conv1, relu, conv2 = _conv_flops(3, 8, 3, 16, 16), 8 * 14 * 14, _conv_flops(8, 4, 3, 14, 14)
    assert _folded(result.stdout) == {"sequential;0": conv1, "sequential;1": relu, "sequential;2": conv2}
    report = _load(reports["complete"])
    assert report["totals"]["module_flops"]["value"] == conv1 + relu + conv2
    # the other additive metrics sum to their totals too
    for metric in ("macs", "dmas", "operator_flops"):
        folded = tool("export", str(reports["complete"]), "--format", "folded", "--metric", metric)
        assert folded.returncode == 0, folded.stderr
        assert report["totals"][metric]["status"] == "complete"
        assert sum(_folded(folded.stdout).values()) == report["totals"][metric]["value"], metric
    params = tool("export", str(reports["complete"]), "--format", "folded", "--metric", "parameters")
    # Conv2d(3, 8, 3): 8*3*9 + 8; Conv2d(8, 4, 3): 4*8*9 + 4
    assert _folded(params.stdout) == {"sequential;0": 224, "sequential;2": 292}
    assert report["totals"]["parameters"]["value"] == 224 + 292


def test_folded_subtree_estimates_are_not_counted_twice(reports):
    report = _load(reports["subtree"])
    covered = [row["path"] for row in report["layers"] if "module_flops" in row.get("metric_owners", {})]
    assert covered == ["0.fc", "0.act"]  # the rows the handler's estimate stands for
    result = tool("export", str(reports["subtree"]), "--format", "folded")
    assert result.returncode == 0, result.stderr
    # the handler's 1000 for the block; Linear(6, 2) on (1, 6): 2 outputs x (2 * 6) FLOPs
    assert _folded(result.stdout) == {"sequential;0": 1000, "sequential;1": 24}
    assert report["totals"]["module_flops"]["value"] == 1000 + 24


def test_folded_marks_partial_rows(reports):
    result = tool("export", str(reports["partial"]), "--format", "folded")
    assert result.returncode == 0, result.stderr
    report = _load(reports["partial"])
    sine = report["layers"][2]
    assert sine["type"] == "Sine" and sine["metrics"]["module_flops"]["status"] == "partial"
    stacks = _folded(result.stdout)
    assert stacks == {"sequential;0": _conv_flops(3, 8, 3, 8, 8),
                      "sequential;1 [partial]": sine["metrics"]["module_flops"]["known_value"]}
    assert "1 row(s) with a partial module_flops" in result.stderr


def test_folded_leaves_out_unavailable_rows_and_says_how_many(reports):
    report = _load(reports["unavailable"])
    assert [row["metrics"]["module_flops"]["status"] for row in report["layers"][1:]] == ["unavailable", "complete"]
    result = tool("export", str(reports["unavailable"]), "--format", "folded")
    assert result.returncode == 0
    assert _folded(result.stdout) == {"withprobe;conv": _conv_flops(3, 4, 3, 8, 8)}
    assert "1 layer row(s) left out: their module_flops is unavailable" in result.stderr


def test_export_of_a_collection_needs_a_name(reports):
    result = tool("export", str(reports["pair"]), "--format", "folded")
    assert result.returncode == 2 and "(a, b): choose one with --name" in result.stderr and result.stdout == ""
    named = tool("export", str(reports["pair"]), "--format", "folded", "--name", "a")
    single = tool("export", str(reports["complete"]), "--format", "folded")
    assert named.returncode == 0 and named.stdout == single.stdout
    missing = tool("export", str(reports["pair"]), "--format", "csv", "--name", "c")
    assert missing.returncode == 2 and "holds no such report" in missing.stderr
    refused = tool("export", str(reports["complete"]), "--format", "csv", "--name", "a")
    assert refused.returncode == 2 and "single report" in refused.stderr


@pytest.mark.parametrize(
    "args, message",
    [((), "--format is required"), (("--format", "json"), "--format is csv, markdown or folded"),
     (("--format", "csv", "--metric", "flops"), "--metric is module_flops"), (("--format",), "needs a value")],
)
def test_export_usage_errors(reports, args, message):
    result = tool("export", str(reports["complete"]), *args)
    assert result.returncode == 2 and message in result.stderr and result.stdout == ""


def test_export_checks_the_report_first(tmp_path, reports):
    bad = _load(reports["complete"])
    bad["layers"][1]["depth"] = -3
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    result = tool("export", "bad.json", "--format", "csv", cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert "torchscan: bad.json: layers[1].depth: expected a non-negative int, got -3" in result.stderr


# ---- '-' and -o ----------------------------------------------------------------------------------------------------


def test_dash_reads_stdin_for_every_command(reports):
    small = reports["complete"]
    with small.open() as stdin:
        table = tool("table", "-", stdin=stdin)
    assert table.returncode == 0 and table.stdout == tool("table", str(small)).stdout
    with small.open() as stdin:
        compare = tool("compare", "-", str(reports["partial"]), stdin=stdin)
    assert compare.returncode == 0 and compare.stdout == tool("compare", str(small), str(reports["partial"])).stdout
    with small.open() as stdin:
        export = tool("export", "-", "--format", "csv", stdin=stdin)
    assert export.returncode == 0 and export.stdout == tool("export", str(small), "--format", "csv").stdout
    both = tool("compare", "-", "-", input="{}")
    assert both.returncode == 2 and "only one" in both.stderr
    broken = tool("table", "-", input='{"layers": [')
    assert broken.returncode == 1 and broken.stderr.startswith("torchscan: <stdin>:1:")


@pytest.mark.parametrize(
    "command",
    [("table", "complete"), ("compare", "complete", "partial"), ("export", "complete", "--format", "markdown")],
)
def test_output_option(tmp_path, reports, command):
    args = [reports[a] if a in reports else a for a in command[1:]]
    args = [str(a) for a in args]
    expected = tool(command[0], *args).stdout
    assert expected
    assert tool(command[0], *args, "-o", "-").stdout == expected
    out = tmp_path / "out.txt"
    out.write_text("previous")
    out.chmod(0o640)
    (tmp_path / "link.txt").symlink_to("out.txt")
    result = tool(command[0], *args, "-o", str(tmp_path / "link.txt"))
    assert result.returncode == 0 and result.stdout == "" and result.stderr == ""
    assert out.read_text() == expected and out.stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "link.txt").is_symlink()
    assert tool(command[0], *args, f"--output={tmp_path / 'new.txt'}").returncode == 0
    assert (tmp_path / "new.txt").read_text() == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.txt", "new.txt", "out.txt"]  # no temporary left


def test_a_failed_write_leaves_the_previous_file_whole(tmp_path, reports):
    previous = tmp_path / "out.csv"
    previous.write_text("previous")

    def small_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    result = tool("export", str(reports["complete"]), "--format", "csv", "-o", str(previous), preexec_fn=small_files)
    assert result.returncode == 1 and "cannot write" in result.stderr
    assert previous.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]
    missing = tool("export", str(reports["complete"]), "--format", "csv", "-o", str(tmp_path / "no" / "x.csv"))
    assert missing.returncode == 1 and "cannot write" in missing.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_export_reports_output_it_could_not_write(reports):
    with open("/dev/full", "w") as full:
        result = subprocess.run([TOOL, "export", str(reports["complete"]), "--format", "csv"], stdout=full,
                                stderr=subprocess.PIPE, text=True, check=False)
    assert result.returncode == 1 and "cannot write" in result.stderr


# ---- help, version, usage ------------------------------------------------------------------------------------------


def _commands() -> list[str]:
    text = tool("--help").stdout
    section = text.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in section.splitlines()]


def _help_options(command: str) -> dict[str, str | None]:
    """--option -> its metavar (None for a flag), read from the command's --help."""
    text = tool(command, "--help").stdout
    section = text.split("\noptions:\n", 1)[1].split("\n\n", 1)[0]
    found = {}
    for match in re.finditer(r"^  (?:(-\w), )?\s*(--[a-z-]+)(?: ([A-Z]+))?", section, re.M):
        found[match.group(2)] = match.group(3)
        if match.group(1):
            found[match.group(1)] = match.group(3)
    return found


def test_help_of_the_tool_and_of_every_command():
    main = tool("--help")
    assert main.returncode == 0 and main.stderr == "" and main.stdout.startswith("usage: torchscan COMMAND")
    assert tool("-h").stdout == main.stdout
    assert _commands() == ["table", "compare", "export", "render", "rss", "inspect"]
    for command in _commands():
        for flag in ("--help", "-h"):
            result = tool(command, flag)
            assert result.returncode == 0 and result.stderr == "", (command, flag)
            assert result.stdout.startswith(f"usage: torchscan {command} ")
            assert "\noptions:\n" in result.stdout and "\nexit status: " in result.stdout
    # help wins wherever it is, and never runs anything
    assert tool("rss", "--help", "--", "false").returncode == 0


# a valid value for each option a --help lists (an option added without one here fails the test below)
VALID = {"--max-depth": "1", "--wrap": "end", "--metric": "macs", "--name": None, "--format": "csv",
         "--output": "-", "-o": "-", "--timeout": "30", "--title": "A <title>", "--before": "complete",
         "--against": "checkpoint_report"}
# where one command's option takes other values than VALID's
VALID_FOR = {("render", "--format"): "svg"}
# options that only go with another one
REQUIRES = {("table", "--effective-rf-stats"): ["--receptive-field"]}
OPERANDS = {"table": ["complete"], "compare": ["complete", "partial"], "export": ["complete", "--format", "csv"],
            "render": ["complete"], "rss": ["true"], "inspect": ["checkpoint"]}


def test_every_option_a_help_lists_is_accepted(reports):
    for command in _commands():
        options = _help_options(command)
        assert "--help" in options and "-h" in options
        for option, metavar in options.items():
            if option in ("--help", "-h"):
                continue
            assert metavar is None or option in VALID, f"{command} {option}: add a valid value to VALID"
            operands = [str(reports[o]) if o in reports else o for o in OPERANDS[command]]
            if option == "--name":  # a collection and one of its names
                operands[0], value = str(reports["pair"]), "a"
            else:
                value = VALID_FOR.get((command, option), VALID.get(option))
                value = str(reports[value]) if value in reports else value
            words = [*REQUIRES.get((command, option), []), *([option] if metavar is None else [option, value])]
            # the options go first: rss's first operand ends them
            result = tool(command, *words, *operands)
            assert result.returncode == 0, (command, option, result.stderr)
            if metavar is not None and option.startswith("--"):
                assert tool(command, f"{option}={value}", *operands).returncode == 0, (command, option)
        unknown = tool(command, "--no-such-option", *OPERANDS[command])  # never read: refused first
        assert unknown.returncode == (125 if command == "rss" else 2)
        assert "unknown option --no-such-option" in unknown.stderr and f"torchscan {command} --help" in unknown.stderr


def _man_sections() -> dict[str, set[str]]:
    """Options named under each command's .SS section of docs/torchscan.1, and the commands."""
    text = (ROOT / "docs" / "torchscan.1").read_text().replace("\\-", "-")
    commands = text.split("\n.SH COMMANDS\n", 1)[1].split("\n.SH ", 1)[0]
    found = {}
    for block in ("\n" + commands).split("\n.SS ")[1:]:
        name, _, body = block.partition("\n")
        tagged = re.findall(r"^\.TP\n\.B[IR]? (-[-\w]+)", body, re.M)
        tagged += re.findall(r'^\.TP\n\.BI -o " FILE\\fR, " (--output)', body, re.M)
        found[name] = set(tagged)
    return found


def test_the_manual_page_names_what_the_parser_takes():
    sections = _man_sections()
    assert list(sections) == _commands()
    for command, documented in sections.items():
        listed = set(_help_options(command)) - {"--help", "-h"}
        assert documented == listed, command
    # installed where man finds it: <prefix>/man or <prefix>/share/man beside the bin/ holding torchscan
    installed = [Path(sys.prefix, d, "man1", "torchscan.1") for d in ("man", "share/man")]
    assert any(p.is_file() and p.read_text() == (ROOT / "docs" / "torchscan.1").read_text() for p in installed)


def test_version_is_the_package_version_from_one_source():
    result = tool("--version")
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout == f"torchscan {importlib.metadata.version('torchscan')}\n"
    project = re.search(r"project\('torchscan', 'c',\s*version : '([^']+)'", (ROOT / "meson.build").read_text())
    assert project is not None and result.stdout == f"torchscan {project.group(1)}\n"
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'dynamic = ["version"]' in pyproject and not re.search(r"^version\s*=", pyproject, re.M)


@pytest.mark.parametrize(
    "args, message",
    [((), "usage: torchscan COMMAND"), (("frobnicate",), "unknown command 'frobnicate'"),
     (("table",), "expected REPORT.json, got 0"), (("compare", "a.json"), "expected BEFORE.json AFTER.json, got 1"),
     (("table", "--receptive-field=yes", "x.json"), "--receptive-field takes no value")],
)
def test_usage_errors_exit_2_with_nothing_on_stdout(args, message):
    result = tool(*args)
    assert result.returncode == 2 and result.stdout == "" and message in result.stderr


# ---- colour ----------------------------------------------------------------------------------------------------------


def _stderr_on_a_terminal(env_changes: dict[str, str | None]) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in env_changes}
    env.update({k: v for k, v in env_changes.items() if v is not None})
    controller, terminal = pty.openpty()
    try:
        subprocess.run([TOOL, "table", "/no/such/report.json"], stdout=subprocess.DEVNULL, stderr=terminal, env=env,
                       timeout=60, check=False)
    finally:
        os.close(terminal)
    data = b""
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # EIO: the terminal's other side is closed and everything was read
            break
        if not chunk:
            break
        data += chunk
    os.close(controller)
    assert b"/no/such/report.json" in data
    return data


def test_colour_only_on_a_terminal_and_never_with_no_color():
    assert b"\x1b[" in _stderr_on_a_terminal({"NO_COLOR": None, "TERM": "xterm"})
    assert b"\x1b[" in _stderr_on_a_terminal({"NO_COLOR": "", "TERM": "xterm"})  # no-color.org: set and not empty
    assert b"\x1b[" not in _stderr_on_a_terminal({"NO_COLOR": "1", "TERM": "xterm"})
    assert b"\x1b[" not in _stderr_on_a_terminal({"NO_COLOR": None, "TERM": "dumb"})
    piped = tool("table", "/no/such/report.json", env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
    assert piped.returncode == 1 and "\x1b" not in piped.stderr


# ---- rss -------------------------------------------------------------------------------------------------------------


@pytest.fixture()
def not_executable(tmp_path) -> str:
    path = tmp_path / "script.sh"
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(0o644)
    return str(path)


@pytest.mark.parametrize(
    "command, code, status",
    [
        (["true"], 0, "complete"),
        (["false"], 1, "complete"),
        (["sh", "-c", "exit 3"], 3, "complete"),
        (["--timeout", "0.5", "sleep", "30"], 124, "partial"),
        (["torchscan-there-is-no-such-command"], 127, "unavailable"),
        (["NOT_EXECUTABLE"], 126, "unavailable"),
        (["sh", "-c", "kill -s TERM $$"], 128 + signal.SIGTERM, "partial"),
        (["--", "sh", "-c", "kill -s KILL $$"], 128 + signal.SIGKILL, "partial"),
    ],
)
def test_rss_exits_as_a_shell_would(command, code, status, not_executable):
    command = [not_executable if word == "NOT_EXECUTABLE" else word for word in command]
    start = time.monotonic()
    result = tool("rss", *command)
    assert time.monotonic() - start < 20  # the timeout case did not wait for its sleep
    assert result.returncode == code, result.stderr
    metric = json.loads(result.stdout)
    assert set(metric) == {"status", "value", "known_value", "unit", "scope", "method"}
    assert (metric["status"], metric["unit"], metric["scope"], metric["method"]) == (
        status, "bytes", "child_process_lifetime", "wait4.ru_maxrss")
    if status == "complete":
        assert metric["value"] == metric["known_value"] > 0
    elif status == "partial":
        assert metric["value"] is None and metric["known_value"] > 0
    else:
        assert metric["value"] is None and metric["known_value"] is None
        assert ("No such file" if code == 127 else "Permission denied") in result.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss units and /usr/bin/time -v: Linux")
def test_rss_agrees_with_measure_peak_rss_and_gnu_time():
    big = [PY, "-c", "b = b'x' * (64 << 20)"]
    ours = json.loads(tool("rss", *big).stdout)
    theirs = measure_peak_rss(big)
    assert {k: ours[k] for k in ("status", "unit", "scope", "method")} == {
        k: theirs[k] for k in ("status", "unit", "scope", "method")}
    assert ours["value"] >= 64 * MiB
    assert abs(ours["value"] - theirs["value"]) <= 0.10 * theirs["value"]
    if not os.path.exists("/usr/bin/time"):
        pytest.skip("/usr/bin/time (GNU time) is not installed")
    err = subprocess.run(["/usr/bin/time", "-v", *big], capture_output=True, text=True, check=True).stderr
    gnu = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", err).group(1)) * 1024
    assert abs(ours["value"] - gnu) <= 0.10 * gnu, (ours["value"], gnu)


def test_rss_output_file_keeps_the_command_output_apart(tmp_path):
    result = tool("rss", "-o", str(tmp_path / "rss.json"), "sh", "-c", "echo from the command; exit 5")
    assert result.returncode == 5
    assert result.stdout == "from the command\n"
    assert json.loads((tmp_path / "rss.json").read_text())["status"] == "complete"


def test_rss_refuses_an_unwritable_output_before_running_anything(tmp_path):
    marker = tmp_path / "ran"
    result = tool("rss", "-o", str(tmp_path / "missing" / "rss.json"), "touch", str(marker))
    assert result.returncode == 125 and "cannot write" in result.stderr
    assert not marker.exists()
    for args in (["--timeout", "0", "true"], ["--timeout", "soon", "true"], []):
        bad = tool("rss", *args)
        assert bad.returncode == 125 and bad.stdout == "", args


def test_rss_options_end_at_the_command():
    # the command's own options are not torchscan's
    result = tool("rss", "sh", "-c", "exit 4", "--timeout", "-o")
    assert result.returncode == 4 and json.loads(result.stdout)["status"] == "complete"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_rss_interrupted_kills_the_command_group(tmp_path):
    pid_file = tmp_path / "pid"
    process = subprocess.Popen(
        [TOOL, "rss", "sh", "-c", f"echo $$ > {pid_file}; sleep 60"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.02)
    child = int(pid_file.read_text())
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 128 + signal.SIGTERM
    assert json.loads(out)["status"] == "partial" and "interrupted by signal" in err
    stat = Path(f"/proc/{child}/stat")
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
