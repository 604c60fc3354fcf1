"""TorchScan 0.2.0's public modules torchscan.modules and torchscan.utils (contract 1.0).

Expected numbers are literals taken once from the reference package torchscan==0.2.0 (torch 2.13.0) for the same
modules and inputs. Those marked "by hand" were also checked by hand arithmetic. Every module function is compared
with crawl_module's number for the same call too: torchscan.modules runs the crawl's formulas, so where a family's
convention differs from 0.2.0's (docs/module-formulas.md, "torchscan.modules and 0.2.0") the test pins this
package's number and keeps 0.2.0's beside it.
"""

from __future__ import annotations

import warnings

import pytest
import torch
from torch import nn

import torchscan
from torchscan import crawl_module, modules, utils

# name, module factory, input shape, (FLOPs, MACs, DMAs, rf trio): identical in 0.2.0 and here
SAME_AS_020 = [
    # by hand: O = 8, FLOPs 8 * (2 * 8 - 1) + 8 = 128, MACs 8 * 8, DMAs N + P + O = 16 + 36 + 8
    ("linear", lambda: nn.Linear(8, 4), (2, 8), (128, 64, 60, (1, 1, 0))),
    ("linear_nobias", lambda: nn.Linear(8, 4, bias=False), (2, 8), (120, 64, 56, (1, 1, 0))),
    # by hand: O = 7200, FLOPs 7200 * (2 * 27 - 1 + 1) = 388800, MACs 7200 * 27 (contract 5.1's pinned values)
    ("conv2d", lambda: nn.Conv2d(3, 8, 3), (1, 3, 32, 32), (388800, 194400, 201824, (3, 1, 0))),
    (
        "conv2d_groups",
        lambda: nn.Conv2d(4, 8, 3, stride=2, padding=1, dilation=2, groups=2, bias=False),
        (1, 4, 16, 16),
        (13720, 7056, 7592, (5, 2, 1)),  # by hand: rf = 2 * (3 - 1) + 1 = 5
    ),
    ("conv1d", lambda: nn.Conv1d(2, 3, 5), (1, 2, 20), (960, 480, 561, (5, 1, 0))),
    ("batchnorm2d", lambda: nn.BatchNorm2d(4).eval(), (1, 4, 6, 6), (584, 288, 306, (1, 1, 0))),
    ("relu", nn.ReLU, (2, 10), (20, 0, 40, (1, 1, 0))),  # by hand: N = 20, DMAs N + O
    ("elu", nn.ELU, (2, 10), (120, 0, 41, (1, 1, 0))),  # by hand: 6N; N + 1 + O
    ("leakyrelu", nn.LeakyReLU, (2, 10), (80, 0, 41, (1, 1, 0))),
    ("relu6", nn.ReLU6, (2, 10), (40, 0, 40, (1, 1, 0))),
    ("tanh", nn.Tanh, (2, 10), (120, 0, 60, (1, 1, 0))),
    ("sigmoid", nn.Sigmoid, (2, 10), (80, 0, 40, (1, 1, 0))),
    ("identity", nn.Identity, (2, 10), (0, 0, 20, (1, 1, 0))),
    ("flatten", nn.Flatten, (2, 3, 4), (0, 0, 48, (1, 1, 0))),  # by hand: 2N
]

