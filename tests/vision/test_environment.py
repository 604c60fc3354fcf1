"""The vision environment is the one requirements-vision.txt pins, with this clone's torchscan."""

from __future__ import annotations

import re
from pathlib import Path

import timm
import torch
import torchvision

import torchscan
from conftest import REPO


def pins() -> dict[str, str]:
    text = (REPO / "requirements-vision.txt").read_text()
    return dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", text, flags=re.M))


def test_pinned_versions_are_installed() -> None:
    p = pins()
    # a CUDA wheel reports 2.14.1+cu130: the pin is the public version
    assert torch.__version__.split("+")[0] == p["torch"]
    assert torchvision.__version__.split("+")[0] == p["torchvision"]
    assert timm.__version__ == p["timm"]


def test_torchscan_is_this_clones_build() -> None:
    # installed into the clone's .venv-vision, not into the shared cache
    installed = Path(torchscan.__file__).resolve()
    assert (REPO / ".venv-vision").resolve() in installed.parents
    assert (REPO / ".venv-vision" / "cache").resolve() not in installed.parents
