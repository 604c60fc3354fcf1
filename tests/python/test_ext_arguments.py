"""The extension's entry points called directly (torchscan._engine) with arguments of the wrong type or value: each
raises TypeError/ValueError (or the documented OSError) naming the argument, before any work, and a correct call
right after gives the expected answer. The public API checks most arguments in Python first; these are the C
checks behind it (the CLI and other callers reach them without the Python layer)."""

from __future__ import annotations

import os
import pty

import pytest
import torch
from torch import nn

import torchscan
from torchscan import _engine


@pytest.fixture(scope="module")
def report():
    torch.manual_seed(0)
    return torchscan.crawl_module(nn.Sequential(nn.Conv2d(3, 2, 3), nn.ReLU()), (3, 6, 6))


@pytest.fixture(scope="module")
def bench():
    return torchscan.measure_latency(lambda: None, device="cpu", inputs=(), warmup=0, min_run_time=0.001, min_repeats=2)


class Unjsonable:
    pass


# ---------------------------------------------------------------------------------------------------------------
# reports.c, tables.c, checkpoints.c: arguments that are not reports


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda r: _engine.compare_reports(r), TypeError, "compare_reports"),
        (lambda r: _engine.compare_reports(Unjsonable(), r), ValueError, "before"),
        (lambda r: _engine.compare_reports(r, Unjsonable()), ValueError, "after"),
        (lambda r: _engine.diff_metrics(r["totals"], {"x": Unjsonable()}), ValueError, "after"),
        (lambda r: _engine.incomplete(Unjsonable()), ValueError, "report"),
        (lambda r: _engine.describe_call([], {}), TypeError, "tuple"),
        (lambda r: _engine.describe_call((), []), TypeError, "dict"),
        (lambda r: _engine.render_analysis(r, None, "t\0x", "module_flops", "html"), ValueError, "title"),
        (lambda r: _engine.render_analysis(r, None, "t\ud800", "module_flops", "html"), ValueError, "title"),
        (lambda r: _engine.render_analysis({"a": "\ud800"}, None, "t", "module_flops", "html"), ValueError, "report"),
        (lambda r: _engine.render_analysis(r, Unjsonable(), "t", "module_flops", "html"), ValueError, "before"),
        (lambda r: _engine.render_analysis(r, None, 1, "module_flops", "html"), TypeError, "render_analysis"),
        (lambda r: _engine.render_benchmark_html(r, "t\0"), ValueError, "title"),
        (lambda r: _engine.render_benchmark_html(Unjsonable(), "t"), ValueError, "report"),
        (lambda r: _engine.gather_shape(Unjsonable()), ValueError, "report"),
        (lambda r: _engine.gather_check((), []), TypeError, "list"),
        (lambda r: _engine.gather_check(["not bytes"], [0]), TypeError, "bytes"),
        (lambda r: _engine.gather_check([], [Unjsonable()]), ValueError, "ranks"),
        (lambda r: _engine.gather_reports([r], ()), TypeError, "list"),
        (lambda r: _engine.gather_reports([Unjsonable()], [0]), ValueError, r"reports\[\]"),
        (lambda r: _engine.gather_reports([{"totals": Unjsonable()}], [0]), ValueError, "totals"),
        (lambda r: _engine.gather_reports([{"layers": [{"path": Unjsonable()}]}], [0]), ValueError, "path"),
        (lambda r: _engine.gather_reports([r], [Unjsonable()]), ValueError, "ranks"),
        (lambda r: _engine.format_checkpoint(Unjsonable(), -1), ValueError, "report"),
        (lambda r: _engine.format_checkpoint({}, "deep"), TypeError, "integer"),
        (lambda r: _engine.match_checkpoint(Unjsonable(), r), ValueError, "report"),
        (lambda r: _engine.match_checkpoint(r, Unjsonable()), ValueError, "against"),
        (lambda r: _engine.match_checkpoint(r), TypeError, "match_checkpoint"),
        (lambda r: _engine.inspect_checkpoint(3.5), TypeError, "float"),
        (lambda r: _engine.format_summary(Unjsonable()), ValueError, "report"),
        (lambda r: _engine.format_summary(r, "middle"), ValueError, "wrap_mode"),
        (lambda r: _engine.format_summary(r, 3), ValueError, "wrap_mode"),
        (lambda r: _engine.format_summary(r, "mid", False, False, "1"), TypeError, "argument 5 must be int"),
        (lambda r: _engine.format_report({"schema_version": 1}), ValueError, "report"),
        (lambda r: _engine.format_name(1, 0), TypeError, "name must be a str"),
        (lambda r: _engine.wrap_string(1, 3, ".", "[...]", "end"), TypeError, "s must be a str"),
        (lambda r: _engine.wrap_string("a", 3, 1, "[...]", "end"), TypeError, "delimiter must be a str"),
        (lambda r: _engine.wrap_string("a", 3, ".", 1, "end"), TypeError, "wrap must be a str"),
        (lambda r: _engine.wrap_string("a", 3, ".", "[...]", 1), TypeError, "mode must be a str or None"),
        (lambda r: _engine.format_s(1, -1, -1), TypeError, "f_string must be a str"),
        (lambda r: _engine.unit_scale("1"), TypeError, "real number"),
        (lambda r: _engine.format_line(r["layers"][0], (1, 2), None, False, False), TypeError, "format_line"),
        (lambda r: _engine.format_line(r["layers"][0], (8,) * 8, 1, False, False), TypeError, "mode"),
        (lambda r: _engine.format_line(Unjsonable(), (8,) * 8, None, False, False), ValueError, "layer"),
        (lambda r: _engine.limit_depth(Unjsonable(), 1), ValueError, "info"),
        (lambda r: _engine.limit_depth(r, "1"), TypeError, "integer"),
    ],
)
def test_report_functions_refuse_bad_arguments(report, call, error, match):
    with pytest.raises(error, match=match):
        call(report)
    # nothing half-done: the same functions still answer
    assert _engine.incomplete(report)[0] is False
    assert _engine.format_s("ab", 4, -1) == "ab  "


