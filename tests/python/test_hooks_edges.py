"""The crawl's observers (src/ext/hooks.c) on modules that do not look like plain nn.Modules: hooks called by hand
or after their crawl ended, forward wrappers kept by the caller, hook tables that are not dicts (the public
registration fallback), training flags held by properties (also when restoring one fails), hook tables that fail,
and the refusal of a module another call observes (in this thread at a submodule, or from another thread).

Every count is hand arithmetic: nn.Linear(4, 4) on a (2, 4) input is one addmm of 2 * 2 * 4 * 4 = 64 FLOPs."""

from __future__ import annotations

import collections
import threading

import pytest
import torch
from conftest import assert_nothing_left
from torch import nn

from torchscan import crawl_module, measure_flops

LINEAR_FLOPS = 2 * 2 * 4 * 4


def _x():
    return torch.ones(2, 4)


def _hooked_linear():
    """A Linear with a forward hook of its own: the crawl observes it with hooks, not with a forward wrapper."""
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    lin.register_forward_hook(lambda module, args, out: None)
    return lin


def test_a_hook_called_by_hand_refuses_unexpected_arguments_and_does_nothing_after_its_crawl():
    lin = _hooked_linear()
    x = _x()
    kept = {}

    def workload():
        kept["pre"] = [h for h in lin._forward_pre_hooks.values() if type(h).__module__.startswith("torchscan")]
        kept["post"] = [h for h in lin._forward_hooks.values() if type(h).__module__.startswith("torchscan")]
        for bad in ((), (lin, (x,)), (lin, (x,), {}, x, x)):
            with pytest.raises(TypeError, match="torchscan hook called with unexpected arguments"):
                kept["pre"][0](*bad)
        with pytest.raises(TypeError, match="torchscan hook called with unexpected arguments"):
            kept["post"][0](lin, (x,), {}, kwargs=None)
        return lin(x)

    report = measure_flops(workload, modules=lin)
    assert report["by_module"] == {"": LINEAR_FLOPS}
    assert report["total"]["value"] == LINEAR_FLOPS
    (pre,), (post,) = kept["pre"], kept["post"]
    # after the crawl: a hook the caller kept does nothing (its crawl is no longer installed)
    assert pre(lin, (x,), {}) is None
    assert post(lin, (x,), {}, lin(x)) is None
    # a hook has no wrapped forward; attributes it lacks are plain AttributeErrors
    assert pre.__wrapped__ is None
    with pytest.raises(AttributeError, match="nope"):
        pre.nope
    lin._forward_hooks.clear()
    assert_nothing_left(lin)


def test_a_forward_wrapper_kept_by_the_caller_forwards_after_the_crawl():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4))
    x = _x()
    kept = {}

    def workload():
        kept["forward"] = model[0].forward
        return model(x)

    report = measure_flops(workload, modules=model)
    assert report["by_module"] == {"": 0, "0": LINEAR_FLOPS}
    wrapper = kept["forward"]
    assert type(wrapper).__module__.startswith("torchscan")
    # it stands for the bound method it wraps
    assert wrapper.__name__ == "forward" and wrapper.__wrapped__ == model[0].forward
    assert wrapper.__self__ is model[0]
    # after the crawl it only forwards, and counts nothing
    out = {}
    after = measure_flops(lambda: out.setdefault("y", wrapper(x)))
    torch.testing.assert_close(out["y"], x @ model[0].weight.T + model[0].bias)
    assert after["total"]["value"] == LINEAR_FLOPS  # the operator counter still sees the addmm
    assert_nothing_left(model)


class _Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, *, scale=1.0, fail=False):
        if fail:
            raise ValueError("asked to fail")
        return self.lin(x) * scale