# name, factory, input shape, this package's (FLOPs, MACs, DMAs, rf), 0.2.0's (same order; "warn" when 0.2.0
# warned "Module type not supported" and returned 0 or (1.0, 1.0, 0.0))
DIFFER_FROM_020 = [
    # by hand: dense scatter 2 * N * Cout * k^2 + O = 2 * 100 * 2 * 9 + 242 = 3842; MACs 100 * 2 * 9
    ("convtranspose2d", lambda: nn.ConvTranspose2d(4, 2, 3, stride=2), (1, 4, 5, 5),
     (3842, 1800, 9038, (-3, 0.5, 0)), (17440, 8720, 9038, (-3, 0.5, 0))),
    # by hand: O = 48, K = 2^2 = 4: O * (K - 1) = 144; 0.2.0 took the int kernel as K = 2: 48
    ("maxpool2d", lambda: nn.MaxPool2d(2), (1, 3, 8, 8), (144, 144, 240, (2, 2, 0)), (48, 48, 240, (2, 2, 0))),
    ("maxpool2d_s1", lambda: nn.MaxPool2d(3, stride=1, padding=1), (1, 2, 6, 6),
     (576, 576, 720, (3, 1, 1)), (144, 144, 720, (3, 1, 1))),
    # by hand: O * K = 48 * 4 = 192, MACs O * (K - 1 + rank) = 240; 0.2.0: 48 * (2 - 1 + 2) = 144 for both
    ("avgpool2d", lambda: nn.AvgPool2d(2), (1, 3, 8, 8), (192, 240, 240, (2, 2, 0)), (144, 144, 240, (2, 2, 0))),
    ("adaptivemax2d", lambda: nn.AdaptiveMaxPool2d((2, 3)), (1, 2, 7, 8),
     (148, 148, 172, (3, 3, -0.5)), (60, 60, 84, (3, 3, -0.5))),
    ("adaptiveavg2d", lambda: nn.AdaptiveAvgPool2d(3), (1, 2, 7, 8),
     (180, 198, 198, (3, 3, -0.5)), (126, 126, 126, (3, 3, -0.5))),
    # eval: no mask is drawn here (0); 0.2.0 counted N = 20 whenever p > 0
    ("dropout_eval", lambda: nn.Dropout(0.5).eval(), (2, 10), (0, 0, 41, (1, 1, 0)), (20, 0, 41, (1, 1, 0))),
    # 0.2.0 had a LayerNorm FLOPs formula only
    ("layernorm", lambda: nn.LayerNorm(10), (2, 10), (164, 40, 151, (None, None, None)), (164, "warn", "warn", "warn")),
    ("glu", nn.GLU, (2, 10), (50, 0, 30, (None, None, None)), ("warn", "warn", "warn", "warn")),
    # contract 2.1's pinned activation counts: Hardswish on (2, 4) is 40 FLOPs, 16 DMAs
    ("hardswish", nn.Hardswish, (2, 4), (40, 0, 16, (1, 1, 0)), ("warn", "warn", "warn", "warn")),
]


def _call(factory, shape):
    torch.manual_seed(0)
    module = factory()
    x = torch.rand(shape)
    with torch.no_grad():
        y = module(x)
    return module, x, y


def _functions(module, x, y):
    return (
        modules.module_flops(module, (x,), y),
        modules.module_macs(module, x, y),
        modules.module_dmas(module, x, y),
        modules.module_rf(module, x, y),
    )


def _crawl_values(module, x):
    metrics = crawl_module(module, args=(x,))["layers"][0]["metrics"]
    values = [metrics[key]["value"] for key in ("module_flops", "macs", "dmas")]
    rf = tuple(metrics[key]["value"] for key in ("receptive_field", "effective_stride", "effective_padding"))
    return (*values, rf)


