"""Shared helpers of the vision suite (make vision-test), run in .venv-vision (torch, torchvision and timm
as pinned in requirements-vision.txt) against the installed torchscan.

The oracle helpers are tests/python/conftest.py's, loaded from that file (it is not a package) so that
both suites compare with FlopCounterMode the same way.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "torchscan_python_suite_helpers", Path(__file__).resolve().parents[1] / "python" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
_helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_helpers)

FLOPCOUNTER_OPS = _helpers.FLOPCOUNTER_OPS
flopcounter_counts = _helpers.flopcounter_counts
assert_flopcounter_parity = _helpers.assert_flopcounter_parity

REPO = Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption(
        "--run-slow", action="store_true", default=False, help="also run the tests marked slow (large fixed inputs)"
    )


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: a model whose fixed input size makes it slow; runs with --run-slow")


def pytest_collection_modifyitems(config, items):
    if config.getoption("--run-slow"):
        return
    skip = __import__("pytest").mark.skip(reason="slow: run with --run-slow (make vision-test VISION_ARGS=--run-slow)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
