"""The harness can fail: pages that request, log errors, break their CSP or run scripts are caught.

Without these, "zero requests, zero errors, zero violations" on TorchScan's pages would prove nothing.
"""

from __future__ import annotations

import socket

from headless import ARTIFACTS, assert_quiet

CSP = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"


def _page(body: str, csp: str = CSP) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}"><title>harness</title></head>'
        f"<body><main><h1>harness</h1>{body}</main></body></html>\n"
    )


def test_the_browser_runs_without_a_network(browser):
    # make browser-test runs pytest under `unshare -n`: where a browser started, loopback is the only interface.
    assert sorted(name for _, name in socket.if_nameindex()) == ["lo"]


def test_a_quiet_page_is_quiet(browser, open_page, take_screenshot):
    page = open_page(browser, _page("<p>Nothing to fetch.</p>"))
    assert_quiet(page)
    path = take_screenshot(browser)
    assert path.parent == ARTIFACTS / "screenshots"


def test_requests_are_counted_even_when_csp_blocks_them(browser, open_page):
    page = open_page(browser, _page('<img alt="x" src="http://192.0.2.1/x.png"><img alt="y" src="sibling.png">'))
    assert "http://192.0.2.1/x.png" in page.requests
    assert any(url.endswith("/sibling.png") and url.startswith("file://") for url in page.requests)
    assert page.csp_violations, "CSP default-src 'none' blocks both images"


def test_requests_without_csp_are_counted(browser, open_page):
    page = open_page(browser, _page('<link rel="stylesheet" href="http://192.0.2.1/a.css">', csp="default-src *"))
    assert page.requests == ["http://192.0.2.1/a.css"]
    assert page.csp_violations == []


def test_inline_script_blocked_by_csp_is_a_violation(browser, open_page):
    page = open_page(browser, _page("<script>document.title = 'ran';</script>"))
    assert browser.driver.title == "harness"
    assert any("script" in v for v in page.csp_violations), page.csp_violations
    assert any(v.startswith("securitypolicyviolation: ") for v in page.csp_violations), page.csp_violations


def test_console_errors_are_collected(browser, open_page):
    page = open_page(browser, _page("<script>console.error('boom');</script>", csp="script-src 'unsafe-inline'"))
    assert any("boom" in e for e in page.console_errors), page.console_errors
    assert page.csp_violations == []


def test_late_requests_and_interactions_are_seen(browser, open_page):
    script = (
        "<button id=b>go</button><script>setTimeout(function(){new Image().src='http://192.0.2.1/late.png'},50);"
        "document.getElementById('b').onclick=function(){new Image().src='http://192.0.2.1/click.png'};</script>"
    )
    page = open_page(browser, _page(script, csp="default-src *; script-src 'unsafe-inline'"))
    assert page.requests == ["http://192.0.2.1/late.png"]
    browser.driver.find_element("id", "b").click()
    browser.more(page)
    assert page.requests == ["http://192.0.2.1/late.png", "http://192.0.2.1/click.png"]


def test_javascript_is_off_in_the_nojs_browser(browser_nojs, open_page):
    page = open_page(browser_nojs, _page("<script>document.title = 'ran';</script>", csp="script-src 'unsafe-inline'"))
    assert browser_nojs.driver.title == "harness"
    assert_quiet(page)


def test_axe_finds_serious_violations(browser, open_page):
    # An image without alt text and an unlabeled input are serious/critical in axe-core.
    open_page(browser, _page('<img src="data:,"><input type="text">', csp="default-src 'self' data:"))
    ids = {v["id"] for v in browser.axe()}
    assert {"image-alt", "label"} <= ids, ids
