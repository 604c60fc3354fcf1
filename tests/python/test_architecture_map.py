"""docs/architecture.md's "Where to find what" map stays true: every path it names exists, and every source
file of the repository is named there (a new file without a place in the map fails this test)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MAPPED = ("src/", "include/", "python/torchscan/", "tools/", "bench/")


def _map_section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    start = text.index("## Where to find what")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _named_paths() -> set[str]:
    # Backticked repository paths: a known top-level folder or a file of the repository's root.
    tokens = re.findall(r"`([^`\s]+)`", _map_section())
    return {t for t in tokens if "/" in t or (ROOT / t).is_file()}


def _source_files() -> set[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", *MAPPED],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout.split()
    return {path for path in listed if (ROOT / path).is_file()}


def test_every_named_path_exists():
    missing = sorted(p for p in _named_paths() if not (ROOT / p).exists())
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_every_source_file_is_named():
    unnamed = sorted(_source_files() - _named_paths())
    assert unnamed == [], f"files with no place in docs/architecture.md's map: {unnamed}"


def test_the_map_is_not_vacuous():
    # The two checks above mean something only if both sets are large.
    assert len(_source_files()) > 100
    assert {"src/core/session.c", "src/ext/convert.c", "python/torchscan/crawler.py"} <= _named_paths()
