"""Bad arguments are refused, naming the argument, before any workload or model call."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import torchscan
from torchscan import metric_result, utils
from torchscan.process import measure_peak_memory


class Counting:
    def __init__(self):
        self.calls = 0

    def __call__(self):
        self.calls += 1


class CountingModule(nn.Linear):
    def __init__(self):
        super().__init__(2, 2)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return super().forward(x)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"receptive_field": "yes"}, TypeError, "receptive_field must be a bool"),
        ({"receptive_field": None}, TypeError, "receptive_field must be a bool"),
        ({"effective_rf_stats": 2}, TypeError, "effective_rf_stats must be a bool"),
        ({"max_depth": True}, TypeError, "max_depth"),
        ({"max_depth": -1}, ValueError, "max_depth"),
        ({"wrap_mode": "start"}, ValueError, "wrap_mode"),
        ({"strict": "yes"}, TypeError, "strict must be a bool"),
    ],
)
def test_summary_refuses_before_the_forward(kwargs, error, match, capsys):
    model = CountingModule()
    with pytest.raises(error, match=match):
        torchscan.summary(model, (2,), **kwargs)
    assert model.calls == 0
    assert capsys.readouterr().out == ""
    assert not model._forward_hooks and not model._forward_pre_hooks


def test_summary_keeps_accepting_0_and_1(capsys):
    torchscan.summary(nn.Linear(2, 2), (2,), receptive_field=1, effective_rf_stats=0)
    assert "Receptive field" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"profile": "yes"}, TypeError, "profile must be a bool"),
        ({"profile": None}, TypeError, "profile must be a bool"),
        ({"print_summary": "no"}, TypeError, "print_summary must be a bool"),
        ({"print_summary": 2}, TypeError, "print_summary must be a bool"),
        ({"device": None}, TypeError, "device"),
        ({"device": "cuda:99"}, RuntimeError, "CUDA"),
        ({"work_units": float("nan")}, ValueError, "work_units"),
        ({"warmup": True}, ValueError, "warmup"),
        ({"metrics": "latency"}, ValueError, "metrics"),
        ({"rss_command": []}, ValueError, "command"),
    ],
)
def test_measure_workload_refuses_before_any_call(kwargs, error, match):
    workload = Counting()
    with pytest.raises(error, match=match):
        torchscan.measure_workload(workload, **{"device": "cpu", **kwargs})
    assert workload.calls == 0


def test_measure_workload_keeps_accepting_0_and_1_flags(capsys):
    workload = Counting()
    torchscan.measure_workload(workload, device="cpu", metrics=(), profile=0, print_summary=1)
    assert workload.calls == 0  # nothing selected: nothing runs
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda w: torchscan.measure_latency(w, device="cpu", min_repeats=1), ValueError, "min_repeats"),
        (lambda w: torchscan.measure_latency(w, device="meta"), NotImplementedError, "meta"),
        (lambda w: torchscan.measure_flops(w, modules=()), TypeError, "modules"),
        (lambda w: torchscan.measure_flops(w, custom_mapping=[]), TypeError, "custom_mapping"),
        (lambda w: torchscan.profile_workload(w, device="cpu", limit=True), ValueError, "limit"),
        (lambda w: torchscan.profile_workload(w, device="cpu", trace_path=b"x"), TypeError, "trace_path"),
        (lambda w: measure_peak_memory(w, device=None), TypeError, "device"),
        (lambda w: measure_peak_memory(w, device="meta"), NotImplementedError, "meta"),
        (lambda w: torchscan.compare_benchmarks({}, {}, check=1), TypeError, "check"),
    ],
)
def test_workload_functions_refuse_before_any_call(call, error, match):
    workload = Counting()
    with pytest.raises(error, match=match):
        call(workload)
    assert workload.calls == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"unit": 3}, TypeError, "unit must be a str"),
        ({"scope": None}, TypeError, "scope must be a str"),
        ({"method": b"m"}, TypeError, "method must be a str"),
        ({"value": float("nan")}, ValueError, "value must be finite"),
        ({"value": float("inf")}, ValueError, "value must be finite"),
        ({"value": "1"}, TypeError, "value must be an int"),
        ({"value": True}, TypeError, "value must be an int"),
        ({"known_value": [1]}, TypeError, "known_value must be an int"),
        ({"status": "done"}, ValueError, "status"),
    ],
)
def test_metric_result_checks(kwargs, error, match):
    base = {"status": "complete", "value": 1, "unit": "u", "scope": "s", "method": "m"}
    with pytest.raises(error, match=match):
        metric_result(**{**base, **kwargs})


def test_metric_result_keeps_big_ints():
    assert metric_result(status="complete", value=10**400, unit="u", scope="s", method="m")["value"] == 10**400


@pytest.fixture(scope="module")
def report():
    return torchscan.crawl_module(nn.Sequential(nn.Linear(2, 2)), (2,))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda r: utils.format_name(5, 1), TypeError, "name must be a str"),
        (lambda r: utils.format_name("a", -1), ValueError, "depth"),
        (lambda r: utils.format_name("a", True), TypeError, "depth"),
        (lambda r: utils.wrap_string(5, 2), TypeError, "s must be a str"),
        (lambda r: utils.wrap_string("abcdef", -1), ValueError, "max_len"),
        (lambda r: utils.wrap_string("abcdef", 2.5), TypeError, "max_len"),
        (lambda r: utils.wrap_string("abcdef", 2, delimiter=""), ValueError, "delimiter"),
        (lambda r: utils.wrap_string("abcdef", 2, wrap=None), TypeError, "wrap must be a str"),
        (lambda r: utils.wrap_string("ab", 10, mode=3), TypeError, "mode"),
        (lambda r: utils.unit_scale("1"), TypeError, "val"),
        (lambda r: utils.unit_scale(True), TypeError, "val"),
        (lambda r: utils.format_s(5), TypeError, "f_string"),
        (lambda r: utils.format_s("a", "10"), TypeError, "min_w"),
        (lambda r: utils.format_s("a", max_w=-1), ValueError, "max_w"),
        (lambda r: utils.format_line_str(1), TypeError, "layer"),
        (lambda r: utils.format_line_str(r["layers"][0], col_w=[1]), ValueError, "col_w"),
        (lambda r: utils.format_line_str(r["layers"][0], col_w="abcdefgh"), TypeError, "col_w"),
        (lambda r: utils.format_line_str(r["layers"][0], receptive_field="yes"), TypeError, "receptive_field"),
        (lambda r: utils.format_info(r, receptive_field=None), TypeError, "receptive_field"),
        (lambda r: utils.format_info(r, effective_rf_stats="no"), TypeError, "effective_rf_stats"),
        (lambda r: utils.format_info(r, "start"), ValueError, "wrap_mode"),
        (lambda r: utils.aggregate_info(r, "1"), TypeError, "max_depth"),
        (lambda r: utils.aggregate_info(r, True), TypeError, "max_depth"),
        (lambda r: utils.aggregate_info(1, 0), TypeError, "info"),
    ],
)
def test_utils_checks(report, call, error, match):
    with pytest.raises(error, match=match):
        call(report)


def test_utils_keep_020_results():
    assert utils.wrap_string("ab", 10, mode="unknown") == "ab"  # 0.2.0 only checks mode when shortening
    assert utils.format_s("ab", 4, None) == "ab  "


def test_module_functions_refuse_a_non_module():
    x = torch.rand(1, 2)
    with pytest.raises(TypeError, match="module"):
        torchscan.modules.module_flops(1, (x,), x)