def test_table_depths_beyond_a_c_int_and_negative(report):
    whole = _engine.format_summary(report)
    assert _engine.format_summary(report, "mid", False, False, -5) == whole  # negative: every row
    with pytest.raises(ValueError, match="depth"):
        _engine.format_summary(report, "mid", False, False, 2**31)
    with pytest.raises(ValueError, match="depth"):
        _engine.format_summary(report, "mid", False, False, 2**70)  # past a long long: the deepest int
    assert _engine.format_summary(report, None, False, False, -(2**70)) == _engine.format_summary(report, None)


def test_wrap_modes_and_text_helpers():
    assert _engine.wrap_string("a.b.c.d", 5, ".", "[...]", None) == "a.b.c.d"  # None: no wrap
    with pytest.raises(ValueError, match="mode"):
        _engine.wrap_string("abcdefgh", 3, ".", "~", "sideways")  # an unknown mode only fails when it must wrap
    assert _engine.wrap_string("ab", 3, ".", "~", "sideways") == "ab"
    assert _engine.unit_scale(1.5e9) == (1.5, "G")
    assert _engine.unit_scale(12) == (12, "")
    with pytest.raises(OverflowError):
        _engine.unit_scale(10**400)
    assert _engine.format_name("\ud800x", 0) == "\ud800x"  # surrogatepass both ways


def test_inspect_checkpoint_bad_paths(tmp_path):
    with pytest.raises(ValueError, match="null|embedded"):
        _engine.inspect_checkpoint("a\0b")
    with pytest.raises(OSError):
        _engine.inspect_checkpoint(str(tmp_path / "missing.safetensors"))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00" * 64)
    with pytest.raises(ValueError):
        _engine.inspect_checkpoint(os.fsencode(junk))  # bytes paths are accepted, the content is not
    with pytest.raises(OSError):
        _engine.inspect_checkpoint(str(tmp_path))  # a directory


def test_gather_check_with_a_rank_that_posted_garbage(report):
    status = ('{"dst": 0, "ok": %s}' % __import__("json").dumps(_engine.gather_shape(report))).encode()
    kind, message = _engine.gather_check([status, b"\xff not json"], [0, 1])
    assert kind == "RuntimeError" and "not JSON" in message
    assert _engine.gather_check([status, status], [0, 1]) is None


# ---------------------------------------------------------------------------------------------------------------
# measure.c


