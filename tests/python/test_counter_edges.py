"""The operator counter (src/ext/counter.c, src/ext/op_resolve.c) on the paths the usual workloads do not take:
its ``__torch_dispatch__`` called with missing or misnamed arguments, the metadata queries it declines, its
memory-simulation entry points out of order, torch.cond called with plain bool/int predicates, a Parameter, an
ambiguous or meta predicate, sums that no longer fit, and tensor subclasses.

Counts are hand arithmetic (an (m, k) @ (k, n) product is 2*m*k*n FLOPs; sin is one FLOP per element) or
torch.utils.flop_counter.FlopCounterMode's on the products it covers."""

from __future__ import annotations

import warnings

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from torchscan import measure_flops
from torchscan.flops import _OperatorCounter

aten = torch.ops.aten
cond = torch.ops.higher_order.cond


def test_dispatch_called_by_hand_checks_its_arguments_and_counts_by_keyword():
    counter = _OperatorCounter()
    x = torch.ones(2, 3)
    with pytest.raises(TypeError, match=r"__torch_dispatch__\(func, types, args, kwargs\)"):
        counter.__torch_dispatch__(aten.mm.default)
    with pytest.raises(TypeError, match="dispatch args must be a tuple"):
        counter.__torch_dispatch__(aten.mm.default, (), [x, x.t()])
    with pytest.raises(TypeError, match="dispatch args must be a tuple"):
        counter.__torch_dispatch__(aten.mm.default, (), kwargs={})
    # args and kwargs may be passed by name; kwargs that are not a dict are no keyword arguments
    by_name = counter.__torch_dispatch__(aten.mm.default, (), args=(x, x.t()), kwargs=None)
    not_a_dict = counter.__torch_dispatch__(aten.mm.default, (), (x, x.t()), "not a dict")
    torch.testing.assert_close(by_name, x @ x.t())
    torch.testing.assert_close(not_a_dict, x @ x.t())
    # a metadata query is declined (PyTorch then answers it without the mode) and not recorded
    assert counter.__torch_dispatch__(aten.size.default, (), (x,), {}) is NotImplemented
    report = counter.report()
    # two (2, 3) @ (3, 2) products: 2 * (2*2*3*2) = 48, as FlopCounterMode counts them
    with FlopCounterMode(display=False) as reference:
        x @ x.t()
        x @ x.t()
    assert reference.get_total_flops() == 48
    assert report["by_operator"] == {"aten.mm": 48}
    assert report["total"]["status"] == "complete" and report["total"]["value"] == 48
    assert report["ignored_operators"] == {} and report["diagnostics"] == []


def test_configure_takes_a_dict_or_none_and_the_formula_counts_only_while_configured():
    counter = _OperatorCounter()
    x = torch.ones(2, 3)
    with pytest.raises(TypeError, match="custom_mapping must be a dict"):
        counter._configure([(aten.sin, len)])
    counter._configure({aten.sin: lambda *shapes, **kw: 7})
    torch.testing.assert_close(counter.__torch_dispatch__(aten.sin.default, (), (x,), None), torch.sin(x))
    counter._configure(None)
    counter.__torch_dispatch__(aten.sin.default, (), (x,), None)
    # 7 by the caller's formula, then 6 by ours (one per element of a (2, 3) tensor)
    assert counter.report()["by_operator"] == {"aten.sin": 13}


class _Unjsonable:
    pass


class _NoTruth:
    def __bool__(self):
        raise ZeroDivisionError("no truth value")


