"""User code and errors: every failure kind at every user-code site (docs/architecture.md, "User code and errors").

The sites: a custom operator formula (custom_mapping, through crawl_module and measure_flops), a custom module
handler (custom_modules=ModuleHandler(...)), and a module reader (a user subclass of a native family whose
hyperparameter is a property, read when the crawl is built or again during the forward). The rule: an
Exception (MemoryError included) and a wrong return type become the site's diagnostic; KeyboardInterrupt,
SystemExit and any other BaseException propagate as the same object, with every hook removed and every
training flag restored.
"""

from __future__ import annotations

import pytest
import torch
from torch import nn

from torchscan import ModuleHandler, crawl_module, measure_flops

from conftest import assert_nothing_left, training_flags


class CustomInterrupt(BaseException):
    """A BaseException that is not an Exception (as a framework's cancellation may be)."""


ERRORS = {
    "exception": lambda: ValueError("broken estimate"),
    "memory_error": lambda: MemoryError("out of memory in user code"),
}
INTERRUPTS = {
    "keyboard_interrupt": KeyboardInterrupt,
    "system_exit": lambda: SystemExit(3),
    "custom_base_exception": lambda: CustomInterrupt("stop"),
}


def _model() -> nn.Module:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.1)))
    model.train()
    model[2].eval()  # mixed flags: each must come back as it was
    return model


def _x() -> torch.Tensor:
    return torch.ones(2, 4)


def _codes(report: dict) -> set[str]:
    return {d["code"] for d in report["diagnostics"]}


def _propagates(run, model: nn.Module, exc: BaseException) -> None:
    flags = training_flags(model)
    with pytest.raises(type(exc)) as info:
        run()
    assert info.value is exc  # the same object, not a wrapper
    assert training_flags(model) == flags
    _nothing_left(model)


def _nothing_left(model: nn.Module) -> None:
    """conftest's check, less the caller's own pre-hooks (the reader tests register one)."""
    saved = {name: dict(m._forward_pre_hooks) for name, m in model.named_modules()}
    for m in model.modules():
        m._forward_pre_hooks.clear()
    try:
        assert_nothing_left(model)
    finally:
        for name, m in model.named_modules():
            m._forward_pre_hooks.update(saved[name])


# ---------------------------------------------------------------------------------------------------------------
# custom operator formulas
# ---------------------------------------------------------------------------------------------------------------


def _raising_formula(exc: BaseException):
    def formula(*shapes, out_shape=None):
        raise exc

    return formula


@pytest.mark.parametrize("kind", list(ERRORS))
def test_formula_exception_is_a_diagnostic(kind):
    exc = ERRORS[kind]()
    model = _model()
    report = crawl_module(model, args=(_x(),), custom_mapping={torch.ops.aten.addmm: _raising_formula(exc)})
    diags = [d for d in report["diagnostics"] if d["code"] == "unsupported_operator_formula"]
    assert diags and all(d["operator"] == "aten.addmm" for d in diags)
    assert diags[0]["message"] == f"the custom formula raised {type(exc).__name__}: {exc}"
    assert report["totals"]["operator_flops"]["status"] == "partial"
    assert_nothing_left(model)
    flops = measure_flops(lambda: torch.sin(_x()), custom_mapping={torch.ops.aten.sin: _raising_formula(exc)})
    assert [d["code"] for d in flops["diagnostics"]] == ["unsupported_operator_formula"]


@pytest.mark.parametrize("returned", ["12", [3], None, True, -1, float("nan")], ids=repr)
def test_formula_wrong_return_is_a_diagnostic(returned):
    report = crawl_module(
        _model(), args=(_x(),), custom_mapping={torch.ops.aten.addmm: lambda *a, out_shape=None: returned}
    )
    messages = [d["message"] for d in report["diagnostics"] if d["code"] == "unsupported_operator_formula"]
    assert messages == [
        f"the custom formula returned {type(returned).__name__}, not a non-negative finite number"
    ] * len(messages)
    assert messages


@pytest.mark.parametrize("kind", list(INTERRUPTS))
def test_formula_interrupt_propagates(kind):
    exc = INTERRUPTS[kind]()
    model = _model()
    mapping = {torch.ops.aten.addmm: _raising_formula(exc)}
    _propagates(lambda: crawl_module(model, args=(_x(),), custom_mapping=mapping), model, exc)
    # measure_flops(modules=...) observes without changing flags, and cleans up the same way
    _propagates(lambda: measure_flops(lambda: model(_x()), modules=model, custom_mapping=mapping), model, exc)


