"""Live Training in a real browser: Start, the Step metric advances, the heatmaps change (a picture while training,
the interactive chart once paused), Pause holds, and the time-lapse slider scrubs back to the untrained model."""

from __future__ import annotations

import io
import re

import numpy as np
from PIL import Image
from playwright.sync_api import expect

from tests.e2e.actions import metric
from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app

STEPS = 1000  # far more than the test trains: the run must still be going when Pause is clicked
URL = f"/training?task=reverse&steps={STEPS}&d_model=32&d_ff=64&batch=32"  # a small model: quick on two cores
FIRST_METRIC = ("(document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                ".replace(/,/g, '').split(' ')[0] * 1")  # 0 while a rerun briefly has no metric


def step_shown(page) -> int:
    return int(metric(page, "Step").inner_text().split("/")[0].replace(",", ""))


def heading(page):
    return page.get_by_text(re.compile(r"^Cross-attention \(decoder reads the encoder\) · step \d+$")).first


def lane(page):
    """The column of the first configuration's heatmaps."""
    return page.get_by_test_id("stColumn").filter(has=heading(page))


def heatmap_pixels(page) -> np.ndarray:
    """The heatmaps as the visitor sees them: an (H, W, 3) picture of the chart."""
    chart = lane(page).get_by_test_id("stVegaLiteChart").first
    chart.locator("canvas, svg").first.wait_for()
    png = chart.screenshot(animations="disabled")
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=float)


def difference(a: np.ndarray, b: np.ndarray) -> float:
    """Mean absolute colour difference of two pictures (cropped to the common size)."""
    h, w = min(a.shape[0], b.shape[0]), min(a.shape[1], b.shape[1])
    return float(np.abs(a[:h, :w] - b[:h, :w]).mean())


def test_start_watch_pause_and_scrub(page):
    page.goto(URL)
    wait_for_app(page)
    expect(metric(page, "Step")).to_have_text(f"0 / {STEPS:,}")
    expect(heading(page)).to_have_text(re.compile(r"step 0$"))
    untrained = heatmap_pixels(page)

    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function(f"() => {FIRST_METRIC} >= 40", timeout=180_000)  # Step is the first metric
    expect(heading(page)).to_have_text(re.compile(r"step [1-9]\d*$"))  # the heatmaps follow training
    expect(lane(page).locator("[data-testid=stHtml] [role=img] img").first).to_be_visible()  # pictures while training
    expect(lane(page).get_by_test_id("stVegaLiteChart")).to_have_count(0)

    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    paused_at = step_shown(page)
    expect(lane(page).get_by_test_id("stVegaLiteChart")).to_have_count(1)  # the chart, with hover, once paused
    expect(lane(page).locator("[data-testid=stHtml] [role=img]")).to_have_count(0)
    page.wait_for_timeout(1500)
    assert step_shown(page) == paused_at, "training went on after Pause"
    assert 40 <= paused_at < STEPS
    trained = heatmap_pixels(page)
    chart = lane(page).get_by_test_id("stVegaLiteChart").first
    box = chart.bounding_box()
    page.mouse.move(box["x"] + 0.2 * box["width"], box["y"] + 0.25 * box["height"])  # a cell of layer 1, head 1
    expect(page.locator("#vg-tooltip-element")).to_contain_text("weight")  # hover gives the exact value
    assert difference(trained, untrained) > 1.0, "the heatmaps did not change while training"

    slider = page.get_by_test_id("stSlider").filter(has_text="Time-lapse").locator("input[type=range]").first
    slider.focus()
    slider.press("Home")  # back to the first snapshot: the untrained model
    wait_for_app(page)
    expect(heading(page)).to_have_text(re.compile(r"step 0$"))
    scrubbed = heatmap_pixels(page)
    assert difference(scrubbed, untrained) < 0.2 * difference(trained, untrained), \
        "step 0 of the time-lapse should show the untrained attention again"
    expect(metric(page, "Step")).to_have_text(f"{paused_at:,} / {STEPS:,}")
    assert_no_exception(page)
    save_screenshot(page, "live_training_paused.png")