def test_report_and_memory_entry_points_refuse_bad_arguments_and_the_wrong_order():
    counter = _OperatorCounter()
    with pytest.raises(TypeError, match="_report"):
        counter._report(torch.__version__)
    with pytest.raises(ValueError, match="by_module"):
        counter._report(torch.__version__, "m", _Unjsonable())
    with pytest.raises(ValueError, match="by_phase"):
        counter._report(torch.__version__, "m", None, _Unjsonable())
    for call in (lambda: counter._memory_name(torch.nn.Linear(2, 2), 0), lambda: counter._memory_report(False, "as_run", torch.__version__)):
        with pytest.raises(RuntimeError, match="not simulating memory"):
            call()
    with pytest.raises(TypeError, match="_memory_name"):
        counter._memory_name(torch.nn.Linear(2, 2))
    assert counter._storage_freed(None) is None  # a late weak-reference callback: nothing to do
    counter._simulate_memory()
    with pytest.raises(RuntimeError, match="already simulating memory"):
        counter._simulate_memory()
    with pytest.raises(ZeroDivisionError, match="no truth value"):
        counter._memory_report(_NoTruth(), "as_run", torch.__version__)
    nothing = counter._memory_report(False, "as_run", torch.__version__)
    assert nothing["allocated_bytes"] == 0 and nothing["events"] == 0
    assert nothing["totals"]["peak_bytes"]["status"] == "unavailable"  # nothing ran: no peak, not a peak of 0
    counter._memory_end()
    with pytest.raises(RuntimeError, match="not simulating memory"):
        counter._memory_report(True, "as_run", torch.__version__)


def test_an_optimizer_post_hook_without_its_pre_hook_opens_no_phase():
    counter = _OperatorCounter()
    x = torch.ones(2, 3)
    assert counter._optimizer_step_post(None, (), {}) is None
    counter.__torch_dispatch__(aten.mm.default, (), (x, x.t()), {})
    counter._optimizer_step_pre(None, (), {})
    counter.__torch_dispatch__(aten.mm.default, (), (x, x.t()), {})
    counter._optimizer_step_post(None, (), {})
    phases = counter.report()["phases"]
    assert phases["forward"]["total"]["value"] == 24
    assert phases["optimizer"]["total"]["value"] == 24


def _cond_operands():
    return torch.ones(4, 8), torch.full((8, 8), 0.5)


def _two_products(x, w):
    return (x @ w) @ w


def _one_product(x, w):
    return x @ w


@pytest.mark.parametrize(
    ("predicate", "products"),
    [(True, 2), (False, 1), (1, 2), (0, 1), (torch.nn.Parameter(torch.tensor(True), requires_grad=False), 2)],
    ids=["true", "false", "one", "zero", "parameter"],
)
def test_cond_called_directly_with_a_concrete_predicate_counts_the_branch_it_runs(predicate, products):
    x, w = _cond_operands()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # operands as a list: the branch still gets them as positional arguments
        report = measure_flops(lambda: out.setdefault("y", cond(predicate, _two_products, _one_product, [x, w])))
    expected = _two_products(x, w) if products == 2 else _one_product(x, w)
    torch.testing.assert_close(out["y"], expected)
    # each (4, 8) @ (8, 8) product: 2*4*8*8 = 512
    assert report["by_operator"] == {"aten.mm": 512 * products}
    assert report["total"]["status"] == "complete" and report["diagnostics"] == []
    assert torch._C._len_torch_dispatch_stack() == 0


def test_cond_predicates_without_one_truth_value_raise_as_they_do_without_the_counter():
    x, w = _cond_operands()
    for predicate, match in (
        (torch.tensor([True, False]), "more than one value is ambiguous"),
        (torch.tensor(True, device="meta"), "meta tensors"),
    ):
        with pytest.raises(RuntimeError, match=match):
            cond(predicate, _two_products, _one_product, (x, w))
        with pytest.raises(RuntimeError, match=match):
            measure_flops(lambda p=predicate: cond(p, _two_products, _one_product, (x, w)))
        assert torch._C._len_torch_dispatch_stack() == 0


def test_a_sum_past_int64_keeps_what_fits_and_says_so_for_a_callers_formula():
    x = torch.ones(2, 3)
    report = measure_flops(lambda: [torch.sin(x) for _ in range(3)], custom_mapping={aten.sin: lambda *a, **k: 2**62})
    # 2**62 fits; the second and third calls would make the sum 2**63 and are noted, not counted
    assert report["by_operator"] == {"aten.sin": 2**62}
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 2**62
    (diag,) = report["diagnostics"]
    assert diag["code"] == "unsupported_operator_formula" and diag["operator"] == "aten.sin"
    assert "64-bit" in diag["message"]


