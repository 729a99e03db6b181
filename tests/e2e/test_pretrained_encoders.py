"""Published text encoders in the browser: a sentence-embedding BertModel whose tokenizer.json pads to 128, a
RoBERTa and a DistilBERT without tokenizer.json, in the Attention Lab."""

from __future__ import annotations

import pytest

from tests.app.test_attention_encoders import sentence_models
from tests.e2e.actions import main_text, open_pretrained, widget
from tests.e2e.conftest import assert_no_exception, models_env, new_tab, save_screenshot, serve_app, wait_for_app


@pytest.fixture(scope="module")
def encoders_app(tmp_path_factory):
    """An app server whose models folder holds the three encoders."""
    root = sentence_models(tmp_path_factory.mktemp("models"))
    env = models_env(root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


@pytest.fixture
def tab(browser, encoders_app):
    with new_tab(browser, encoders_app) as page:
        yield page


def _open_model(tab, name: str) -> None:
    open_pretrained(tab, name)


def test_a_sentence_embedding_model_shows_no_padding_and_draws_the_similarity_matrix(tab):
    _open_model(tab, "sentence-bert")
    tab.get_by_text("How alike are these sentences?").wait_for()
    text = main_text(tab)
    assert "[PAD]" not in text and "[CLS]" in text
    assert "Weights of sentence-bert (BertModel)" in text
    chart = tab.get_by_test_id("stPlotlyChart").filter(has_text="Cosine similarity of the lines")
    chart.wait_for()
    chart.scroll_into_view_if_needed()
    assert chart.locator(".hm, .heatmaplayer image").count() > 0  # the cells are drawn
    assert "1. A man is eating food." in chart.inner_text()
    save_screenshot(tab, "pretrained_sentence_similarity.png")
    assert_no_exception(tab)


@pytest.mark.parametrize("name, mask", [("tiny-roberta", "<mask>"), ("tiny-distilbert", "[MASK]")])
def test_roberta_and_distilbert_fill_in_their_mask(tab, name, mask):
    _open_model(tab, name)
    text_box = widget(tab, "stTextInput", "Text").first.locator("input")
    text_box.fill(f"the capital of france is {mask}.")
    text_box.press("Enter")
    wait_for_app(tab)
    tab.get_by_text(f"Best fill-ins for {mask} at position").wait_for()
    assert_no_exception(tab)
