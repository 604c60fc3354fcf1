"""torchscan.utils' table-text helpers, written by the C table code (src/core/table_text.c), and format_report.

test_compat_020.py pins 0.2.0's results on ordinary text; here: text Python holds and C strings do not (NUL, lone
surrogates, characters beyond ASCII), the types 0.2.0's unit_scale returns, mappings that are not dicts, sizes no
memory holds, and format_report against summary's and the ``torchscan table`` command's output. Expected texts are
derived by hand from 0.2.0's Python (written beside each).
"""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
import subprocess
import sys
from fractions import Fraction
from types import MappingProxyType

import numpy as np
import pytest
from torch import nn

from torchscan import crawl_module, summary, utils

from test_compat_020 import REF_TABLE, _model

TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))


@pytest.fixture(scope="module")
def report():
    return crawl_module(_model(), (3, 32, 32))


def test_text_python_holds_is_kept():
    # "|    " * (2 - 1) + "└─" + name, whatever the name holds
    assert utils.format_name("a\x00\ud800", 2) == "|    └─a\x00\ud800"
    # 7 code points into 6, "end": s[:6 - 5] + "[...]"
    assert utils.wrap_string("\ud800abcdef", 6) == "\ud800[...]"
    # "блок.слой" (9) into 8, "mid": tail "[...].слой" is 10, s[:-2] = "блок.сл"
    assert utils.wrap_string("блок.слой", 8, mode="mid") == "блок.сл[...].слой"
    # "a\x00b" padded to 5 code points, cut to 4
    assert utils.format_s("a\x00b", 5, 4) == "a\x00b "
    assert utils.format_s("😀x", None, 1) == "😀"


def test_wrap_string_marks_and_negative_stops():
    # tail "~" + "." + "c" (3): s[:5 - 3] = "a:"; the joining "." is always a dot, as in 0.2.0
    assert utils.wrap_string("a::b::c", 5, delimiter="::", wrap="~", mode="mid") == "a:~.c"
    # no delimiter: the last part is all of s; tail "[...].abcdef" (12), s[:4 - 12] = ""
    assert utils.wrap_string("abcdef", 4, mode="mid") == "[...].abcdef"
    # s[:2 - 5] = s[:-3] = "abc"
    assert utils.wrap_string("abcdef", 2) == "abc[...]"
    # an empty wrap: s[:3]
    assert utils.wrap_string("abcdef", 3, wrap="") == "abc"


def test_unit_scale_keeps_the_types_of_020():
    # below 1000 the value itself comes back (an int stays an int); above, val / factor
    assert utils.unit_scale(999) == (999, "") and type(utils.unit_scale(999)[0]) is int
    assert utils.unit_scale(1500) == (1.5, "k") and type(utils.unit_scale(1500)[0]) is float
    assert utils.unit_scale(Fraction(3, 2) * 10**6) == (1.5, "M")
    scaled, prefix = utils.unit_scale(np.float64(2.5e9))
    assert (scaled, prefix) == (2.5, "G") and type(scaled) is np.float64
    assert utils.unit_scale(-5000) == (-5000, "")
    # inf // 1e12 and nan // 1e12 are nan, never > 0: unscaled
    assert utils.unit_scale(math.inf) == (math.inf, "")
    nan = math.nan
    assert utils.unit_scale(nan)[0] is nan
    with pytest.raises(OverflowError):
        utils.unit_scale(10**400)  # 0.2.0's val // 1e12 converts the int to a float too


def test_sizes_no_memory_holds_raise_memory_error():
    with pytest.raises(MemoryError):
        utils.format_s("x", 2**62)  # one allocation, refused before anything is written
    with pytest.raises(MemoryError):
        utils.format_name("x", 2**62)


def test_mappings_that_are_not_dicts(report):
    layer = MappingProxyType(report["layers"][1])
    assert utils.format_line_str(layer) == ["├─0", "Conv2d", "(1, 8, 30, 30)", "224", "True"]
    view = utils.aggregate_info(MappingProxyType(report), 0)
    assert type(view) is dict and [row["name"] for row in view["layers"]] == ["sequential"]


def test_format_line_str_refuses_a_layer_it_cannot_show(report):
    layer = copy.deepcopy(report["layers"][1])
    layer["depth"] = -1
    with pytest.raises(ValueError, match="depth must be >= 0"):
        utils.format_line_str(layer)
    del layer["type"]
    with pytest.raises(ValueError, match="lacks string 'type'"):
        utils.format_line_str(layer)


def test_aggregate_info_copies_the_json_data(report):
    view = utils.aggregate_info(report, 1)
    assert view == {**report, "layers": [row for row in report["layers"] if row["depth"] <= 1]}
    assert view["totals"] is not report["totals"] and view["layers"][1]["metrics"] is not report["layers"][1]["metrics"]
    broken = {**report, "layers": [*report["layers"][:2], {"path": "x"}]}
    with pytest.raises(ValueError, match="report layer 2 lacks 'depth'"):
        utils.aggregate_info(broken, 0)


# --- format_report -----------------------------------------------------------------------------------------------


def test_format_report_is_the_table_of_a_saved_report(report, tmp_path, capsys):
    saved = json.loads(json.dumps(report))
    assert utils.format_report(saved, receptive_field=True, effective_rf_stats=True) == REF_TABLE  # 0.2.0's text
    summary(_model(), (3, 32, 32), max_depth=1, wrap_mode="end")
    printed = capsys.readouterr().out
    assert utils.format_report(saved, max_depth=1, wrap_mode="end") + "\n" == printed
    # ... and what the C tool prints for the file
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    for options, args in [({}, []), ({"max_depth": 1, "wrap_mode": None}, ["--max-depth", "1", "--wrap", "none"])]:
        result = subprocess.run([TOOL, "table", str(path), *args], capture_output=True, text=True, check=True)
        assert result.stdout == utils.format_report(saved, **options) + "\n"


def test_format_report_checks_the_report_first(report):
    corrupt = copy.deepcopy(report)
    corrupt["layers"][1]["metrics"]["macs"]["status"] = "weird"
    assert "Conv2d" in utils.format_info(corrupt)  # format_info formats what it is given
    with pytest.raises(ValueError, match=r"^report: layers\[1\]\.metrics\.macs\.status: expected"):
        utils.format_report(corrupt)
    with pytest.raises(ValueError, match="cannot be higher than module depth"):
        utils.format_report(report, max_depth=3)
    with pytest.raises(ValueError, match="non-JSON value"):
        utils.format_report({**report, "context": {"x": object()}})


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"max_depth": -1}, ValueError, "max_depth must be non-negative"),
        ({"max_depth": True}, TypeError, "max_depth"),
        ({"max_depth": 1.0}, TypeError, "max_depth"),
        ({"wrap_mode": "start"}, ValueError, "wrap_mode"),
        ({"receptive_field": "yes"}, TypeError, "receptive_field"),
        ({"effective_rf_stats": None}, TypeError, "effective_rf_stats"),
    ],
)
def test_format_report_arguments(report, kwargs, error, match):
    with pytest.raises(error, match=match):
        utils.format_report(report, **kwargs)


def test_format_report_of_a_structure_report():
    report = crawl_module(nn.Sequential(nn.Linear(4, 2)), (4,), mode="structure")
    text = utils.format_report(json.loads(json.dumps(report)))
    assert text == utils.format_info(report)
