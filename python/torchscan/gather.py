"""Every rank's report, gathered on one rank of a torch.distributed process group (``gather_reports``).

TorchScan moves the reports through the process group's own key-value store (the one init_process_group made),
as JSON text; it builds no transport of its own, and no collective of the backend carries them (a gloo worker
thread that still holds a gathered tensor when the interpreter exits aborts it; the store's client runs on the
calling thread). The checks and the statistics are C (``_engine.gather_shape``, ``gather_check``,
``gather_reports``).
"""

from __future__ import annotations

import json
import math
import numbers
from datetime import timedelta
from typing import Any, TypedDict

from . import _engine

__all__ = ["GatheredReport", "gather_reports"]

# The store keys of one call: <prefix>/<call number>/<rank in the group> for the handshake and
# <prefix>/<call number>/report/<rank in the group> for the reports. Every rank of a group numbers its calls the
# same way, so the keys of one call are the same on every rank. Counted per group and per store: a group made
# again (a new store) starts again from 0 on every rank.
_PREFIX = "torchscan.gather_reports"
_CALLS: dict[tuple[str, int], int] = {}


class GatheredReport(TypedDict, total=False):
    """The reports of every rank of a group, and for each metric its per-rank values, min, median, max (each
    with its rank) and sum (see docs/report-schema.md, GatheredReport)."""

    schema_version: int
    context: dict[str, Any]
    reports: list[dict[str, Any]]
    totals: dict[str, Any]
    operator_flops: dict[str, Any]
    layers: list[dict[str, Any]]


def _seconds(timeout: object) -> timedelta:
    """``timeout`` (seconds, or a timedelta) as a positive finite timedelta."""
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, numbers.Real) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise TypeError(f"timeout must be None, a number of seconds or a datetime.timedelta, got {type(timeout).__name__}.")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"timeout must be positive and finite, got {timeout!r}.")
    return timedelta(seconds=seconds)


def _group_timeout(dist: Any, group: Any, store: Any) -> timedelta:
    """The group's own timeout: its backend's, else its store's, else torch.distributed's default."""
    try:
        device = dist.distributed_c10d._get_object_coll_device(group)
        return group._get_backend(__import__("torch").device(device)).options._timeout  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001 - private in older releases; fall back to the store's timeout
        pass
    try:
        return store.timeout  # type: ignore[no-any-return]
    except Exception:  # noqa: BLE001
        return dist.constants.default_pg_timeout  # type: ignore[no-any-return]


def _store(dist: Any, group: Any) -> Any:
    """The key-value store the group's ranks share (the one init_process_group made)."""
    c10d = dist.distributed_c10d
    if hasattr(c10d, "_get_process_group_store"):
        return c10d._get_process_group_store(group)
    return c10d._world.pg_map[group][1]


def _status(report: object, dst: object, ranks: list[int], timeout: object) -> tuple[dict[str, Any], str | None]:
    """What this rank posts before the reports travel (its report's shape and dst, or why it cannot take part),
    and its report as JSON text (None when it cannot take part)."""
    try:
        if timeout is not None:
            _seconds(timeout)
        if not isinstance(dst, int) or isinstance(dst, bool):
            raise TypeError(f"dst must be an int (a global rank), got {type(dst).__name__}.")
        if dst not in ranks:
            raise ValueError(f"dst must be the global rank of a member of the group, one of {ranks}; got {dst}.")
        shape = _engine.gather_shape(report)
        return {"dst": dst, "ok": shape}, json.dumps(report)
    except Exception as error:  # noqa: BLE001 - every rank raises it after the handshake
        return {"error": {"type": type(error).__name__, "message": str(error)}}, None


def _wait(store: Any, keys: list[str], ranks: list[int], wait: timedelta, what: str) -> None:
    """Waits for ``keys`` (one per rank of ``ranks``); TimeoutError naming the ranks whose key never came."""
    try:
        store.wait(keys, wait)
    except Exception:
        missing = [rank for rank, key in zip(ranks, keys) if not store.check([key])]
        if not missing:
            raise
        raise TimeoutError(
            f"gather_reports: rank(s) {', '.join(map(str, missing))} of the group did not {what} "
            f"within {wait.total_seconds():g} s (timeout)."
        ) from None


def _get(store: Any, keys: list[str]) -> list[bytes]:
    multi_get = getattr(store, "multi_get", None)
    return list(multi_get(keys)) if multi_get is not None else [store.get(key) for key in keys]