def test_keyword_arguments_reach_the_wrapped_forward_and_an_exception_from_it_propagates_unchanged():
    torch.manual_seed(0)
    model = _Scaled()
    x = _x()
    out = {}
    report = measure_flops(lambda: out.setdefault("y", model(x, scale=3.0)), modules=model)
    torch.testing.assert_close(out["y"], 3.0 * model.lin(x))
    # the scaling is one multiplication per output element: 2 * 4 = 8
    assert report["by_module"] == {"": 8, "lin": LINEAR_FLOPS}
    crawl = crawl_module(model, args=(x,), kwargs={"scale": 2.0})
    assert {row["path"] for row in crawl["layers"]} == {"", "lin"}
    assert crawl["totals"]["operator_flops"]["value"] == LINEAR_FLOPS + 8
    with pytest.raises(ValueError, match="asked to fail"):
        measure_flops(lambda: model(x, fail=True), modules=model)
    assert_nothing_left(model)


def test_calls_from_another_thread_are_not_observed():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4))
    hooked = _hooked_linear()
    x = _x()
    other = {}

    def workload():
        thread = threading.Thread(target=lambda: other.setdefault("out", (model(x), hooked(x))))
        thread.start()
        thread.join()
        return model(x)

    report = measure_flops(workload, modules=[model, hooked])
    # only this thread's call of `model` is seen: the other thread ran both modules, unobserved and uncounted
    assert report["by_module"] == {"0": 0, "0.0": LINEAR_FLOPS}
    assert report["total"]["value"] == LINEAR_FLOPS
    torch.testing.assert_close(other["out"][0], model(x))
    torch.testing.assert_close(other["out"][1], hooked(x))
    hooked._forward_hooks.clear()
    assert_nothing_left(model)
    assert_nothing_left(hooked)


def test_a_hook_table_that_is_not_a_dict_gets_the_public_registration_and_it_is_removed_after():
    lin = _hooked_linear()
    lin._forward_hooks_always_called = collections.UserDict()
    x = _x()
    seen = {}

    def workload():
        # registered through register_forward_hook(always_call=True): in the caller's own table
        seen["always"] = len(lin._forward_hooks_always_called)
        return lin(x)

    report = measure_flops(workload, modules=lin)
    assert seen["always"] == 1
    assert report["by_module"] == {"": LINEAR_FLOPS}
    crawl = crawl_module(lin, args=(x,))
    assert crawl["layers"][0]["metrics"]["operator_flops"]["value"] == LINEAR_FLOPS
    assert len(lin._forward_hooks_always_called) == 0 and len(lin._forward_pre_hooks) == 0
    assert len(lin._forward_hooks) == 1  # the caller's own hook stays
    lin._forward_hooks.clear()
    assert_nothing_left(lin)


def test_hooks_the_workload_removed_itself_are_not_an_error():
    lin = _hooked_linear()
    x = _x()

    def workload():
        out = lin(x)
        lin._forward_pre_hooks.clear()
        lin._forward_hooks.clear()
        lin._forward_hooks_always_called.clear()
        return out

    report = measure_flops(workload, modules=lin)
    assert report["by_module"] == {"": LINEAR_FLOPS}
    assert_nothing_left(lin)


class _BadTable(collections.OrderedDict):
    def __len__(self):
        raise RuntimeError("hook table unreadable")


def test_a_hook_table_that_raises_fails_the_install_and_leaves_nothing():
    lin = nn.Linear(4, 4)
    lin._forward_hooks = _BadTable()
    runs = []
    with pytest.raises(RuntimeError, match="hook table unreadable"):
        measure_flops(lambda: runs.append(lin(_x())), modules=lin)
    assert runs == []  # refused before the workload ran
    assert "forward" not in vars(lin) and not lin._forward_pre_hooks
    assert torch._C._len_torch_dispatch_stack() == 0
    # the module is not left claimed: with a plain table it is observed again
    lin._forward_hooks = collections.OrderedDict()
    assert measure_flops(lambda: lin(_x()), modules=lin)["by_module"] == {"": LINEAR_FLOPS}
    assert_nothing_left(lin)


class _PropertyFlag(nn.Linear):
    """A Linear whose training flag is a property (not an entry of the instance dict)."""

    @property
    def training(self):
        return self.__dict__.get("_flag", True)

    @training.setter
    def training(self, value):
        self.__dict__["_flag"] = value