# ---------------------------------------------------------------------------------------------------------------
# custom module handlers
# ---------------------------------------------------------------------------------------------------------------


def _raising_handler(exc: BaseException):
    def estimate(call):
        raise exc

    return estimate


@pytest.mark.parametrize("kind", list(ERRORS))
def test_handler_exception_is_a_diagnostic(kind):
    exc = ERRORS[kind]()
    model = _model()
    report = crawl_module(model, args=(_x(),), custom_modules={nn.Linear: ModuleHandler(_raising_handler(exc))})
    diags = [d for d in report["diagnostics"] if d["code"] == "custom_handler_error"]
    assert {d["path"] for d in diags} == {"0", "2.0"}
    assert all(d["message"].endswith(f": {type(exc).__name__}: {exc}") for d in diags)
    assert report["totals"]["module_flops"]["status"] != "complete"
    assert_nothing_left(model)


@pytest.mark.parametrize(
    ("returned", "code"),
    [([1], "custom_handler_invalid"), ({"flops": 1}, "custom_handler_invalid"), ({"module_flops": "1"},
     "custom_metric_invalid"), ({"module_flops": True}, "custom_metric_invalid"), ({"module_flops": -3},
     "custom_metric_invalid")],
    ids=["list", "unknown_metric", "str_value", "bool_value", "negative_value"],
)
def test_handler_wrong_return_is_a_diagnostic(returned, code):
    model = _model()
    report = crawl_module(model, args=(_x(),), custom_modules={nn.Linear: ModuleHandler(lambda call: returned)})
    assert code in _codes(report)
    assert_nothing_left(model)


def test_handler_numbers_convert_like_formulas():
    # numpy and tensor results count as formulas' do (one conversion for every site)
    np = pytest.importorskip("numpy")
    for value in (np.int64(7), np.float32(7.0), torch.tensor(7), torch.tensor(7.0)):
        report = crawl_module(
            nn.Linear(4, 3), args=(_x(),), custom_modules={nn.Linear: ModuleHandler(lambda c, v=value: {"module_flops": v})}
        )
        assert report["layers"][0]["metrics"]["module_flops"]["value"] == 7, type(value)


@pytest.mark.parametrize("kind", list(INTERRUPTS))
def test_handler_interrupt_propagates(kind):
    exc = INTERRUPTS[kind]()
    model = _model()
    handlers = {nn.Linear: ModuleHandler(_raising_handler(exc))}
    _propagates(lambda: crawl_module(model, args=(_x(),), custom_modules=handlers), model, exc)


# ---------------------------------------------------------------------------------------------------------------
# module readers
# ---------------------------------------------------------------------------------------------------------------


def _reader_model(failure, when: str) -> nn.Module:
    """A Linear subclass (native forward) whose in_features is a property that fails. when="build": the
    module is of that class from the start (read when the crawl is built); "forward": a forward pre-hook of
    the caller's gives it that class during the forward, so the crawl reads it again then."""

    class PropertyLinear(nn.Linear):
        @property
        def in_features(self):
            return failure()

        @in_features.setter
        def in_features(self, value):
            self.__dict__["_in_features"] = value

    if when == "build":
        layer: nn.Module = PropertyLinear(4, 3)
    else:
        layer = nn.Linear(4, 3)

        def become(module, args):
            module.__class__ = PropertyLinear

        layer.register_forward_pre_hook(become)
    model = nn.Sequential(layer, nn.ReLU())
    model.train()
    return model


def _raise(exc: BaseException):
    def failure():
        raise exc

    return failure


@pytest.mark.parametrize("when", ["build", "forward"])
@pytest.mark.parametrize("kind", [*ERRORS, "wrong_type"])
def test_reader_exception_is_a_diagnostic(kind, when):
    failure = (lambda: "four") if kind == "wrong_type" else _raise(ERRORS[kind]())
    model = _reader_model(failure, when)
    flags = training_flags(model)
    report = crawl_module(model, args=(_x(),))
    # the module has no formula rather than a wrong one
    assert {"code": "unsupported_module_metric", "path": "0"}.items() <= next(
        d for d in report["diagnostics"] if d.get("path") == "0"
    ).items()
    assert report["totals"]["module_flops"]["status"] == "partial"
    assert training_flags(model) == flags
    _nothing_left(model)


@pytest.mark.parametrize("when", ["build", "forward"])
@pytest.mark.parametrize("kind", list(INTERRUPTS))
def test_reader_interrupt_propagates(kind, when):
    exc = INTERRUPTS[kind]()
    model = _reader_model(_raise(exc), when)
    _propagates(lambda: crawl_module(model, args=(_x(),)), model, exc)
