"""The Model Builder's comparison with famous models fits the window: nothing is cut off on the right, and the
famous models' buttons show their whole names beside the sidebar."""

from __future__ import annotations

import pytest

from tests.e2e.actions import click_button, open_page
from tests.e2e.conftest import assert_no_exception
from ui.builder.controls import PRESET_LABELS


@pytest.mark.parametrize("width", [1400, 1024])
def test_comparison_table_fits(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, "/builder")
    click_button(page, "GPT-2 small")  # the widest numbers
    table = page.get_by_test_id("stTable").first
    table.scroll_into_view_if_needed()
    box, main = table.bounding_box(), page.get_by_test_id("stMain").bounding_box()
    assert box["x"] + box["width"] <= main["x"] + main["width"], (box, main)
    overflow = table.evaluate("t => [...t.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1 "
                              "&& getComputedStyle(e).overflowX !== 'visible')")
    assert not overflow, "the table scrolls sideways"
    text = table.inner_text()
    assert "ViT-B/16" in text and "Training memory" in text and "124,439,808" in text
    page.screenshot(path=f"/tmp/builder_table_test_{width}.png")
    assert_no_exception(page)


@pytest.mark.parametrize("width", [1400, 1024])
def test_the_famous_models_buttons_show_their_whole_names(page, width):
    page.set_viewport_size({"width": width, "height": 900})
    open_page(page, "/builder")
    assert page.get_by_test_id("stSidebar").bounding_box()["width"] > 200  # open: the controls' column is narrow
    cut = page.evaluate(
        """names => [...document.querySelectorAll('[data-testid=stMain] button')]
            .filter(b => b.offsetParent !== null && names.includes(b.innerText.trim()))
            .map(b => [b.innerText.trim(),
                       [b, ...b.querySelectorAll('*')].some(e => e.scrollWidth > e.clientWidth + 1)])""",
        list(PRESET_LABELS.values()),
    )
    assert {name for name, _ in cut} == set(PRESET_LABELS.values())
    assert not [name for name, short in cut if short], cut
