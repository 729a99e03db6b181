"""Every page in a real browser: it opens, its main controls work, no exception appears; two screenshots each.

Each page is saved at 1400 × 1000 (screenshots/<page>.png) and, in projector mode, at 1024 × 768
(screenshots/<page>_projector_1024.png). The folder is git-ignored; both sets are copied to docs/screenshots/.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import (
    alerts,
    choose,
    click_button,
    click_radio_option,
    main_text,
    metric,
    metric_values,
    nudge_slider,
    open_page,
    pick_radio,
    projector_screenshot,
    radio_options,
    readme_screenshot,
)
from tests.e2e.conftest import assert_no_exception, wait_for_app

LIVE_STEPS = 100  # enough for the reverse task's cross-attention to turn into an anti-diagonal


def test_home(page):
    open_page(page, "/")
    assert "Transformer Explorer" in page.locator("[data-testid=stMain] h1").first.inner_text()
    for title in ("Attention Lab", "Positional Encodings", "ViT Patching", "Model Builder", "Live Training"):
        expect(page.get_by_test_id("stMain").get_by_text(title, exact=True).first).to_be_visible()
    assert_no_exception(page)
    readme_screenshot(page, "home.png")
    projector_screenshot(page, "home_projector_1024.png")
    page.get_by_test_id("stMain").get_by_role("link", name=re.compile("Open the Attention Lab")).click()
    page.wait_for_url(re.compile(r"/attention"))
    wait_for_app(page)
    expect(page.locator("[data-testid=stMain] h1").first).to_contain_text("Attention Lab")
    assert_no_exception(page)


def test_lessons(page):
    open_page(page, "/lessons")
    pick_radio(page, "Your prediction", "Almost none")
    click_button(page, "Reveal the answer")
    assert any("Almost none" in a or "Right" in a for a in alerts(page)), alerts(page)
    assert_no_exception(page)
    readme_screenshot(page, "lessons.png")
    page.get_by_test_id("stButtonGroup").get_by_role("radio", name=re.compile("Causal masks")).click()
    wait_for_app(page)
    expect(page.locator("[data-testid=stMain] h2").first).to_contain_text("Causal masks")
    assert_no_exception(page)
    projector_screenshot(page, "lessons_projector_1024.png")


def test_attention_lab(page):
    open_page(page, "/attention")
    assert radio_options(page, "Head") == ["1", "2"]
    choose(page, "Heads", "4")
    assert radio_options(page, "Head") == ["1", "2", "3", "4"]  # one choice per head
    pick_radio(page, "Mask", "Causal")
    text = page.get_by_test_id("stTextInput").locator("input")
    text.fill("attention is all you need")
    text.press("Enter")
    wait_for_app(page)
    assert "Tokens (5)" in main_text(page)
    click_radio_option(page, "All layers × heads")
    assert_no_exception(page)
    click_radio_option(page, "Step by step")
    readme_screenshot(page, "attention_lab.png")
    projector_screenshot(page, "attention_lab_projector_1024.png")


def test_positional_encodings(page):
    open_page(page, "/positional")
    nudge_slider(page, "max_len", -8)
    for section in ("Relative positions", "Beyond max_len", "Compare encodings", "Shuffle test", "The table"):
        click_radio_option(page, section)
        assert_no_exception(page)
    readme_screenshot(page, "positional_encodings.png")
    projector_screenshot(page, "positional_encodings_projector_1024.png")


def test_vit_patching(page):
    open_page(page, "/vit")
    before = metric_values(page)["Patches N = (H/P)·(W/P)"]
    nudge_slider(page, "Patch size P (pixels)", 1)
    after = metric_values(page)["Patches N = (H/P)·(W/P)"]
    assert before != after, "the patch count must follow the patch size"
    choose(page, "Sample", "smiley")
    pick_radio(page, "Head", "2")
    assert_no_exception(page)
    nudge_slider(page, "Patch size P (pixels)", -1)
    readme_screenshot(page, "vit_patching.png")
    projector_screenshot(page, "vit_patching_projector_1024.png")


def test_model_builder(page):
    open_page(page, "/builder")
    params = metric_values(page)["Parameters"]
    for family in ("Decoder-only (GPT-like)", "Encoder–decoder (2017 Transformer)", "Vision Transformer (ViT)",
                   "Encoder-only (BERT-like)"):
        pick_radio(page, "Model family", family)
        assert_no_exception(page)
    layers = page.get_by_test_id("stNumberInput").filter(has_text="Layers").locator("input")
    layers.fill("12")
    layers.press("Enter")
    wait_for_app(page)
    assert metric_values(page)["Parameters"] != params
    assert_no_exception(page)
    readme_screenshot(page, "model_builder.png")
    projector_screenshot(page, "model_builder_projector_1024.png")


def test_live_training(page):
    open_page(page, f"/training?steps={LIVE_STEPS}")
    assert metric(page, "Step").inner_text().startswith("0 /")
    page.get_by_role("button", name="Start").click()
    done = re.compile(rf"^{LIVE_STEPS} / {LIVE_STEPS}$")
    expect(metric(page, "Step")).to_have_text(done, timeout=240_000)
    wait_for_app(page)
    assert_no_exception(page)
    buttons = page.get_by_role("button", name="Start").locator("xpath=ancestor::*[@data-testid='stHorizontalBlock'][1]")
    readme_screenshot(page, "live_training.png", start=buttons)
    projector_screenshot(page, "live_training_projector_1024.png")
