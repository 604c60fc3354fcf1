"""render_report's benchmark pages (contract 4.3) in a real browser: real measure_latency, measure_workload
(with a profile) and compare_benchmarks reports of a small model."""

from __future__ import annotations

import pytest
import torch

from torchscan import compare_benchmarks, measure_latency, measure_workload, profile_workload, render_report

from headless import assert_quiet, describe_axe

FAST = {"min_run_time": 0.01, "warmup": 1}


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)).eval()
    inputs = torch.randn(16, 32)

    def baseline():
        with torch.inference_mode():
            return torch.stack([model(row) for row in inputs])

    def candidate():
        with torch.inference_mode():
            return model(inputs)

    try:
        settings = dict(device="cpu", inputs=inputs, work_units=16, work_unit="samples", **FAST)
        before = measure_latency(baseline, **settings)
        after = measure_latency(candidate, **settings)
        before["profile"] = profile_workload(baseline, device="cpu")
        after["profile"] = profile_workload(candidate, device="cpu")
        comparison = compare_benchmarks(before, after, check=lambda: torch.testing.assert_close(baseline(), candidate()))
        failed = compare_benchmarks(before, after, check=lambda: False)
        workload = measure_workload(
            candidate, device="cpu", inputs=inputs, work_units=16, profile=True, print_summary=False, **FAST
        )
        latency_only = measure_latency(candidate, **settings)
    finally:
        torch.set_num_threads(threads)
    hostile = dict(latency_only)
    hostile["context"] = {**latency_only["context"], "processor": '<img src="http://192.0.2.1/p.png">'}
    return {
        "latency": render_report(latency_only),
        "workload_with_profile": render_report(workload, title="Workload & profile"),
        "comparison": render_report(comparison),
        "comparison_failed_check": render_report(failed),
        "escaped_caller_text": render_report(hostile, title='<script src="http://192.0.2.1/t.js"></script>'),
    }


NAMES = ["latency", "workload_with_profile", "comparison", "comparison_failed_check", "escaped_caller_text"]


@pytest.mark.parametrize("name", NAMES)
def test_page_is_offline_and_clean(pages, name, browser, open_page, take_screenshot):
    page = open_page(browser, pages[name])
    assert_quiet(page)
    driver = browser.driver
    assert driver.find_elements("css selector", "script") == []  # benchmark pages have no script at all
    assert driver.find_element("css selector", "h1").text
    assert driver.find_element("css selector", "main h2").text == "Measured values"
    take_screenshot(browser)


@pytest.mark.parametrize("name", NAMES)
def test_page_has_no_serious_accessibility_violation(pages, name, browser, open_page):
    open_page(browser, pages[name])
    violations = browser.axe()
    assert violations == [], describe_axe(violations)


@pytest.mark.parametrize("name", NAMES)
def test_heading_levels_never_skip(pages, name, browser, open_page):
    # axe's heading-order (impact "moderate"): a single report's page once had an h4 straight under its h2.
    open_page(browser, pages[name])
    levels = [int(h.tag_name[1]) for h in browser.driver.find_elements("css selector", "h1, h2, h3, h4, h5, h6")]
    assert levels[0] == 1
    skips = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    assert skips == [], f"heading levels {levels}"


@pytest.mark.parametrize("name", ["latency", "comparison"])
def test_page_is_usable_without_javascript(pages, name, browser_nojs, open_page):
    page = open_page(browser_nojs, pages[name])
    assert_quiet(page)
    driver = browser_nojs.driver
    # The details blocks open with a click and show what they hold.
    summary = driver.find_element("xpath", "//summary[normalize-space()='Exact values, methods, and diagnostics']")
    table = summary.find_element("xpath", "following-sibling::table")
    assert not table.is_displayed()
    summary.click()
    assert table.is_displayed()
    assert "latency" in table.text


def test_caller_text_stays_text(pages, browser, open_page):
    open_page(browser, pages["escaped_caller_text"])
    driver = browser.driver
    assert driver.find_elements("css selector", "img") == []
    assert driver.find_element("css selector", "h1").text == '<script src="http://192.0.2.1/t.js"></script>'
