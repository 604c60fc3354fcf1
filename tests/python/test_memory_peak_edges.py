"""measure.c: the peak of CPU allocations read from a profiler event tree (``_engine.memory_peak``) (extb).

torchscan.process.memory passes ``profile.profiler.kineto_results.experimental_event_tree()`` and the
Allocation tag; here trees are built by hand, so each peak is a sum by hand: allocations (positive sizes) and
frees (negative) in recording order, the peak being the highest running total. An event missing a field is the
call's AttributeError; a peak past int64 is refused.
"""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from torchscan import _engine

ALLOC = "Allocation"


def alloc(ptr, size, t, device="cpu", **drop):
    fields = {"device": NS(type=device), "ptr": ptr, "alloc_size": size}
    node = {"tag": ALLOC, "extra_fields": NS(**fields), "start_time_ns": t, "children": []}
    for name in drop.get("without", ()):
        if name in node:
            del node[name]
        else:
            delattr(node["extra_fields"], name)
    if "device_without_type" in drop:
        node["extra_fields"].device = NS()
    return NS(**node)


def op(*children):
    return NS(tag="Op", children=list(children))


def test_many_events_in_order():
    # 300 allocations of 10 bytes (the event buffer grows past 256), then all freed, then one of 5 bytes:
    # the peak is 3000
    events = [alloc(i, 10, i) for i in range(300)] + [alloc(i, -10, 300 + i) for i in range(300)]
    events.append(alloc(1000, 5, 700))
    assert _engine.memory_peak([op(*events[:150]), op(*events[150:])], ALLOC) == 3000


def test_devices_other_than_the_cpu_and_device_types_that_are_not_text():
    tree = [op(alloc(1, 64, 1), alloc(2, 1000, 2, device="cuda"), alloc(3, 500, 3, device=7))]
    assert _engine.memory_peak(tree, ALLOC) == 64


@pytest.mark.parametrize(
    "missing,name",
    [
        ({"without": ["extra_fields"]}, "extra_fields"),
        ({"without": ["ptr"]}, "ptr"),
        ({"without": ["alloc_size"]}, "alloc_size"),
        ({"without": ["start_time_ns"]}, "start_time_ns"),
        ({"without": ["device"]}, "device"),
        ({"device_without_type": True}, "type"),
    ],
    ids=["extra_fields", "ptr", "alloc_size", "start_time_ns", "device", "device.type"],
)
def test_an_event_missing_a_field(missing, name):
    with pytest.raises(AttributeError, match=name):
        _engine.memory_peak([op(alloc(1, 8, 1), alloc(2, 8, 2, **missing))], ALLOC)


def test_a_tag_that_cannot_be_compared():
    class Tag:
        def __eq__(self, other):
            raise RuntimeError("tag not comparable")

    with pytest.raises(RuntimeError, match="tag not comparable"):
        _engine.memory_peak([NS(tag=Tag(), children=[])], ALLOC)


def test_a_peak_past_int64_is_refused():
    tree = [alloc(1, 2**62, 1), alloc(2, 2**62, 2)]  # 2**63 in all
    with pytest.raises(OverflowError, match="memory peak overflows"):
        _engine.memory_peak(tree, ALLOC)
    assert _engine.memory_peak(tree[:1], ALLOC) == 2**62


def test_arguments():
    with pytest.raises(TypeError, match=r"memory_peak\(\) takes exactly 2 arguments \(1 given\)"):
        _engine.memory_peak([])