@pytest.mark.parametrize(("name", "factory", "shape", "expected"), SAME_AS_020, ids=[c[0] for c in SAME_AS_020])
def test_module_functions_equal_020(name, factory, shape, expected):
    module, x, y = _call(factory, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _functions(module, x, y)
    assert got == expected
    assert got == _crawl_values(module, x)
    assert all(isinstance(v, float) for v in got[3])


@pytest.mark.parametrize(
    ("name", "factory", "shape", "expected", "v020"), DIFFER_FROM_020, ids=[c[0] for c in DIFFER_FROM_020]
)
def test_module_functions_documented_differences(name, factory, shape, expected, v020):
    module, x, y = _call(factory, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = _functions(module, x, y)
    assert got == expected
    assert got == _crawl_values(module, x)
    assert got != v020
    assert type(module).__name__.rstrip("123d") in _doc_text()  # each family's difference is documented


def _doc_text():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "module-formulas.md").read_text(encoding="utf-8")
    return text.split("## torchscan.modules and 0.2.0", 1)[1]


def test_unsupported_module_warns_and_returns_zero_like_020():
    class Custom(nn.Module):
        def forward(self, x):
            return x + 1

    module, x = Custom(), torch.rand(2, 3)
    y = module(x)
    with pytest.warns(UserWarning, match="^Module type not supported: Custom$"):
        assert modules.module_flops(module, (x,), y) == 0
    with pytest.warns(UserWarning, match="Module type not supported: Custom"):
        assert modules.module_macs(module, x, y) == 0
    with pytest.warns(UserWarning, match="Module type not supported: Custom"):
        assert modules.module_dmas(module, x, y) == 0
    with pytest.warns(UserWarning, match="Module type not supported: Custom"):
        assert modules.module_rf(module, x, y) == (1.0, 1.0, 0.0)
    # the crawl says what that 0 is: a lower bound
    flops = crawl_module(module, args=(x,))["layers"][0]["metrics"]["module_flops"]
    assert (flops["status"], flops["known_value"]) == ("partial", 0)


def test_module_function_errors():
    module = nn.Linear(2, 2)
    x = torch.rand(3, 2)
    with pytest.raises(TypeError, match="torch.nn.Module"):
        modules.module_flops(lambda t: t, (x,), x)
    with pytest.raises(ValueError, match="input and output tensor"):
        modules.module_macs(module, x, None)
    z = torch.rand(3, 2, dtype=torch.complex64)
    with pytest.raises(NotImplementedError, match="real"):
        modules.module_flops(module, (z,), z)  # the formulas need real inputs


def test_training_mode_follows_the_module():
    module = nn.Dropout(0.5).train()
    x = torch.rand(2, 10)
    assert modules.module_flops(module, (x,), module(x)) == 40  # 2N while training (contract 2.1)


def test_multihead_attention_takes_all_inputs():
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(4, 2, batch_first=True).eval()
    q = torch.rand(1, 3, 4)
    out = mha(q, q, q)
    metrics = crawl_module(mha, args=(q, q, q))["layers"][0]["metrics"]
    assert modules.module_macs(mha, (q, q, q), out[0]) == metrics["macs"]["value"] == 264  # contract 2.1 pinned
    assert modules.module_flops(mha, (q, q, q), out) == metrics["module_flops"]["value"]


def test_package_surface_of_contract_1_0():
    from torchscan import crawler, process  # noqa: F401

    for name in ("module_flops", "module_macs", "module_dmas", "module_rf"):
        assert getattr(torchscan.modules, name) is getattr(crawler, name)
    assert crawler.format_info is utils.format_info and crawler.aggregate_info is utils.aggregate_info
    assert "modules" in torchscan.__all__ and "utils" in torchscan.__all__


# --- utils ---------------------------------------------------------------------------------------------------

# torchscan==0.2.0's utils.format_info(report, "mid", True, True) on this package's report of _model() on
# (3, 32, 32) (the report's numbers are this package's; the text is 0.2.0's). By hand: Param # of Linear
# 1800 * 4 + 4 = 7,204; total 224 + 7204 = 7,428; widths max(header, cells) = 10, 10, 14, 7, 9, 15, 16, 17.
REF_TABLE = """\
______________________________________________________________________________________________________________________________
Layer         Type          Output Shape      Param #    Trainable    Receptive field    Effective stride    Effective padding
==============================================================================================================================
sequential    Sequential    (1, 4)            0          -            ?                  ?                   ?                
├─0           Conv2d        (1, 8, 30, 30)    224        True         3                  1                   0                
├─1           Sequential    (1, 8, 15, 15)    0          -            ?                  ?                   ?                
|    └─0      ReLU          (1, 8, 30, 30)    0          -            1                  1                   0                
|    └─1      MaxPool2d     (1, 8, 15, 15)    0          -            2                  2                   0                
├─2           Flatten       (1, 1800)         0          -            1                  1                   0                
├─3           Linear        (1, 4)            7,204      True         1                  1                   0                
==============================================================================================================================
Trainable params: 7,428
Non-trainable params: 0
Total params: 7,428
------------------------------------------------------------------------------------------------------------------------------
Model size (params + buffers): 0.03 Mb
------------------------------------------------------------------------------------------------------------------------------
Module-formula forward FLOPs: 415.80 kFLOPs
Multiply-Accumulations: 207.00 kMACs
Direct memory accesses: 237.83 kDMAs
Operator forward FLOPs: 415.80 kFLOPs
______________________________________________________________________________________________________________________________"""


def _model():
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3), nn.Sequential(nn.ReLU(), nn.MaxPool2d(2)), nn.Flatten(), nn.Linear(8 * 15 * 15, 4)
    )


