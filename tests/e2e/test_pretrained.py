"""Pretrained models in the browser: a server whose models folder holds small random-initialised models."""

from __future__ import annotations

import pytest

from tests.e2e.actions import choose, main_text, open_page, pick_radio
from tests.e2e.conftest import new_tab, save_screenshot, serve_app, wait_for_app
from tests.pretrained.hf_folders import bad_folders, bert_folder, gpt2_folder, mark_special_tokens, vit_folder


@pytest.fixture(scope="module")
def models_app(tmp_path_factory):
    """An app server whose models folder holds a tiny GPT-2, BERT and ViT and four broken folders."""
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2")
    bert_folder(root / "tiny-bert")
    mark_special_tokens(root / "tiny-bert")
    vit_folder(root / "tiny-vit")
    bad_folders(root)
    env = {"TE_MODELS_DIR": str(root), "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path_factory.mktemp("hf"))}
    with serve_app(env) as base_url:
        yield base_url


@pytest.fixture
def tab(browser, models_app):
    """A fresh tab on the server with the models folder."""
    with new_tab(browser, models_app) as page:
        yield page


def test_attention_lab_runs_a_pretrained_gpt2(tab):
    open_page(tab, "/attention")
    pick_radio(tab, "Weights", "Pretrained (GPT-2, BERT)")
    choose(tab, "Pretrained model", next(o for o in _options(tab) if o.startswith("tiny-gpt2 ")))
    tab.get_by_text("What comes next?").wait_for()
    text = main_text(tab)
    assert "␣" in text  # GPT-2's subword tokens, leading spaces made visible
    assert "Weights of tiny-gpt2 (GPT2LMHeadModel)" in text
    assert "GPT-2's probabilities for the token after" in text
    tab.get_by_test_id("stDataFrame").last.wait_for(state="visible")  # the next-token table (drawn on a canvas)
    tab.get_by_text("What comes next?").scroll_into_view_if_needed()
    save_screenshot(tab, "pretrained_gpt2.png")
    tab.get_by_text("Find the heads").scroll_into_view_if_needed()
    assert "Best induction head: layer" in main_text(tab)
    save_screenshot(tab, "pretrained_find_heads.png")
    assert not tab.get_by_test_id("stException").count()


def _options(tab) -> list[str]:
    menu = tab.get_by_test_id("stSelectbox").filter(has_text="Pretrained model").first
    menu.click()
    options = [o.inner_text() for o in tab.get_by_role("option").all()]
    tab.keyboard.press("Escape")
    wait_for_app(tab)
    return options


def test_vit_page_labels_the_picture_with_a_pretrained_vit(tab):
    open_page(tab, "/vit")
    tab.get_by_text("5 · A pretrained ViT on this picture").wait_for()
    tab.get_by_text("Top 5 labels").wait_for()
    text = main_text(tab)
    assert "tiny-vit (ViTForImageClassification)" in text
    assert "as the model sees it" in text
    tab.get_by_text("Top 5 labels").scroll_into_view_if_needed()
    save_screenshot(tab, "pretrained_vit.png")
