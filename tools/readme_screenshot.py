#!/usr/bin/env python3
"""The README's picture of a rendered report: docs/images/report.png.

Renders the demo CNN's AnalysisReport (the model `make run` analyses) with
render_report, opens it in headless Chromium, selects the largest tile of
the module cost map with the keyboard (so the inspector shows a module), and
takes a screenshot of the top of the page. Chromium runs only inside a
network namespace of its own:

    make readme-screenshot
    # = unshare -n sh -c 'ip link set lo up && .venv/bin/python tools/readme_screenshot.py'
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "browser"))

from headless import Browser, write_page  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402

from torchscan import crawl_module, render_report  # noqa: E402
from torchscan._demo import DemoCNN  # noqa: E402

OUT = ROOT / "docs" / "images" / "report.png"


def main() -> int:
    torch.manual_seed(0)
    page = render_report(crawl_module(DemoCNN().eval(), (3, 32, 32)), title="DemoCNN (make run)")
    browser = Browser(javascript=True)
    try:
        browser.open(write_page(page, "readme"))
        tiles = browser.driver.find_elements(By.CSS_SELECTOR, "#panel-module_flops .cost-map a.tile")
        widest = max(tiles, key=lambda tile: tile.find_element(By.TAG_NAME, "rect").size["width"] * (tile != tiles[0]))
        widest.send_keys(Keys.ENTER)
        shot = browser.screenshot("readme", max_height=900)
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_bytes(shot.read_bytes())
    finally:
        browser.quit()
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
