"""A teacher's preparation walk, in the browser: every screen agrees with itself and says what it shows.

Each test follows one complaint of a class rehearsal — a link that trained other settings than the task list, a
head-score map that scored another attention than the one shown, a trained ViT that was sure about a holiday photo,
a positional panel that did not say whose table it showed, a Model Builder that could not reach BERT-base — and
checks what a visitor now sees.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.e2e.actions import choose, click_button, main_text, open_expander, open_page, pick_radio, widget
from tests.e2e.conftest import assert_no_exception, wait_for_app

TRAINING_TIMEOUT_MS = 240_000


def _select_value(page, label: str) -> str:
    return widget(page, "stSelectbox", label).first.locator("input[role=combobox]").input_value()


def _slider_value(page, label: str) -> str:
    return widget(page, "stSlider", label).first.get_by_test_id("stSliderThumbValue").first.inner_text().strip()


def _number_value(page, label: str) -> str:
    return widget(page, "stNumberInput", label).first.locator("input").input_value()


def _training_settings(page) -> dict[str, str]:
    return {"layers": _slider_value(page, "Layers"), "lr": _slider_value(page, "Learning rate"),
            "steps": _number_value(page, "Steps"), "heads": _select_value(page, "Heads")}


def _train_until_step(page, at_least: int) -> None:
    """Press Start, wait until the Step metric reaches ``at_least``, then Pause and wait for the paused page."""
    page.get_by_role("button", name="Start", exact=True).click()
    page.wait_for_function(
        "n => [...document.querySelectorAll('[data-testid=stMetricValue]')].some(m => {"
        "  const s = /^([0-9,]+) \\//.exec(m.textContent); return s && Number(s[1].replace(/,/g, '')) >= n; })",
        arg=at_least, timeout=TRAINING_TIMEOUT_MS)
    page.get_by_role("button", name="Pause", exact=True).click()
    page.get_by_role("button", name="Resume", exact=True).wait_for()
    wait_for_app(page)


def test_a_task_link_trains_the_same_settings_as_the_task_list(page):
    open_page(page, "/training")
    choose(page, "Task", "Shapes (Vision Transformer)")
    from_list = _training_settings(page)
    open_page(page, "/training?task=vit_shapes")
    assert _training_settings(page) == from_list
    assert from_list["layers"] == "3" and from_list["steps"] == "400"  # the task's tuned model, not the page's


def test_the_vit_page_link_opens_the_shapes_task(page):
    open_page(page, "/vit")
    page.get_by_role("link", name=re.compile("Train a ViT on shapes")).first.click()
    wait_for_app(page)
    page.locator("[data-testid=stMain] h1").filter(has_text="Live Training").first.wait_for()
    assert _select_value(page, "Task") == "Shapes (Vision Transformer)"


def test_head_scores_say_which_attention_they_score(page):
    open_page(page, "/training?task=reverse&steps=600")
    _train_until_step(page, 20)
    assert "Cross" in main_text(page)  # the default view: cross-attention, where reverse's pattern lives
    pick_radio(page, "Attention shown", "Encoder self-attention")
    text = main_text(page)
    assert "where this task's pattern lives: choose it above" in text
    assert re.search(r"How anti-diagonal is each head\?.*Encoder", text, re.S) is None


def test_sample_remarks_count_against_the_right_answer(page):
    open_page(page, "/training?task=reverse&steps=600")
    _train_until_step(page, 30)
    for wrong, length in re.findall(r"(\d+) of (\d+) digits? wrong", main_text(page)):
        assert int(wrong) <= int(length)


def test_the_settings_changed_notice_appears_only_while_a_button_can_act_on_it(page):
    open_page(page, "/training?task=reverse&steps=600")  # long enough that Pause always lands while it trains
    choose(page, "Heads", "2")
    assert "settings changed" not in main_text(page).lower()  # nothing has run yet: Start uses them anyway
    _train_until_step(page, 5)
    open_expander(page, "⚙️ Task, model and training")  # folded away once a run has started
    seed = widget(page, "stNumberInput", "Seed").first.locator("input")
    seed.wait_for(state="visible")
    seed.fill("1")
    seed.press("Enter")
    wait_for_app(page)
    assert re.search(r"settings changed.*Reset", main_text(page), re.S | re.I)


def test_a_trained_shapes_vit_is_honest_about_other_pictures_and_the_tables_are_named(page):
    open_page(page, "/training?task=vit_shapes&steps=400")
    _train_until_step(page, 10)
    page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile("ViT Patching")).first.click()
    wait_for_app(page)
    pick_radio(page, "Weights", widget(page, "stRadio", "Weights").first.get_by_test_id(
        "stRadioOption").filter(has_text="Trained").first.inner_text().strip())
    pick_radio(page, "Picture", "Sample")
    expect(page.get_by_test_id("stMain")).to_contain_text("outside what it learned")

    page.get_by_test_id("stSidebarNav").get_by_role("link", name=re.compile("Positional Encodings")).first.click()
    wait_for_app(page)
    page.get_by_test_id("stRadioOption").filter(has_text=re.compile("Compare")).first.click()
    wait_for_app(page)
    assert re.search(r"Learned\*?\*? panels show .*(Shapes|trained)", main_text(page), re.S)
    assert_no_exception(page)


def test_a_preset_reaches_bert_base_in_one_click(page):
    open_page(page, "/builder")
    click_button(page, "BERT-base")
    expect(page.get_by_test_id("stMain")).to_contain_text("109,482,240")


def test_the_vit_family_shows_the_positions_it_really_uses(page):
    open_page(page, "/builder")
    pick_radio(page, "Model family", widget(page, "stRadio", "Model family").first.get_by_test_id(
        "stRadioOption").filter(has_text="ViT").first.inner_text().strip())
    assert "sinusoidal" not in _select_value(page, "Positions").lower()


def test_the_heads_lesson_claims_what_the_model_shows(page):
    open_page(page, "/lessons?lesson=heads")
    text = main_text(page)
    assert "Many heads, one pattern" in text
    assert "same" in text.lower()  # it says the heads end up with the same pattern instead of promising a split
