"""`torchscan render` of a checkpoint report: the storage map (an icicle of module prefixes, each as wide as its
bytes), byte for byte against tests/golden/checkpoint.{svg,html} (rendered from the committed seed
tests/fuzz/checkpoints/safetensors/small.safetensors; regenerate both with the two commands in
test_golden_pages' message when the picture changes on purpose)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import html5lib
import pytest
import torch
from safetensors.torch import save_file

ROOT = Path(__file__).resolve().parents[2]
TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))
SEED = ROOT / "tests" / "fuzz" / "checkpoints" / "safetensors" / "small.safetensors"


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    assert TOOL is not None
    return subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=60, check=False)


def test_golden_pages(tmp_path):
    report = tmp_path / "small.json"
    assert tool("inspect", "--json", str(SEED), "-o", str(report)).returncode == 0
    svg = tool("render", str(report), "--format", "svg")
    html = tool("render", str(report), "--title", "small.safetensors")
    assert svg.returncode == 0 and html.returncode == 0, svg.stderr + html.stderr
    message = ("regenerate: torchscan inspect --json SEED -o s.json; torchscan render s.json --format svg -o "
               "tests/golden/checkpoint.svg; torchscan render s.json --title small.safetensors -o "
               "tests/golden/checkpoint.html")
    assert svg.stdout == (ROOT / "tests" / "golden" / "checkpoint.svg").read_text(), message
    assert html.stdout == (ROOT / "tests" / "golden" / "checkpoint.html").read_text(), message


def test_widths_are_bytes(tmp_path):
    sd = {f"model.layers.{i}.w": torch.zeros(4 * (i + 1)) for i in range(5)}
    sd["lm_head.weight"] = torch.zeros(40, dtype=torch.bfloat16)
    path = tmp_path / "m.safetensors"
    save_file(sd, str(path))
    report = tmp_path / "m.json"
    assert tool("inspect", "--json", str(path), "-o", str(report)).returncode == 0
    svg = tool("render", str(report), "--format", "svg", "--title", "<&>").stdout
    root = ET.fromstring(svg)  # well-formed XML, the title escaped
    ns = {"s": "http://www.w3.org/2000/svg"}
    assert root.find("s:title", ns).text == "<&>"
    widths = {}
    for g in root.findall("s:g", ns):
        path_ = g.find("s:title", ns).text.split(":")[0]
        widths[path_] = float(g.find("s:rect", ns).get("width"))
    total = sum(4 * 4 * (i + 1) for i in range(5)) + 80
    for i in range(5):
        assert widths[f"model.layers.{i}"] == pytest.approx(960 * 16 * (i + 1) / total, abs=0.01)
    assert widths["lm_head"] == pytest.approx(960 * 80 / total, abs=0.01)
    assert widths["model"] + widths["lm_head"] == pytest.approx(960, abs=0.02)
    page = tool("render", str(report)).stdout
    html5lib.HTMLParser(strict=True).parse(page)
    assert "<script" not in page and "default-src 'none'" in page and re.search(r"<svg ", page)


def test_render_refuses_what_a_checkpoint_has_not(tmp_path):
    report = tmp_path / "s.json"
    assert tool("inspect", "--json", str(SEED), "-o", str(report)).returncode == 0
    assert tool("render", str(report), "--metric", "macs").returncode == 2
    assert tool("render", str(report), "--format", "png").returncode == 2
