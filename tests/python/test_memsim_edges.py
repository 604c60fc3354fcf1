"""estimate_memory's simulation (src/ext/memsim.c) on tensors whose storage cannot be read, and the slow_conv2d
workspace on the shapes the usual tests do not take (a strided 1x1 kernel, a backward whose gradient is already
contiguous). Sizes are hand arithmetic, checked against measure_peak_memory (PyTorch's allocation events)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import estimate_memory
from torchscan.process import measure_peak_memory


pytestmark = pytest.mark.filterwarnings("ignore:TF32 acceleration on top of oneDNN:UserWarning")


class _NoStorage(torch.Tensor):
    def untyped_storage(self):
        raise TypeError("no storage here")


class _BrokenStorage(torch.Tensor):
    def untyped_storage(self):
        raise RuntimeError("storage unavailable")


def test_a_tensor_without_a_readable_storage_is_unobserved_and_the_peak_a_lower_bound():
    x = torch.ones(2, 3).as_subclass(_NoStorage)
    report = estimate_memory(lambda: x * 2)
    peak = report["totals"]["peak_bytes"]
    # the product's output, a plain (2, 3) float32 tensor at dispatch: 24 bytes; the input was not read
    assert peak["status"] == "partial" and peak["known_value"] == 24
    assert [(d["code"], d["metric"]) for d in report["diagnostics"]] == [
        ("unobserved_storage", "peak_bytes"),
        ("unobserved_storage", "resident_peak_bytes"),
    ]
    assert report["diagnostics"][0]["message"].startswith("1 tensor(s) had no readable storage")


def test_any_other_error_reading_a_storage_propagates_unchanged():
    x = torch.ones(2, 3).as_subclass(_BrokenStorage)
    with pytest.raises(RuntimeError, match="storage unavailable"):
        estimate_memory(lambda: x * 2)
    assert torch._C._len_torch_dispatch_stack() == 0


def _without_onednn():
    # mkldnn.flags() warns about TF32 on Intel GPUs, which CPU runs do not use
    return torch.backends.mkldnn.flags(enabled=False)


def test_a_strided_1x1_convolution_without_onednn_holds_an_im2col_buffer():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 1, stride=2)
    x = torch.randn(2, 3, 8, 8)

    def inference():
        with torch.no_grad():
            conv(x)

    with _without_onednn():
        report = estimate_memory(inference)
        measured = measure_peak_memory(inference, device="cpu")["peak_bytes"]
    # output (2, 4, 4, 4) float32: 512 bytes; a 1x1 kernel of stride 2 still needs its columns:
    # batch 2 x (C_in 3 x 1 x 1) x (4 x 4) x 4 bytes = 384
    assert report["peak"]["composition"]["workspace"] == 384
    assert report["totals"]["peak_bytes"]["value"] == 512 + 384 == measured


def test_a_convolution_backward_with_a_contiguous_gradient_copies_nothing():
    torch.manual_seed(0)
    conv = nn.Conv2d(3, 4, 3)
    x = torch.randn(2, 3, 8, 8, requires_grad=True)

    def contiguous():
        out = conv(x)
        out.backward(torch.ones_like(out))

    def expanded():
        conv(x).sum().backward()  # sum's gradient is an expanded scalar: made contiguous by the kernel

    with _without_onednn():
        simulated = {f.__name__: estimate_memory(f) for f in (contiguous, expanded)}
        measured = {f.__name__: measure_peak_memory(f, device="cpu")["peak_bytes"] for f in (contiguous, expanded)}
    for name, report in simulated.items():
        assert report["totals"]["peak_bytes"]["status"] == "complete", name
        assert report["totals"]["peak_bytes"]["value"] == measured[name], name
    # the expanded gradient's contiguous copy, (2, 4, 6, 6) float32 = 1152 bytes, is workspace of its own
    workspace = {name: report["peak"]["composition"]["workspace"] for name, report in simulated.items()}
    assert workspace["expanded"] - workspace["contiguous"] == 1152
