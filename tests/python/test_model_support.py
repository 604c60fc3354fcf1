"""docs/model-support.md is what tools/model_support.py writes from a fresh crawl of the test zoo.

The whole zoo is crawled again here (about two seconds once torch and transformers are imported), so the page
cannot keep a row or a reason the code no longer gives. To update the page after a change:
``.venv/bin/python tools/model_support.py``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

import zoo

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("transformers") is None, reason="transformers is not installed (the zoo's HF cases)"
)


@pytest.fixture(scope="module")
def tool():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import model_support
    finally:
        sys.path.pop(0)
    return model_support


@pytest.fixture(scope="module")
def records(tool):
    return tool.crawl_zoo()


def test_the_committed_page_is_a_fresh_run(tool, records):
    committed = (ROOT / "docs" / "model-support.md").read_text(encoding="utf-8")
    assert committed == tool.render(records), "docs/model-support.md is stale: run tools/model_support.py"


def test_every_zoo_case_has_a_row_and_every_partial_total_a_reason(tool, records):
    assert [r["name"] for r in records] == zoo.SUPPORT
    page = tool.render(records)
    for record in records:
        row = next(line for line in page.splitlines() if line.startswith(f"| `{record['name']}` |"))
        partial = any(status != "complete" for status in record["status"].values())
        assert partial == bool(record["diagnostics"]), record["name"]  # never partial without a reason
        assert row.endswith("| - |") != partial
