"""The rank facts every report records inside an initialised torch.distributed process group.

Only reads what torch.distributed already knows; nothing is communicated. Outside a process group (or in a
build of PyTorch without torch.distributed) the reports are unchanged.
"""

from __future__ import annotations

import os
import sys
from typing import Any

__all__: list[str] = []

_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _local_rank(rank: int, world_size: int) -> int | None:
    """The launcher's LOCAL_RANK; else rank % LOCAL_WORLD_SIZE; else the rank itself when every rank runs on this
    machine (one process, or a loopback MASTER_ADDR as torch.multiprocessing tests use); else None (unknown)."""
    for name in ("LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        text = os.environ.get(name, "")
        if text.strip().isdigit():
            value = int(text)
            if name == "LOCAL_RANK":
                return value
            if value > 0:
                return rank % value
    if world_size == 1 or os.environ.get("MASTER_ADDR", "") in _LOOPBACK:
        return rank
    return None


def _group_device_type(dist: Any, group: Any) -> str:
    """The device type the group's backend communicates on (gloo: cpu, nccl: cuda): the device its object
    collectives use."""
    try:
        return str(dist.distributed_c10d._get_object_coll_device(group))
    except Exception:  # noqa: BLE001 - a private helper of older releases; fall back to the default device
        try:
            return str(dist.distributed_c10d._get_pg_default_device(group).type)
        except Exception:  # noqa: BLE001
            return "unknown"


def context_fields() -> dict[str, Any]:
    """``{rank, world_size, local_rank, backend, group_device_type}`` of the default process group, or ``{}``
    outside one. torch.distributed is read only when something already imported it."""
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return {}
    rank = dist.get_rank()
    world_size = dist.get_world_size()
    return {
        "rank": rank,
        "world_size": world_size,
        "local_rank": _local_rank(rank, world_size),
        "backend": str(dist.get_backend()),
        "group_device_type": _group_device_type(dist, None),
    }
