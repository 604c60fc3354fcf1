"""crawl_module(saved_activations=True) (src/ext/saved.c) on tensors whose storage reports its own identity and
size: the bytes saved are what the storage reports, deduplicated by its identity, and a storage that reports a
negative size is refused with an error that names it, leaving nothing behind."""

from __future__ import annotations

import pytest
import torch
from conftest import assert_nothing_left
from torch import nn

from torchscan import crawl_module


class _ReportedStorage:
    """What untyped_storage() answers: an identity (_cdata) and a size (nbytes())."""

    def __init__(self, nbytes: int, cdata: int) -> None:
        self._nbytes = nbytes
        self._cdata = cdata

    def nbytes(self) -> int:
        return self._nbytes


def _tensor_with_storage(nbytes: int, cdata: int) -> torch.Tensor:
    class Reporting(torch.Tensor):
        def untyped_storage(self):
            return _ReportedStorage(nbytes, cdata)

    return torch.rand(2, 4).as_subclass(Reporting).requires_grad_()


class _Square(nn.Module):
    def forward(self, x):
        return x * x  # mul saves both operands: here one storage, twice


def test_saved_bytes_are_what_the_storage_reports_counted_once():
    model = _Square()
    report = crawl_module(model, args=(_tensor_with_storage(8, 99),), saved_activations=True)
    saved = report["totals"]["saved_activation_bytes"]
    assert saved["status"] == "complete" and saved["value"] == 8
    (row,) = report["layers"]
    assert row["metrics"]["saved_activation_bytes"]["value"] == 8
    assert_nothing_left(model)


def test_a_storage_reporting_a_negative_size_is_refused():
    model = _Square()
    with pytest.raises(ValueError, match="^a storage reports -8 bytes$"):
        crawl_module(model, args=(_tensor_with_storage(-8, 99),), saved_activations=True)
    assert_nothing_left(model)
    assert torch.is_grad_enabled()


class _StorageMemoryError(torch.Tensor):
    def untyped_storage(self):
        raise MemoryError("no memory left for the storage object")


def test_a_memory_error_reading_a_saved_storage_propagates_instead_of_a_lower_bound():
    # any other Exception makes the tensor unmeasured (test_saved_activations); a failed allocation says nothing
    # about the tensor and is raised, as estimate_memory raises it
    model = _Square()
    x = torch.rand(2, 4).as_subclass(_StorageMemoryError).requires_grad_()
    with pytest.raises(MemoryError, match="no memory left for the storage object"):
        crawl_module(model, args=(x,), saved_activations=True)
    assert_nothing_left(model)
    assert torch.is_grad_enabled()
