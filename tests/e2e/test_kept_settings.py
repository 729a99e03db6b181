"""Settings live for the whole session: type a sentence and pick heads in the Attention Lab, upload a photo on the
ViT page, train a few steps on Live Training, come back through the menu, and everything is still there."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import choose, metric, open_page, pick_radio, widget
from tests.e2e.conftest import assert_no_exception, wait_for_app
from tests.hardening.bad_files import good_png

SENTENCE = "my dog reads every book"
PHOTO = "holiday.png"


def _go(page, title: str) -> None:
    """Follow the sidebar's menu link to ``title``: the same session, as a visitor moves between pages."""
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile(re.escape(title))).first.click()
    wait_for_app(page)
    page.locator("[data-testid=stMain] h1").filter(has_text=title).first.wait_for()


def _train_a_few_steps(page) -> None:
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stMetricValue]')]"
                           ".some(m => /^[1-9][0-9,]* \\//.test(m.textContent))", timeout=180_000)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)
    expect(metric(page, "Step")).to_have_text(re.compile(r"^[1-9]"))


def _lab_settings(page) -> tuple[str, str]:
    text = widget(page, "stTextInput", "Text").first.locator("input").input_value()
    heads = widget(page, "stSelectbox", "Heads").first.locator("input[role=combobox]").input_value()
    return text, heads


def test_sentence_heads_and_photo_survive_a_training_visit(page):
    open_page(page, "/attention")
    box = widget(page, "stTextInput", "Text").first.locator("input")
    box.fill(SENTENCE)
    box.press("Enter")
    wait_for_app(page)
    choose(page, "Heads", "4")
    assert _lab_settings(page) == (SENTENCE, "4")

    _go(page, "ViT Patching")
    pick_radio(page, "Picture", "Upload your own")
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(
        files=[{"name": PHOTO, "mimeType": "image/png", "buffer": good_png()}])
    expect(page.get_by_test_id("stImageCaption").first).to_contain_text(PHOTO)
    wait_for_app(page)

    _go(page, "Live Training")
    _train_a_few_steps(page)

    _go(page, "Attention Lab")
    assert _lab_settings(page) == (SENTENCE, "4")
    assert "0·my" in page.get_by_test_id("stMain").inner_text()
    _go(page, "ViT Patching")
    expect(page.get_by_test_id("stImageCaption").first).to_contain_text(PHOTO)
    assert_no_exception(page)
