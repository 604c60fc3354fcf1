"""Fixtures of the browser tests: two headless Chromiums (JavaScript on and off), page loading with the
network/console/CSP record of :mod:`headless`, screenshots and axe.

Run with ``make browser-test``: it installs Debian's chromium and chromium-driver and runs pytest inside a
network namespace of its own (``unshare -n``, loopback only). Where Chromium may not or cannot start (no
namespace of its own, chromium missing, the browser failing to launch) every test is skipped with the reason;
nothing passes without a browser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest

from headless import Browser, BrowserUnavailable, PageLoad, write_page


def _browser(javascript: bool) -> Iterator[Browser]:
    try:
        browser = Browser(javascript=javascript)
    except BrowserUnavailable as error:
        pytest.skip(f"no browser: {error}")
    try:
        yield browser
    finally:
        browser.quit()


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Headless Chromium with JavaScript on (a CSP violation listener installed in every document)."""
    yield from _browser(javascript=True)


@pytest.fixture(scope="session")
def browser_nojs() -> Iterator[Browser]:
    """Headless Chromium with JavaScript off: page scripts never run (WebDriver's own calls still work)."""
    yield from _browser(javascript=False)


def _name(request: pytest.FixtureRequest) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")


@pytest.fixture
def open_page(request: pytest.FixtureRequest) -> Callable[..., PageLoad]:
    """``open_page(browser, text, suffix=".html", tag="")``: writes ``text`` to
    build-browser/pages/<test name>[-tag]<suffix>, loads it from its file:// URL and returns the PageLoad
    (requests other than the page's own navigation, console errors, CSP violations)."""

    def load(browser: Browser, text: str, suffix: str = ".html", tag: str = "") -> PageLoad:
        name = _name(request) + (f"-{tag}" if tag else "")
        return browser.open(write_page(text, name, suffix))

    return load


@pytest.fixture
def take_screenshot(request: pytest.FixtureRequest) -> Callable[..., object]:
    """``take_screenshot(browser, tag="")``: a full-page PNG of the loaded page,
    build-browser/screenshots/<test name>[-tag].png; asserts it was written and returns its path."""

    def shoot(browser: Browser, tag: str = "") -> object:
        path = browser.screenshot(_name(request) + (f"-{tag}" if tag else ""))
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 1000, f"{path}: not a screenshot"
        return path

    return shoot