class Event:
    def __init__(self, key="aten::mm", shapes=None, count=1, mem=0, cpu=1.0, **device):
        self.key, self.input_shapes, self.count, self.self_cpu_memory_usage = key, shapes, count, mem
        self.self_cpu_time_total = cpu
        for name, value in device.items():
            setattr(self, name, value)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: _engine.profile_rows([], False, 0), ValueError, "limit"),
        (lambda: _engine.profile_rows(3, False, 1), TypeError, "events must be a sequence"),
        (lambda: _engine.profile_rows([Event(key=3)], False, 1), TypeError, "profiler keys must be str"),
        (lambda: _engine.profile_rows([object()], False, 1), AttributeError, "key"),
        (lambda: _engine.profile_rows([Event(shapes=[Unjsonable()])], False, 1), ValueError, "input_shapes"),
        (lambda: _engine.profile_rows([Event(shapes=["\ud800"])], False, 1), ValueError, "input_shapes"),
        (lambda: _engine.profile_rows([Event(count="1")], False, 1), TypeError, "integer"),
        (lambda: _engine.profile_rows([Event(cpu="1")], False, 1), TypeError, "real number"),
        (lambda: _engine.profile_rows([Event(self_device_time_total="x")], True, 1), TypeError, "real number"),
        (lambda: _engine.workload_totals([], 0, "calls"), TypeError, "dict"),
        (lambda: _engine.workload_totals({"latency": Unjsonable()}, 1, "calls"), ValueError, "measured totals"),
        (lambda: _engine.workload_totals({"latency": "\ud800"}, 1, "calls"), ValueError, "measured totals"),
        (lambda: _engine.workload_achieved({"x": Unjsonable()}, 1.0), ValueError, "totals"),
        (lambda: _engine.workload_achieved([], 1.0), TypeError, "dict"),
        (lambda: _engine.workload_summary(Unjsonable()), ValueError, "report"),
        (lambda: _engine.workload_summary({}), ValueError, "totals"),
        (lambda: _engine.compare_benchmarks({}, {}, 3), TypeError, "check must be callable"),
        (lambda: _engine.compare_benchmarks(Unjsonable(), {}, print), ValueError, "before"),
        (lambda: _engine.compare_benchmarks({}, Unjsonable(), print), ValueError, "after"),
        (lambda: _engine.compare_benchmarks({}, {}, print), ValueError, "before"),
        (lambda: _engine.rss_parse("what 1 2"), ValueError, "malformed supervisor result"),
        (lambda: _engine.rss_parse(b"exited 0 1"), TypeError, "rss_parse"),
        (lambda: _engine.memory_peak(3, None), TypeError, "not iterable"),
        (lambda: _engine.memory_peak([object()], None), AttributeError, "tag"),
    ],
)
def test_measure_functions_refuse_bad_arguments(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_profile_rows_read_device_times_and_shapes():
    events = [
        Event("aten::mm", [[2, 3], [3, 4]], 3, 96, 12.0, self_device_time_total=None, self_cuda_time_total=5.0),
        Event("aten::add", None, 1, -8, 30.0, self_device_time_total=2.0),
        Event("aten::relu", [], 2, 0, None),
    ]
    rows = _engine.profile_rows(events, True, 2)
    # by self device time (5 us, 2 us, none), limited to 2
    assert [row["operator"] for row in rows] == ["aten::mm", "aten::add"]
    mm, add = rows
    assert mm["calls"] == 3 and mm["cpu_self_seconds"] == pytest.approx(12e-6) and mm["cpu_net_bytes"] == 96
    assert mm["device_self_seconds"] == pytest.approx(5e-6)  # self_cuda_time_total when the device total is None
    assert add["device_self_seconds"] == pytest.approx(2e-6) and add["input_shapes"] == []


def test_compare_benchmarks_check_outcomes(bench):
    assert _engine.compare_benchmarks(bench, bench, lambda: True)["output_check"] == "passed"
    assert _engine.compare_benchmarks(bench, bench, lambda: None)["output_check"] == "passed"

    def fails():
        raise AssertionError("slower")

    assert _engine.compare_benchmarks(bench, bench, fails)["output_check"] == "failed"
    assert _engine.compare_benchmarks(bench, bench, lambda: False)["output_check"] == "failed"
    with pytest.raises(ValueError, match="check must return None/True"):
        _engine.compare_benchmarks(bench, bench, lambda: 1)
    with pytest.raises(KeyError):
        _engine.compare_benchmarks(bench, bench, lambda: {}["missing"])  # any other exception propagates


class Node:
    def __init__(self, tag, children=(), **fields):
        self.tag, self.children = tag, list(children)
        if fields:
            self.extra_fields = type("Fields", (), {})()
            device = fields.pop("device")
            self.extra_fields.device = type("Device", (), {"type": device})()
            for k, v in fields.items():
                setattr(self.extra_fields, k, v)
            self.start_time_ns = fields.get("t", 0)


def test_memory_peak_of_event_trees():
    alloc = "Allocation"
    tree = [
        Node("Op", [Node(alloc, ptr=1, alloc_size=100, device="cpu", t=1), Node(alloc, ptr=2, alloc_size=50, device="cpu", t=2)]),
        Node(alloc, ptr=1, alloc_size=-100, device="cpu", t=3),
        Node(alloc, ptr=9, alloc_size=1000, device="cuda", t=4),  # not a CPU allocation: not counted
    ]
    assert _engine.memory_peak(tree, alloc) == 150
    assert _engine.memory_peak([Node("Op")], alloc) is None
    with pytest.raises(TypeError):
        _engine.memory_peak([Node(alloc, ptr=1, alloc_size="big", device="cpu", t=1)], alloc)
    with pytest.raises(TypeError, match="children"):
        _engine.memory_peak([type("Bad", (), {"tag": "Op", "children": 3})()], alloc)


# ---------------------------------------------------------------------------------------------------------------
# timing.c, progress.c


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"workload": 3}, TypeError, "callable"),
        ({"synchronize": 3}, TypeError, "callable"),
        ({"warmup": -1}, ValueError, "invalid timing settings"),
        ({"min_repeats": 0}, ValueError, "invalid timing settings"),
        ({"min_run_time": float("nan")}, ValueError, "invalid timing settings"),
        ({"min_run_time": 0.0}, ValueError, "invalid timing settings"),
        ({"work_units": float("inf")}, ValueError, "invalid timing settings"),
        ({"work_units": 0.0}, ValueError, "invalid timing settings"),
        ({"work_unit": 3}, TypeError, "argument 7 must be str"),
    ],
)
def test_time_workload_refuses_settings_before_any_call(kwargs, error, match):
    calls = []
    settings = {"workload": lambda: calls.append(1), "synchronize": None, "warmup": 0, "min_run_time": 1e-4,
                "min_repeats": 1, "work_units": 1.0, "work_unit": "calls", **kwargs}
    with pytest.raises(error, match=match):
        _engine.time_workload(**settings)
    assert calls == []