class _NoReturnToTraining(_PropertyFlag):
    @_PropertyFlag.training.setter
    def training(self, value):
        if value and "_flag" in self.__dict__:
            raise ValueError(f"{self.__dict__.get('tag', 'this module')} cannot go back to training")
        self.__dict__["_flag"] = value


class _UnreadableFlag(nn.Linear):
    @property
    def training(self):
        raise KeyError("no flag here")

    @training.setter
    def training(self, value):
        pass


def test_a_training_flag_held_by_a_property_is_restored_through_its_setter():
    model = _PropertyFlag(4, 4)
    assert model.training is True
    seen = []
    model.register_forward_pre_hook(lambda m, args: seen.append(m.training))
    report = crawl_module(model, args=(_x(),))
    assert seen == [False]  # the crawl ran it in eval mode
    assert model.training is True
    assert report["totals"]["operator_flops"]["value"] == LINEAR_FLOPS
    model._forward_pre_hooks.clear()
    assert_nothing_left(model)


def test_a_flag_setter_that_fails_on_restore_raises_after_everything_else_is_removed():
    model = _NoReturnToTraining(4, 4)
    with pytest.raises(ValueError, match="cannot go back to training"):
        crawl_module(model, args=(_x(),))
    assert model.training is False
    assert_nothing_left(model)


def test_a_training_flag_that_cannot_be_read_fails_before_the_model_runs():
    model = _UnreadableFlag(4, 4)
    runs = []
    model.register_forward_pre_hook(lambda m, args: runs.append(1))
    with pytest.raises(KeyError, match="no flag here"):
        crawl_module(model, args=(_x(),))
    assert runs == []
    model._forward_pre_hooks.clear()
    for name in ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_pre_hooks_with_kwargs"):
        assert not getattr(model, name)
    assert "forward" not in vars(model)
    assert torch._C._len_torch_dispatch_stack() == 0


def _try(call):
    try:
        return call()
    except Exception as error:  # noqa: BLE001 - the test reads it
        return error


def test_overlapping_calls_are_refused_naming_the_thread_and_the_submodule():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    x = _x()

    def inner():
        return measure_flops(lambda: model(x), modules=model)

    with pytest.raises(RuntimeError, match=r"already observed by another TorchScan call \(in this thread, at its submodule '1'\)"):
        measure_flops(inner, modules=model[1])
    found = {}

    def outer():
        thread = threading.Thread(target=lambda: found.setdefault("error", _try(inner)))
        thread.start()
        thread.join()
        return model(x)

    measure_flops(outer, modules=model)
    assert isinstance(found["error"], RuntimeError)
    assert f"(in thread {threading.get_ident()})" in str(found["error"])
    # nothing claimed afterwards; the ReLU is one comparison per element: 2 * 4 = 8
    assert inner()["by_module"] == {"": 0, "0": LINEAR_FLOPS, "1": 8}
    assert_nothing_left(model)


def test_a_stale_wrapper_the_caller_put_back_is_dropped_by_the_next_crawl():
    torch.manual_seed(0)
    lin = nn.Linear(4, 4)
    x = _x()
    kept = {}
    measure_flops(lambda: kept.setdefault("forward", lin.forward) and lin(x), modules=lin)
    # the caller restores what it saw during the first call: the first crawl's wrapper, now inert
    lin.forward = kept["forward"]
    assert type(vars(lin)["forward"]).__module__.startswith("torchscan")
    report = measure_flops(lambda: lin(x), modules=lin)
    assert report["by_module"] == {"": LINEAR_FLOPS}
    # the second crawl put back what was there, less the wrappers of crawls that ended: the class's forward
    assert "forward" not in vars(lin)
    torch.testing.assert_close(lin(x), x @ lin.weight.T + lin.bias)
    assert_nothing_left(lin)


class _NoDelete(dict):
    def __delitem__(self, key):
        raise PermissionError("hooks are permanent here")