@pytest.fixture(scope="module")
def report():
    return crawl_module(_model(), (3, 32, 32))


def test_format_info_equals_020(report):
    assert utils.format_info(report, "mid", True, True) == REF_TABLE
    short = utils.format_info(report)
    lines = REF_TABLE.splitlines()
    assert short.splitlines()[1] == "Layer         Type          Output Shape      Param #    Trainable"
    assert short.splitlines()[-5:] == lines[-5:-1] + ["_" * 66]
    with pytest.raises(ValueError):
        utils.format_info(report, wrap_mode="middle")


def test_aggregate_info_equals_020(report):
    view = utils.aggregate_info(report, 1)
    assert [layer["name"] for layer in view["layers"]] == ["sequential", "0", "1", "2", "3"]
    assert view["totals"] == report["totals"] and len(report["layers"]) == 7
    assert view["layers"][0] is not report["layers"][0]  # a copy
    with pytest.raises(ValueError, match="^max_depth must be non-negative.$"):
        utils.aggregate_info(report, -1)
    with pytest.raises(ValueError, match="^The `max_depth` argument cannot be higher than module depth.$"):
        utils.aggregate_info(report, 5)


def test_format_name_equals_020():
    assert [utils.format_name("a.b", d) for d in range(4)] == ["a.b", "├─a.b", "|    └─a.b", "|    |    └─a.b"]


def test_wrap_string_equals_020():
    # by hand: 12 characters, "[...]" is 5 -> 7 kept; "mid" ends "[...].conv" (10) -> 2 kept
    assert utils.wrap_string("features.block.conv", 12) == "feature[...]"
    assert utils.wrap_string("features.block.conv", 12, mode="mid") == "fe[...].conv"
    assert utils.wrap_string("features.block.conv", 12, mode=None) == "features.block.conv"
    assert utils.wrap_string("short", 12) == "short"
    with pytest.raises(ValueError, match="received an unexpected value of argument `mode`"):
        utils.wrap_string("features.block.conv", 5, mode="bad")


def test_unit_scale_equals_020():
    got = [utils.unit_scale(v) for v in (0.5, 999, 1000, 2.5e6, 3e9, 4e12, 5e15)]
    assert got == [(0.5, ""), (999, ""), (1.0, "k"), (2.5, "M"), (3.0, "G"), (4.0, "T"), (5000.0, "T")]


def test_format_s_equals_020():
    assert utils.format_s("abc", 5, 2) == "ab"
    assert utils.format_s("abc", 5) == "abc  "
    assert utils.format_s("abcdef", None, 4) == "abcd"
    assert utils.format_s("abc") == "abc"


def test_format_line_str_equals_020(report):
    layers = report["layers"]
    assert utils.format_line_str(layers[1]) == ["├─0", "Conv2d", "(1, 8, 30, 30)", "224", "True"]
    assert utils.format_line_str(layers[0]) == ["sequential", "Sequential", "(1, 4)", "0", "-"]
    assert utils.format_line_str(layers[1], [10, 8, 12, 7, 9, 4, 4, 4], "end", True, True) == [
        "├─0       ",
        "Conv2d  ",
        "(1, 8, [...]",
        "224    ",
        "True     ",
        "3   ",
        "1   ",
        "0   ",
    ]
    # the table's rows are these cells at the table's widths
    widths = [10, 10, 14, 7, 9, 15, 16, 17]
    assert "    ".join(utils.format_line_str(layers[1], widths, "mid", True, True)) == REF_TABLE.splitlines()[4]
