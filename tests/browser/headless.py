"""Headless Chromium for the browser tests (tests/browser) and bench/browser_load.py.

Debian's ``chromium`` and ``chromium-driver`` (tools/install-system-deps.sh browser) driven by selenium.
Chromium calls home on its own (component updates, field trials, safe browsing, ...), so it is started only
inside a network namespace of its own, with no interface but loopback: ``make browser-test`` and ``make bench``
run Python under ``unshare -n``, and :func:`unavailable_reason` refuses to start the browser anywhere else.

Pages are loaded from ``file://`` URLs of files written under build-browser/pages/ (not ``data:`` URLs): that is
how a person opens a saved report, a ``data:`` URL gets an opaque origin and Chromium caps its length at 2 MB
(a 10,000-layer report page is larger), and the saved files stay behind to be opened when a test fails.

Requests are counted from the browser's own network log: ChromeDriver's performance log
(``goog:loggingPrefs``: ``performance: ALL``) carries every DevTools ``Network.requestWillBeSent`` event of the
page's target. A page's only allowed request is its own ``file://`` navigation; any other one (an image, a font,
a stylesheet, a fetch, a ``file://`` sibling, a ``data:`` resource) is reported, also when the page's CSP blocks
it, since the page still tried.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build-browser"  # gitignored: pages/, screenshots/

# The real binary. /usr/bin/chromium is Debian's wrapper script: it adds Google API keys, extension flags
# (/etc/chromium.d) and --enable-remote-extensions, which this harness does not want.
CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

# Flags (see Chromium's "Chrome Flags for Tooling"). Beside them ChromeDriver adds its own defaults
# (--disable-background-networking, --disable-sync, --no-first-run, --password-store=basic, a fresh temporary
# --user-data-dir, ...); the ones that matter are repeated here so the list is complete on its own.
FLAGS = (
    "--headless=new",
    "--no-sandbox",  # the tests run as root; Chromium's sandbox refuses root
    "--disable-gpu",  # no GPU process: software rendering only
    "--disable-dev-shm-usage",  # containers have a small /dev/shm
    "--window-size=1280,1024",
    "--force-device-scale-factor=1",
    "--hide-scrollbars",
    "--lang=en-US",
    # Nothing in the background: no component, extension or safe-browsing updates, no sync, no metrics upload,
    # no pings, no field-trial downloads, no first-run or default-browser UI.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-component-extensions-with-background-pages",
    "--disable-client-side-phishing-detection",
    "--disable-domain-reliability",
    "--disable-breakpad",
    "--metrics-recording-only",  # metrics are recorded in memory, never uploaded
    "--no-pings",
    "--safebrowsing-disable-auto-update",
    "--disable-field-trial-config",
    "--password-store=basic",
    "--mute-audio",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
    "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions,DialMediaRouteProvider",
)

# Installed in every document before its own scripts (JS-enabled driver only): collects CSP violation events.
_CSP_LISTENER = """
window.__torchscanCsp = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__torchscanCsp.push(e.violatedDirective + ' blocked ' + (e.blockedURI || '(inline)')
                             + ' at ' + e.sourceFile + ':' + e.lineNumber);
}, true);
"""


class BrowserUnavailable(RuntimeError):
    """Chromium cannot (or may not) start here; the message says why."""


def unavailable_reason() -> str | None:
    """Why Chromium may not start in this process, or None when it may."""
    interfaces = sorted(name for _, name in socket.if_nameindex())
    if interfaces != ["lo"]:
        return (
            "this process is not in a network namespace of its own (network interfaces: "
            f"{', '.join(interfaces)}); Chromium calls home on its own, so it runs only under `unshare -n` "
            "(make browser-test, make bench)"
        )
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing: install Debian's {package} (sh tools/install-system-deps.sh browser)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -r requirements-dev.txt)"
    return None


class Browser:
    """One headless Chromium (a selenium WebDriver as ``.driver``) and the page checks of the tests."""

    def __init__(self, *, javascript: bool = True) -> None:
        """Starts Chromium; ``javascript=False`` blocks every page script.

        JavaScript is turned off with the content setting ``profile.managed_default_content_settings.javascript:
        2`` (what a person's "Don't allow sites to use JavaScript" does): page scripts never run, while
        WebDriver's own calls (is_displayed, execute_script) still work. Raises BrowserUnavailable when Chromium
        may not or cannot start.
        """
        reason = unavailable_reason()
        if reason is not None:
            raise BrowserUnavailable(reason)
        from selenium import webdriver
        from selenium.common.exceptions import WebDriverException
        from selenium.webdriver.chrome.service import Service

        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM  # with the driver's path given too, selenium-manager never runs
        for flag in FLAGS:
            options.add_argument(flag)
        if not javascript:
            options.add_experimental_option("prefs", {"profile.managed_default_content_settings.javascript": 2})
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        try:
            self.driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
        except WebDriverException as error:
            raise BrowserUnavailable(f"Chromium did not start: {error.msg or error}") from error
        self.javascript = javascript
        if javascript:
            self.driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": _CSP_LISTENER})

    def quit(self) -> None:
        self.driver.quit()

    def open(self, path: Path, settle: float = 0.2) -> PageLoad:
        """Loads ``path`` (file://), waits for its load event plus ``settle`` seconds, reports what it did."""
        self.driver.get_log("performance")  # drop what earlier pages left
        self.driver.get_log("browser")
        page = PageLoad(url=path.resolve().as_uri())
        self.driver.get(page.url)  # returns after the load event (page load strategy "normal")
        time.sleep(settle)  # what a script starts after load (a timer, a fetch) shows up too
        self._drain(page, navigation=True)
        return page

    def more(self, page: PageLoad) -> PageLoad:
        """Adds to ``page`` what it did since it loaded or since the last call (after clicks, key presses)."""
        time.sleep(0.05)
        self._drain(page, navigation=False)
        return page

    def _drain(self, page: PageLoad, navigation: bool) -> None:
        seen_navigation = not navigation
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method") != "Network.requestWillBeSent":
                continue
            params = message["params"]
            url = params["request"]["url"]
            if not seen_navigation and url == page.url and params.get("type") == "Document":
                seen_navigation = True  # the page's own file:// navigation: the one request allowed
                continue
            page.requests.append(url)
        for entry in self.driver.get_log("browser"):
            text = entry.get("message", "")
            if "Content Security Policy" in text or "Refused to" in text:
                page.csp_violations.append(text)
            elif entry.get("level") == "SEVERE":
                page.console_errors.append(text)
        if self.javascript:
            events = self.driver.execute_script(
                "var v = window.__torchscanCsp || []; window.__torchscanCsp = []; return v;"
            )
            page.csp_violations.extend(f"securitypolicyviolation: {e}" for e in events or [])

    def screenshot(self, name: str, max_height: int = 16000) -> Path:
        """A full-page PNG, build-browser/screenshots/NAME.png (at most ``max_height`` CSS pixels tall)."""
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {
            "x": 0,
            "y": 0,
            "width": max(1, size["width"]),
            "height": min(max(1, size["height"]), max_height),
            "scale": 1,
        }
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True, "clip": clip}
        )
        path = ARTIFACTS / "screenshots" / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def axe(self, impacts: tuple[str, ...] = ("serious", "critical")) -> list[dict[str, Any]]:
        """axe-core's violations on the loaded page with one of ``impacts``. axe.min.js (axe-core 3.1.1) ships
        inside axe-selenium-python's wheel and is injected through WebDriver: nothing is fetched, and the page's
        CSP does not apply to it. Needs the JavaScript-enabled browser."""
        from axe_selenium_python import Axe

        axe = Axe(self.driver)
        axe.inject()
        results = axe.run()
        return [v for v in results["violations"] if v.get("impact") in impacts]


@dataclass
class PageLoad:
    """What one page did: while it loaded, and after it (:meth:`Browser.more`)."""

    url: str
    requests: list[str] = field(default_factory=list)  # every request but the page's own navigation
    console_errors: list[str] = field(default_factory=list)  # SEVERE browser-log entries other than CSP ones
    csp_violations: list[str] = field(default_factory=list)  # violation events and CSP messages of the log


def write_page(text: str, name: str, suffix: str = ".html") -> Path:
    """Writes a page to build-browser/pages/NAME.SUFFIX and returns its path."""
    path = ARTIFACTS / "pages" / f"{name}{suffix}"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def assert_quiet(page: PageLoad) -> None:
    """No request but the page's own navigation, no console error, no CSP violation."""
    assert page.requests == [], f"{page.url} issued requests: {page.requests}"
    assert page.console_errors == [], f"{page.url} logged console errors: {page.console_errors}"
    assert page.csp_violations == [], f"{page.url}: CSP violations: {page.csp_violations}"


def describe_axe(violations: list[dict[str, Any]]) -> str:
    """One line per axe violation: rule, impact, help text and the first targets."""
    return "; ".join(
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:5]}" for v in violations
    )