def gather_reports(
    report: object,
    *,
    dst: int = 0,
    group: Any = None,
    timeout: float | timedelta | None = None,
) -> GatheredReport | None:
    """Gather the same kind of report from every rank of a torch.distributed group on rank ``dst``.

    Every rank of ``group`` calls it with its own report (an AnalysisReport of
    :func:`crawl_module`, a FlopReport of :func:`measure_flops`, or a
    BenchmarkReport of :func:`measure_latency` / :func:`measure_workload`).
    First the ranks meet through the group's store and check, before any
    report travels, that every rank gave a valid report of the same shape
    (the same model's layer calls, the same inputs' metadata, the same
    metrics) and the same ``dst``; then the reports go to ``dst`` as JSON
    text through the group's store. On ``dst`` the engine computes,
    for every metric (totals, operator FLOPs per operator, collectives'
    bytes, each layer call's metrics), the per-rank values, the min, the
    median (the lower middle value for an even count), the max, the rank
    of each, and the sum over the ranks (none for seconds and rates):
    the slowest rank's latency is the max's rank.

    Args:
        report: this rank's report.
        dst: the global rank that receives the gathered report (default 0),
            as ``torch.distributed.gather_object`` takes it.
        group: the process group (default: the default group).
        timeout: how long to wait for the other ranks to call
            ``gather_reports``, in seconds or as a ``datetime.timedelta``
            (default: the group's own timeout).

    Returns:
        on ``dst``, the :class:`GatheredReport`; on every other rank, None.

    Raises:
        RuntimeError: no initialised process group, or this rank is not in
            ``group`` (raised at once, on this rank only).
        ValueError, TypeError: the same error on every rank when any rank
            passed a report that cannot be gathered, a bad ``dst`` or
            ``timeout``, or when the ranks' reports disagree in shape
            (different models, different inputs) or their ``dst``
            disagree; the message names the first such rank.
        TimeoutError: on every rank that called it, when some rank did not
            call ``gather_reports`` within the timeout; the message names
            the missing ranks (on ``dst`` also when a rank that agreed
            never posted its report).
    """
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise RuntimeError(
            "gather_reports needs an initialised torch.distributed process group: call "
            "torch.distributed.init_process_group first (torchrun sets up the environment it reads)."
        )
    pg = dist.group.WORLD if group is None else group
    me = dist.get_rank(pg)
    if me < 0:
        raise RuntimeError("gather_reports: this rank is not a member of `group`.")
    ranks = dist.get_process_group_ranks(pg)
    store = _store(dist, pg)
    status, text = _status(report, dst, ranks, timeout)
    wait = _seconds(timeout) if timeout is not None and "ok" in status else _group_timeout(dist, pg, store)

    try:
        name = str(dist.distributed_c10d._get_process_group_name(pg))
    except Exception:  # noqa: BLE001 - older releases: the group's own name
        name = str(getattr(pg, "group_name", ""))
    counter = (name, id(store))
    call = _CALLS.get(counter, 0)
    _CALLS[counter] = call + 1
    keys = [f"{_PREFIX}/{call}/{position}" for position in range(len(ranks))]
    store.set(keys[me], json.dumps(status))
    _wait(store, keys, ranks, wait, "call gather_reports")
    if call > 0:
        # every rank has finished the previous call (it posted this call's key after it): its key is spent
        try:
            store.delete_key(f"{_PREFIX}/{call - 1}/{me}")
        except Exception:  # noqa: BLE001 - a store without delete_key keeps a few bytes per call
            pass
    verdict = _engine.gather_check(_get(store, keys), ranks)
    if verdict is not None:
        kind, message = verdict
        raise {"TypeError": TypeError, "ValueError": ValueError}.get(kind, RuntimeError)(message)

    # every rank agreed: each posts its report's text, and dst reads the others' and takes them off the store
    reports = [f"{_PREFIX}/{call}/report/{position}" for position in range(len(ranks))]
    if dist.get_rank() != dst:
        store.set(reports[me], text)
        return None
    others = [position for position in range(len(ranks)) if position != me]
    _wait(store, [reports[p] for p in others], [ranks[p] for p in others], wait, "post its report")
    gathered: list[Any] = [report] * len(ranks)
    for position, posted in zip(others, _get(store, [reports[p] for p in others])):
        gathered[position] = json.loads(posted)
        try:
            store.delete_key(reports[position])
        except Exception:  # noqa: BLE001 - a store without delete_key keeps the text
            pass
    result: GatheredReport = _engine.gather_reports(gathered, ranks)
    # the reports as received (dst's own as given): the engine read them, and they are attached, not copied
    return {"schema_version": result.pop("schema_version"), "context": result.pop("context"), "reports": gathered,
            **result}
