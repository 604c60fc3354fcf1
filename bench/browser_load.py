"""Report pages: how long render_report takes, how big the page is, and when Chromium has loaded it.

Rows: AnalysisReports of a real nn.Sequential crawled on the meta device (50 and 10,000 leaf layers: Linear(16, 16)
and ReLU alternating; the report has one more row, the Sequential itself), and a BenchmarkComparison page (two
measure_latency reports with profiles).

Columns: render_report's time (best of a few calls; the Python dict converted to the engine's JSON tree, checked,
laid out and written), the C tool's `torchscan render` of the same report saved as JSON (read, parsed, checked,
rendered), beside them json.loads of the same report's JSON text (a
yardstick: parsing the data the page embeds), the page size, and the page's loadEventEnd in headless Chromium
(``performance.getEntriesByType('navigation')[0].loadEventEnd``, milliseconds from navigation start; best of
three loads from a file:// URL), plus the requests the page issued besides its own navigation (expected 0).

Chromium runs only in a network namespace of its own: ``make bench`` runs this script under ``unshare -n``
where it may; elsewhere the browser column says why it is unavailable and the rest is still measured.
Nothing is asserted.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

from torchscan import compare_benchmarks, crawl_module, measure_latency, profile_workload, render_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "browser"))
from headless import ARTIFACTS, Browser, BrowserUnavailable, write_page  # noqa: E402

TOOL = shutil.which("torchscan", path=os.path.dirname(sys.executable))



def best(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The fastest of ``repeat`` calls (seconds) and the last result."""
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def sequential_report(leaves: int) -> dict:
    with torch.device("meta"):
        layers: list[nn.Module] = []
        while len(layers) < leaves:
            layers.append(nn.Linear(16, 16) if len(layers) % 2 == 0 else nn.ReLU())
        model = nn.Sequential(*layers)
    return crawl_module(model, args=(torch.empty(1, 16, device="meta"),))


def comparison_report() -> dict:
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)).eval()
    inputs = torch.randn(16, 32)

    def baseline():
        with torch.inference_mode():
            return torch.stack([model(row) for row in inputs])

    def candidate():
        with torch.inference_mode():
            return model(inputs)

    try:
        settings = dict(device="cpu", inputs=inputs, work_units=16, min_run_time=0.02, warmup=1)
        before, after = measure_latency(baseline, **settings), measure_latency(candidate, **settings)
        before["profile"] = profile_workload(baseline, device="cpu")
        after["profile"] = profile_workload(candidate, device="cpu")
        return compare_benchmarks(before, after, check=lambda: None)
    finally:
        torch.set_num_threads(threads)


def load_ms(browser: Browser, path: Path) -> tuple[float, int]:
    """Best loadEventEnd of three loads (ms) and the requests of the last one."""
    ends, requests = [], 0
    for _ in range(3):
        page = browser.open(path, settle=0.0)
        ends.append(browser.driver.execute_script("return performance.getEntriesByType('navigation')[0].loadEventEnd"))
        requests = len(page.requests)
    return min(ends), requests


def main() -> None:
    try:
        browser: Browser | None = Browser(javascript=True)
        why = ""
    except BrowserUnavailable as error:
        browser, why = None, f"browser unavailable: {error}"
    cases: list[tuple[str, Callable[[], dict]]] = [
        ("analysis, 50 layers", lambda: sequential_report(50)),
        ("analysis, 10,000 layers", lambda: sequential_report(10_000)),
        ("benchmark comparison", comparison_report),
    ]
    print("== render_report: page size and Chromium load ==")
    try:
        for name, make in cases:
            start = time.perf_counter()
            report = make()
            made = time.perf_counter() - start
            text = json.dumps(report)
            parse, _ = best(lambda: json.loads(text), 3)
            rows = len(report.get("layers", []))
            print(f"\n{name}" + (f" ({rows:,} report rows, crawled in {made:.2f} s)" if rows else ""))
            print(f"  report JSON             {len(text) / 1e6:9.2f} MB")
            print(f"  json.loads              {parse * 1e3:9.1f} ms")
            render, html = best(lambda: render_report(report), 3)
            if rows:
                # the same page from the C tool: the saved file read, parsed (jansson) and rendered
                saved = ARTIFACTS / f"bench-{rows}.json"
                saved.parent.mkdir(parents=True, exist_ok=True)
                saved.write_text(text)
                command = [TOOL, "render", str(saved), "-o", os.devnull]
                tool, _ = best(lambda: subprocess.run(command, check=True), 3)
                print(f"  torchscan render        {tool * 1e3:9.1f} ms   (file -> page in C, JSON parse included)")
            print(f"  render_report           {render * 1e3:9.1f} ms   x{render / parse:.2f} of json.loads")
            print(f"  page                    {len(html.encode()) / 1e6:9.2f} MB")
            if browser is None:
                print(f"  loadEventEnd            {why}")
                continue
            path = write_page(html, "bench-" + name.replace(",", "").replace(" ", "-"))
            end, requests = load_ms(browser, path)
            print(f"  loadEventEnd            {end:9.1f} ms   ({requests} requests besides the navigation)")
    finally:
        if browser is not None:
            browser.quit()


if __name__ == "__main__":
    main()