def test_a_hook_table_that_refuses_deletion_raises_after_the_other_hooks_are_removed():
    lin = _hooked_linear()
    lin._forward_pre_hooks = _NoDelete()
    x = _x()
    with pytest.raises(PermissionError, match="hooks are permanent here"):
        measure_flops(lambda: lin(x), modules=lin)
    # the other tables are cleaned; the hook that could not be deleted stays, inert
    assert len(lin._forward_hooks_always_called) == 0 and len(lin._forward_hooks_with_kwargs) == 0
    assert len(lin._forward_hooks) == 1  # the caller's own
    (left,) = lin._forward_pre_hooks.values()
    assert left(lin, (x,), {}) is None
    # the module is not left claimed, and the inert hook adds nothing to a later call
    lin._forward_pre_hooks = collections.OrderedDict()
    assert measure_flops(lambda: lin(x), modules=lin)["by_module"] == {"": LINEAR_FLOPS}
    lin._forward_hooks.clear()
    assert_nothing_left(lin)


class _ClassLevelFlag(nn.Linear):
    training = True  # a plain class attribute (no descriptor): the instance dict's entry wins


def test_a_class_level_training_flag_is_restored_in_the_instance_dict():
    model = _ClassLevelFlag(4, 4)
    report = crawl_module(model, args=(_x(),))
    assert report["totals"]["operator_flops"]["value"] == LINEAR_FLOPS
    assert vars(model)["training"] is True and model.training is True
    assert_nothing_left(model)


def test_of_several_flags_that_cannot_be_restored_the_first_error_is_raised():
    first, second = _NoReturnToTraining(4, 4), _NoReturnToTraining(4, 4)
    first.tag, second.tag = "first", "second"
    model = nn.Sequential(first, second)
    with pytest.raises(ValueError, match="^first cannot go back to training$"):
        crawl_module(model, args=(_x(),))
    # both stay in eval (their setters refuse), the Sequential's own flag is restored
    assert first.training is False and second.training is False and model.training is True
    assert_nothing_left(model)


def test_handle_ids_that_are_not_ints_get_the_public_registration(monkeypatch):
    # the hooks are inserted straight into the module's tables with ids reserved from RemovableHandle.next_id;
    # a PyTorch whose next_id is not an int gets register_forward_(pre_)hook instead
    from torch.utils.hooks import RemovableHandle

    monkeypatch.setattr(RemovableHandle, "next_id", float(RemovableHandle.next_id))
    lin = _hooked_linear()
    x = _x()
    seen = {}

    def workload():
        seen["ids"] = [type(key) for key in lin._forward_pre_hooks]
        return lin(x)

    report = measure_flops(workload, modules=lin)
    assert seen["ids"] == [float]  # registered through the public API, under its float id
    assert report["by_module"] == {"": LINEAR_FLOPS}
    assert len(lin._forward_pre_hooks) == 0 and len(lin._forward_hooks_always_called) == 0
    lin._forward_hooks.clear()
    assert_nothing_left(lin)


class _DeleteFailsOnce(collections.UserDict):
    def __init__(self):
        super().__init__()
        self.failures = 1

    def __delitem__(self, key):
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transient failure")
        super().__delitem__(key)


def test_a_handle_removal_that_fails_part_way_is_completed_and_its_error_raised():
    lin = _hooked_linear()
    lin._forward_hooks_always_called = _DeleteFailsOnce()  # not a dict: the public registration, with handles
    x = _x()
    with pytest.raises(RuntimeError, match="transient failure"):
        measure_flops(lambda: lin(x), modules=lin)
    # RemovableHandle.remove() deleted the hook, then failed on its always_call entry: removed on the second call
    assert len(lin._forward_hooks_always_called) == 0 and len(lin._forward_hooks_with_kwargs) == 0
    assert len(lin._forward_hooks) == 1  # the caller's own
    assert measure_flops(lambda: lin(x), modules=lin)["by_module"] == {"": LINEAR_FLOPS}
    lin._forward_hooks.clear()
    assert_nothing_left(lin)