def test_operators_on_a_tensor_subclass_are_counted_on_its_shapes():
    from torch.testing._internal.two_tensor import TwoTensor

    a = TwoTensor(torch.ones(2, 3), torch.ones(2, 3))
    b = TwoTensor(torch.ones(3, 4), torch.ones(3, 4))
    with FlopCounterMode(display=False) as reference:
        a @ b
    report = measure_flops(lambda: a @ b)
    # (2, 3) @ (3, 4): 2*2*3*4 = 48
    assert reference.get_total_flops() == 48
    assert report["by_operator"] == {"aten.mm": 48}
    assert report["total"]["status"] == "complete"


class _UnreadableNumel(torch.Tensor):
    """A tensor subclass whose element count cannot be read through its method."""

    def numel(self):
        raise RuntimeError("no element count")


def test_a_tensor_list_of_unknown_size_is_refused_not_counted_as_a_complete_zero():
    s = torch.ones(2, 3)
    deep = torch.ones([1] * 12 + [2])  # 13 dimensions: more than a shape holds
    # the reference: a single tensor of 13 dimensions is refused with this message
    single = measure_flops(lambda: torch.add(deep, deep))
    (refusal,) = single["diagnostics"]
    assert "no concrete shape" in refusal["message"]
    # the first tensor of the list without a concrete shape: refused the same way (was a complete 0)
    report = measure_flops(lambda: torch._foreach_add([deep, s], [deep, s]))
    assert report["total"]["status"] == "partial" and report["total"]["known_value"] == 0
    (diag,) = report["diagnostics"]
    assert diag["code"] == "unsupported_operator_formula" and diag["operator"] == "aten._foreach_add"
    assert diag["message"] == refusal["message"]
    # a later tensor of 13 dimensions only adds its count: 6 + 2 = 8, one addition per element
    later = measure_flops(lambda: torch._foreach_add([s, deep], [s, deep]))
    assert later["by_operator"] == {"aten._foreach_add": 8} and later["total"]["status"] == "complete"
    # a later tensor whose count cannot be read: the list has no known size (was a complete 0)
    odd = s.clone().as_subclass(_UnreadableNumel)
    report = measure_flops(lambda: torch._foreach_add([s, odd], [s, odd]))
    assert report["total"]["status"] == "partial" and report["by_operator"] == {}
    (diag,) = report["diagnostics"]
    assert diag["message"] == "The formula needs argument 0 as a list of tensors with concrete shapes."
    # as the first tensor its shape is read directly: 6 + 6 = 12
    first = measure_flops(lambda: torch._foreach_add([odd, s], [odd, s]))
    assert first["by_operator"] == {"aten._foreach_add": 12} and first["total"]["status"] == "complete"


class _TextNumel(torch.Tensor):
    """A tensor subclass whose numel() answers something that is not a number."""

    def numel(self):
        return "many"


def test_a_later_tensor_whose_count_is_not_a_number_makes_the_list_size_unknown():
    s = torch.ones(2, 3)
    odd = s.clone().as_subclass(_TextNumel)
    report = measure_flops(lambda: torch._foreach_mul([s, odd], [s, odd]))
    assert report["total"]["status"] == "partial" and report["by_operator"] == {}
    (diag,) = report["diagnostics"]
    assert diag["operator"] == "aten._foreach_mul"
    assert diag["message"] == "The formula needs argument 0 as a list of tensors with concrete shapes."


def test_index_lists_with_none_entries_are_read_past_the_none():
    x = torch.zeros(3, 4)
    index = torch.tensor([0, 2])
    out = {}
    # x[:, index] += 1 as one accumulating index_put_: one addition per value written, 3 * 2 = 6
    report = measure_flops(
        lambda: out.setdefault("y", aten.index_put_.default(x, [None, index], torch.ones(3, 2), True))
    )
    expected = torch.zeros(3, 4)
    expected[:, index] += 1
    torch.testing.assert_close(out["y"], expected)
    assert report["by_operator"] == {"aten.index_put_": 6}
    assert report["total"]["status"] == "complete"


