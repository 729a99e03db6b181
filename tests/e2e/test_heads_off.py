"""Switching heads off in a real browser: on a paused Live Training run, and in the lesson "Which head does the
work?"."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import metric_values
from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app

STEPS = 2000  # far more than the test trains: the run is paused on the way
URL = f"/training?task=reverse&steps={STEPS}&d_model=32&d_ff=64&batch=32"
TRAINED = 150  # steps before Pause: this small model reverses most sequences by then
TRAIN_MS = 400_000  # training and measuring on two busy cores


def pills(page, key: str):
    """The head pills of the row whose widget key is ``key`` (Streamlit writes "." in keys as "-")."""
    return page.locator(f".st-key-{key.replace('.', '-')}").first


def first_metric_at_least(page, value: int) -> None:
    first = "(document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0').replace(/,/g, '')"
    page.wait_for_function(f"() => {first}.split(' ')[0] * 1 >= {value}", timeout=TRAIN_MS)


def test_pause_switch_heads_off_and_the_accuracy_drops(page):
    page.goto(URL)
    wait_for_app(page)
    page.get_by_role("button", name="Start", exact=True).click()
    first_metric_at_least(page, TRAINED)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    expect(page.get_by_text("🔌 Switch heads off")).to_be_visible()
    before = metric_values(page)["Accuracy · all heads on"]
    assert before.endswith("%") and metric_values(page)["Accuracy · 0 heads off"] == "–"

    row = pills(page, "live.heads_off.cross.0")
    for name in ("H1", "H2", "H3", "H4"):  # every cross-attention head of layer 1: the decoder cannot read its input
        row.get_by_role("button", name=name, exact=True).click()
        wait_for_app(page)
    shown = metric_values(page)
    after = shown["Accuracy · 4 heads off"]
    assert float(after.rstrip("%")) < float(before.rstrip("%")) - 10, (before, after)
    assert shown["Accuracy · all heads on"] == before  # the model itself is unchanged
    expect(page.get_by_text(re.compile(r"^4 off: cross L1 H1, cross L1 H2"))).to_be_visible()
    assert re.search(r"off=cross\.1\.1(%2C|,)cross\.1\.2", page.url), page.url  # the link keeps them
    assert_no_exception(page)
    save_screenshot(page, "live_heads_off.png")


def test_the_lesson_from_prediction_to_reveal(page):
    page.goto("/lessons?lesson=importance")
    wait_for_app(page)
    page.get_by_text("It hardly changes: a few points at most").click()
    wait_for_app(page)
    page.get_by_role("button", name=re.compile("^Train the reverse model")).click()
    wait_for_app(page, TRAIN_MS)
    expect(page.get_by_text(re.compile(r"^Trained for 120 steps"))).to_be_visible()

    pills(page, "lessons.importance.off.cross.0").get_by_role("button", name="H2", exact=True).click()
    wait_for_app(page)
    shown = metric_values(page)
    assert shown["Reversed exactly · every head on"] != shown["Reversed exactly · cross L1 H2 off"]

    page.get_by_role("button", name="📊 Measure every head").click()
    wait_for_app(page, TRAIN_MS)
    expect(page.locator(".js-plotly-plot").filter(has_text="Head importance")).to_be_visible()
    expect(page.get_by_text(re.compile("The clearest anti-diagonal is"))).to_be_visible()
    page.get_by_role("button", name="Reveal the answer").click()
    wait_for_app(page)
    expect(page.get_by_text(re.compile("^Right: It hardly changes"))).to_be_visible()
    assert_no_exception(page)
    save_screenshot(page, "lesson_heads_off.png")