@pytest.mark.parametrize("where", ["first call", "warmup", "calibration", "synchronize first", "synchronize later"])
def test_time_workload_propagates_the_workload_error(where):
    count = {"workload": 0, "sync": 0}

    class Stop(Exception):
        pass

    def workload():
        count["workload"] += 1
        if (where == "first call" and count["workload"] == 1) or (where == "warmup" and count["workload"] == 3) or (
            where == "calibration" and count["workload"] == 6
        ):
            raise Stop

    def sync():
        count["sync"] += 1
        if (where == "synchronize first" and count["sync"] == 1) or (where == "synchronize later" and count["sync"] == 5):
            raise Stop

    with pytest.raises(Stop):
        _engine.time_workload(workload, sync, 3, 1.0, 1, 1.0, "calls")
    assert __import__("gc").isenabled()  # the collector paused during the blocks is back


def test_time_workload_draws_progress_on_a_terminal():
    """A pty is a terminal: the line is drawn (after the first second) and blanked at the end."""
    main, tty = pty.openpty()
    try:
        result = _engine.time_workload(
            lambda: None, None, 100, 1.3, 2, 1.0, "calls", progress_fd=tty, progress_label="timing"
        )
        os.set_blocking(main, False)
        drawn = os.read(main, 65536).decode(errors="replace")
    finally:
        os.close(main)
        os.close(tty)
    assert result["totals"]["latency"]["status"] == "complete"
    assert "timing" in drawn


def test_progress_thread_on_a_terminal_and_elsewhere():
    assert _engine.progress_start("label", -1) is None  # no descriptor
    read, write = os.pipe()
    try:
        assert _engine.progress_start("label", write) is None  # not a terminal
    finally:
        os.close(read)
        os.close(write)
    main, tty = pty.openpty()
    try:
        handle = _engine.progress_start("crawl", tty)
        assert handle is not None
        assert _engine.progress_start("second", tty) is None  # one line per process
        __import__("time").sleep(1.3)
        _engine.progress_stop(handle)
        _engine.progress_stop(handle)  # stopping twice is harmless
        again = _engine.progress_start("again", tty)  # the line is free again
        del again  # the capsule's destructor stops the thread
        os.set_blocking(main, False)
        drawn = os.read(main, 65536).decode(errors="replace")
    finally:
        os.close(main)
        os.close(tty)
    assert "torchscan: crawl" in drawn
    with pytest.raises(ValueError):
        _engine.progress_stop(__import__("types").CapsuleType if hasattr(__import__("types"), "CapsuleType") else 3)
    with pytest.raises(TypeError):
        _engine.progress_start(3, 1)