def test_python_scalars_beyond_int64_and_complex_scalars():
    x = torch.ones(2, 3)
    out = {}
    # a float tensor times an int beyond int64 (a Scalar PyTorch keeps as uint64): one multiply per element, 6
    big = measure_flops(lambda: out.setdefault("big", x * (2**64 - 1)))
    torch.testing.assert_close(out["big"], torch.full((2, 3), float(2**64 - 1)))
    assert big["by_operator"] == {"aten.mul": 6} and big["total"]["status"] == "complete"
    # a complex Python scalar: the supplemental formulas count real arithmetic only
    complex_scalar = measure_flops(lambda: x * 2j)
    assert complex_scalar["total"]["status"] == "partial" and complex_scalar["by_operator"] == {}
    (diag,) = complex_scalar["diagnostics"]
    assert diag["operator"] == "aten.mul" and diag["code"] == "unsupported_operator_formula"
    assert diag["message"] == "Supplemental FLOP formulas cover real arithmetic only."


def test_dispatch_with_types_that_are_not_a_tuple_counts_like_plain_tensors():
    counter = _OperatorCounter()
    x = torch.ones(2, 3)
    torch.testing.assert_close(counter.__torch_dispatch__(aten.mm.default, [torch.Tensor], (x, x.t()), {}), x @ x.t())
    assert counter.report()["by_operator"] == {"aten.mm": 24}  # 2*2*3*2


def _weight_norm_rows(mapping):
    from torchscan import crawl_module

    torch.manual_seed(0)
    model = torch.nn.utils.parametrizations.weight_norm(torch.nn.Linear(4, 3))
    report = crawl_module(model, args=(torch.ones(2, 4),), custom_mapping=mapping)
    return {row["path"]: row["metrics"] for row in report["layers"]}, report


def test_a_callers_formula_inside_a_matched_library_block_changes_its_operator_flops_only():
    # _WeightNorm (torch.nn.utils.parametrizations) is matched by the operators it runs: one
    # _weight_norm_interface of v (3, 4) and g (3, 1) over dim 0: per row 4 squares + 3 adds + 1 sqrt (24),
    # g / norm (3), times v (12): 39 FLOPs; the Linear's addmm is 2 * 2 * 4 * 3 = 48
    rows, report = _weight_norm_rows(None)
    block = rows["parametrizations.weight.0"]
    assert block["module_flops"]["value"] == 39 and block["operator_flops"]["value"] == 39
    assert report["totals"]["operator_flops"]["value"] == 48 + 39
    # the caller's formula counts the operator, the match keeps the table's own count
    rows, report = _weight_norm_rows({aten._weight_norm_interface: lambda *shapes, **kw: 1000})
    block = rows["parametrizations.weight.0"]
    assert block["operator_flops"] == {**block["operator_flops"], "status": "complete", "value": 1000}
    assert block["module_flops"] == {**block["module_flops"], "status": "complete", "value": 39}
    assert report["totals"]["operator_flops"]["value"] == 48 + 1000
    # a caller's formula that fails: the operator is a diagnostic, the match still has the table's count
    rows, report = _weight_norm_rows({aten._weight_norm_interface: lambda *shapes, **kw: 0.5})
    block = rows["parametrizations.weight.0"]
    assert block["operator_flops"]["status"] == "partial"
    assert block["module_flops"] == {**block["module_flops"], "status": "complete", "value": 39}
    assert any(d.get("operator") == "aten._weight_norm_interface" for d in report["diagnostics"])


def test_rrelu_with_a_generator_argument_is_refused_in_training_and_counted_in_evaluation():
    x = torch.ones(2, 3)
    generator = torch.Generator().manual_seed(0)
    out = {}
    training = measure_flops(
        lambda: out.setdefault(
            "y", aten.rrelu_with_noise.default(x, torch.zeros_like(x), 0.1, 0.3, True, generator)
        )
    )
    torch.testing.assert_close(out["y"], x)  # positive inputs pass unchanged
    assert training["total"]["status"] == "partial" and training["by_operator"] == {}
    (diag,) = training["diagnostics"]
    assert diag["operator"] == "aten.rrelu_with_noise"
    assert diag["message"] == "RReLU FLOPs cover evaluation calls only."
    evaluation = measure_flops(lambda: torch.nn.functional.rrelu(x, 0.1, 0.3, training=False))
    # docs/operator-flops.md: 4*N in evaluation, N = 6 elements
    assert evaluation["by_operator"] == {"aten.rrelu_with_noise": 24}
    assert evaluation["total"]["status"] == "complete" and evaluation["diagnostics"] == []
