"""Live Training in projector mode at 1024 × 768, measured in the browser: the first screen shows the curves, which
use the width with axis labels of 16 px or more; the settings sit in a folded panel; the head-score strip of a
paused run keeps its rows apart. The screenshots go to docs/screenshots/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.e2e.actions import metric, open_page
from tests.e2e.conftest import assert_no_exception, wait_for_app

pytestmark = pytest.mark.browser

PROJECTOR = {"width": 1024, "height": 768}
MIN_VISIBLE_PX = 150  # a chart counts as "on the first screen" when at least this much of it shows
DOCS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
URL = "/training?present=true&task=reverse&steps=300&d_model=32&d_ff=64&batch=32&seed=5"


def _charts(page, text: str) -> list[dict]:
    """The boxes of the Vega-Lite charts whose title contains ``text``."""
    return page.locator("[data-testid=stVegaLiteChart]").filter(has_text=text).evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())")


def test_live_training_on_a_projector(page) -> None:
    page.set_viewport_size(PROJECTOR)
    open_page(page, URL)
    expect(page.get_by_role("button", name="⚙️ Settings")).to_be_visible()  # the settings, folded
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function("() => ((document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                           ".replace(/,/g, '').split(' ')[0] * 1) >= 150", timeout=400_000)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    expect(metric(page, "Step")).to_have_text(re.compile(r"^\d+ / 300"))
    page.get_by_test_id("stMain").evaluate("main => main.scrollTo(0, 0)")
    page.mouse.move(1000, 700)  # no button's tooltip over the picture
    page.wait_for_timeout(500)
    DOCS.mkdir(exist_ok=True)
    page.screenshot(path=str(DOCS / "live_training_projector_1024.png"))

    loss = _charts(page, "Loss")
    assert loss and loss[0]["top"] < PROJECTOR["height"] - MIN_VISIBLE_PX, loss  # the main chart, first screen
    assert loss[0]["width"] >= 420, loss  # half the projector's width each, not a third
    curves = page.locator("[data-testid=stVegaLiteChart]").filter(has_text=re.compile("Loss|held-out|Best head"))
    sizes = curves.locator(".role-axis-label text").evaluate_all(
        "els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert sizes and min(sizes) >= 16, sizes

    strip = page.locator("[data-testid=stVegaLiteChart]").filter(has_text="How anti-diagonal").first
    strip.scroll_into_view_if_needed()
    rows = strip.locator(".role-axis-label text").filter(has_text=re.compile(r"^layer \d$")).evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().toJSON())")
    assert len(rows) == 2, rows
    first, second = sorted(rows, key=lambda r: r["top"])
    assert second["top"] - first["top"] >= 30 and first["bottom"] <= second["top"], rows  # never overprinted
    page.screenshot(path=str(DOCS / "live_training_projector_paused_1024.png"))
    page.get_by_role("button", name="⚙️ Settings").click()  # the settings open in place
    expect(page.get_by_text("Task", exact=True).first).to_be_visible()
    assert_no_exception(page)
