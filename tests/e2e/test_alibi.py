"""ALiBi in the browser: its score biases on the Positional Encodings page, and a Live Training run with it."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import click_radio_option, main_text, metric, open_page, widget
from tests.e2e.conftest import assert_no_exception, save_screenshot, wait_for_app

MAX_LEN, EXTRA = 16, 8  # a short table, so the bias heatmaps stay small
STEPS = 1000  # far more than the test trains: the run is still going when the test looks at it
TRAIN_URL = f"/training?task=reverse&positional=alibi&steps={STEPS}&d_model=32&d_ff=64&batch=32"
FIRST_METRIC = ("(document.querySelector('[data-testid=stMetricValue]')?.textContent ?? '0')"
                ".replace(/,/g, '').split(' ')[0] * 1")  # the Step metric; 0 while a rerun has none


def bias_chart(page, heads: str):
    """The Plotly chart whose panel titles name ALiBi's first and last head."""
    return page.get_by_test_id("stPlotlyChart").filter(has_text=f"ALiBi: {heads}")


def positional_menu(page):
    """The input of Live Training's "Positional encoding" menu (its value is the chosen title)."""
    return widget(page, "stSelectbox", "Positional encoding").first.locator("input[role=combobox]")


def test_positional_page_shows_alibi_in_compare_and_beyond_max_len(page):
    open_page(page, f"/positional?pe.max_len={MAX_LEN}&pe.extra={EXTRA}&pe.section=compare")
    assert "ALiBi leaves the vectors alone" in main_text(page)
    chart = bias_chart(page, "head 1 of 8")
    expect(chart).to_have_count(1)
    expect(chart).to_contain_text("ALiBi: head 8 of 8")
    expect(page.get_by_text(re.compile(r"^ALiBi .*Bias added to the score"))).to_have_count(1)
    chart.scroll_into_view_if_needed()
    save_screenshot(page, "alibi_compare.png")

    click_radio_option(page, "Beyond max_len")
    assert_no_exception(page)
    text = main_text(page)
    assert f"built with max_len={MAX_LEN}, is fed {MAX_LEN + EXTRA} tokens" in text
    assert f"positions past max_len={MAX_LEN} get one too" in text
    expect(bias_chart(page, "head 1 of 8")).to_have_count(1)
    runs = page.get_by_test_id("stDataFrame").filter(has_text=f"runs on {MAX_LEN + EXTRA} tokens")
    expect(runs).to_have_count(1)
    alibi_row = runs.locator("tr").filter(has_text="ALiBi")
    expect(alibi_row).to_contain_text("outputs are finite numbers")  # it runs past max_len
    expect(runs.locator("tr").filter(has_text="sinusoidal")).to_contain_text("was built for max_len")
    runs.scroll_into_view_if_needed()
    save_screenshot(page, "alibi_beyond_max_len.png")


def test_live_training_trains_reverse_with_alibi(page):
    page.goto(TRAIN_URL)
    wait_for_app(page)
    expect(positional_menu(page)).to_have_value("ALiBi")
    expect(metric(page, "Step")).to_have_text(f"0 / {STEPS:,}")
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function(f"() => {FIRST_METRIC} >= 20", timeout=180_000)
    assert_no_exception(page)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    assert_no_exception(page)
    expect(positional_menu(page)).to_have_value("ALiBi")
    save_screenshot(page, "alibi_live_training.png")
