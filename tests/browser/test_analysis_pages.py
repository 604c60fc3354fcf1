"""render_report's AnalysisReport pages (contract 1.13, 4.1, 4.2) in a real browser.

What they expect of the page, beside the contract's words (the renderer must match these selectors):

- view radios ``input[type=radio]#view-<metric>`` for the five metrics, one radio group, with
  ``label[for="view-<metric>"]``; the ``metric=`` argument's radio is checked when the page opens;
- one panel per view, ``.metric-panel[data-metric="<metric>"]``, shown by CSS alone
  (``#view-<metric>:checked ~ .metric-panel...``): with JavaScript off, exactly the checked view's panel is displayed;
- map tiles: focusable elements ``.cost-map [tabindex]`` inside the displayed panel (``.cost-map`` on the map's
  ``<svg>`` or a wrapper around it); with JavaScript on, Enter on a focused tile selects it and updates the
  displayed ``.inspector``; ArrowDown/ArrowRight move focus to another tile (child, next sibling) and
  ArrowUp/ArrowLeft bring it back (parent, previous sibling);
- the JSON data island ``script#torchscan-data[type="application/json"]`` and one enhancement script: exactly
  two ``<script>`` elements, and the CSP lets that one script run (no violation);
- the SVG (``format="svg"``): no ``script``, ``image`` or ``foreignObject`` element; root ``<svg role="img">``.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
import torch
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

from torchscan import compare_reports, crawl_module, render_report
from torchscan._demo import DemoCNN, DemoTextModel

from headless import assert_quiet, describe_axe

METRICS = ("module_flops", "macs", "dmas", "parameters", "parameter_bytes")

# Selectors the renderer must match (see the module docstring).
RADIO = "input[type=radio]#view-{metric}"
LABEL = 'label[for="view-{metric}"]'
PANEL = '.metric-panel[data-metric="{metric}"]'
ALL_PANELS = ".metric-panel"
TILES = ".cost-map [tabindex]"  # must match the renderer's focusable map tiles
INSPECTOR = ".inspector"
DATA_ISLAND = 'script#torchscan-data[type="application/json"]'


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    torch.manual_seed(0)
    cnn = crawl_module(DemoCNN(), (3, 32, 32))
    ids = torch.randint(0, 100, (2, 12))
    mask = torch.ones(2, 12, dtype=torch.bool)
    mask[1, 8:] = False
    text = crawl_module(DemoTextModel(), args=(ids,), kwargs={"attention_mask": mask})
    wider = crawl_module(DemoCNN(classes=12), (3, 32, 32))
    compare_reports(cnn, wider)  # the pair is comparable
    return {"cnn": cnn, "text_model": text, "cnn_wider": wider}


@pytest.fixture(scope="module")
def html_pages(reports) -> dict[str, str]:
    return {
        "cnn": render_report(reports["cnn"], title="DemoCNN"),
        "text_model": render_report(reports["text_model"], title="DemoTextModel (kwargs)"),
        "cnn_before_after": render_report(reports["cnn_wider"], before=reports["cnn"], title="DemoCNN: 10 -> 12"),
    }


@pytest.fixture(scope="module")
def svg_pages(reports) -> dict[str, str]:
    return {
        "cnn": render_report(reports["cnn"], format="svg", title="DemoCNN"),
        "text_model": render_report(reports["text_model"], format="svg", title="DemoTextModel", metric="macs"),
    }


HTML = ["cnn", "text_model", "cnn_before_after"]
MODELS = ["cnn", "text_model"]


def _displayed(driver, selector: str, within=None):
    return [e for e in (within or driver).find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


def _shown_panels(driver) -> list[str]:
    return [p.get_attribute("data-metric") for p in _displayed(driver, ALL_PANELS)]


# ---------------------------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", HTML)
def test_html_is_offline_and_its_csp_blocks_nothing(html_pages, reports, name, browser, open_page, take_screenshot):
    page = open_page(browser, html_pages[name])
    assert_quiet(page)  # zero requests, zero console errors, zero CSP violations (the script's hash matches)
    driver = browser.driver
    scripts = driver.find_elements(By.CSS_SELECTOR, "script")
    islands = driver.find_elements(By.CSS_SELECTOR, DATA_ISLAND)
    assert len(scripts) == 2 and len(islands) == 1, [s.get_attribute("outerHTML")[:120] for s in scripts]
    data = json.loads(driver.execute_script("return arguments[0].textContent", islands[0]))
    report = reports["cnn_wider" if name == "cnn_before_after" else name]
    assert [(r["path"], r["call_index"]) for r in data["report"]["layers"]] == [
        (r["path"], r["call_index"]) for r in report["layers"]
    ]
    csp = driver.find_element(By.CSS_SELECTOR, 'meta[http-equiv="Content-Security-Policy"]').get_attribute("content")
    assert "script-src 'sha256-" in csp and "default-src 'none'" in csp
    take_screenshot(browser)


@pytest.mark.parametrize("name", HTML)
def test_html_has_no_serious_accessibility_violation(html_pages, name, browser, open_page):
    open_page(browser, html_pages[name])
    violations = browser.axe()
    assert violations == [], describe_axe(violations)


@pytest.mark.parametrize("name", MODELS)
def test_views_switch_with_javascript_off(html_pages, name, browser_nojs, open_page, take_screenshot):
    page = open_page(browser_nojs, html_pages[name])
    assert_quiet(page)
    driver = browser_nojs.driver
    radios = [driver.find_element(By.CSS_SELECTOR, RADIO.format(metric=m)) for m in METRICS]
    assert len({r.get_attribute("name") for r in radios}) == 1, "the five views are one radio group"
    assert radios[0].is_selected(), "metric='module_flops' (the default) opens its view"
    assert _shown_panels(driver) == ["module_flops"]
    for metric, radio in zip(METRICS, radios):
        driver.find_element(By.CSS_SELECTOR, LABEL.format(metric=metric)).click()
        assert radio.is_selected(), metric
        assert _shown_panels(driver) == [metric], f"after choosing {metric}"
        assert driver.find_element(By.CSS_SELECTOR, PANEL.format(metric=metric)).is_displayed()
    take_screenshot(browser_nojs, tag="parameter_bytes")
    assert_quiet(browser_nojs.more(page))


def test_metric_argument_chooses_the_open_view(reports, html_pages, browser_nojs, open_page):
    page = open_page(browser_nojs, render_report(reports["cnn"], metric="macs"))
    assert_quiet(page)
    assert browser_nojs.driver.find_element(By.CSS_SELECTOR, RADIO.format(metric="macs")).is_selected()
    assert _shown_panels(browser_nojs.driver) == ["macs"]


@pytest.mark.parametrize("name", MODELS)
def test_cost_map_keyboard(html_pages, name, browser, open_page):
    page = open_page(browser, html_pages[name])
    driver = browser.driver
    (panel,) = _displayed(driver, ALL_PANELS)
    tiles = _displayed(driver, TILES, within=panel)
    assert len(tiles) >= 2, f"no focusable tiles ({TILES}) in the open panel"
    inspectors = _displayed(driver, INSPECTOR, within=panel) or _displayed(driver, INSPECTOR)
    assert inspectors, f"no displayed {INSPECTOR}"
    inspector = inspectors[0]
    keys = ActionChains(driver)

    def active():
        return driver.switch_to.active_element

    def is_tile(element) -> bool:
        return driver.execute_script(f"return arguments[0].matches({TILES!r})", element)

    first = tiles[0]
    driver.execute_script("arguments[0].focus()", first)
    assert active() == first
    keys.send_keys(Keys.ENTER).perform()
    selected_first = inspector.text
    assert selected_first.strip(), "Enter on a tile fills the inspector"

    # Down (first child) or Right (next sibling) moves focus to another tile; Up or Left brings it back.
    for forward, back in ((Keys.ARROW_DOWN, Keys.ARROW_UP), (Keys.ARROW_RIGHT, Keys.ARROW_LEFT)):
        keys.send_keys(forward).perform()
        if active() != first:
            break
    else:
        pytest.fail("neither ArrowDown nor ArrowRight moved focus from the first tile")
    moved = active()
    assert is_tile(moved), moved.get_attribute("outerHTML")[:200]
    keys.send_keys(Keys.ENTER).perform()
    assert inspector.text != selected_first, "Enter on another tile updates the inspector"
    keys.send_keys(back).perform()
    assert active() == first

    # From the moved-to tile (a child of the first, or its sibling), the other axis moves too.
    driver.execute_script("arguments[0].focus()", moved)
    for key in (Keys.ARROW_RIGHT, Keys.ARROW_LEFT, Keys.ARROW_DOWN, Keys.ARROW_UP):
        keys.send_keys(key).perform()
        assert is_tile(active()), f"focus left the map after {key!r}"
    assert_quiet(browser.more(page))  # interaction fetches nothing and logs no error


# ---------------------------------------------------------------------------------------------------------------
# SVG
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_svg_opened_directly(svg_pages, name, browser, open_page, take_screenshot):
    text = svg_pages[name]
    root = ET.fromstring(text)
    assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("role") == "img"
    page = open_page(browser, text, suffix=".svg")
    assert_quiet(page)
    driver = browser.driver
    assert driver.execute_script("return document.documentElement.localName") == "svg"
    for element in ("script", "image", "foreignObject"):
        found = driver.execute_script(f"return document.getElementsByTagNameNS('*', {element!r}).length")
        assert found == 0, f"{found} <{element}> elements"
    take_screenshot(browser)
