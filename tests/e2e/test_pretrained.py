"""Pretrained models in the browser: a server whose models folder holds small random-initialised models."""

from __future__ import annotations

import pytest

from tests.e2e.actions import choose, click_radio_option, main_text, open_expander, open_page, pick_radio
from tests.e2e.conftest import models_env, new_tab, save_screenshot, serve_app, wait_for_app
from tests.pretrained.hf_folders import bad_folders, bert_folder, gpt2_folder, mark_special_tokens, vit_folder


@pytest.fixture(scope="module")
def models_root(tmp_path_factory):
    """A models folder with a tiny GPT-2, BERT and ViT and four broken folders; returns (folder, broken folder ->
    a phrase of the reason it is refused)."""
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2")
    bert_folder(root / "tiny-bert")
    mark_special_tokens(root / "tiny-bert")
    vit_folder(root / "tiny-vit")
    return root, bad_folders(root)


@pytest.fixture(scope="module")
def models_app(models_root, tmp_path_factory):
    """An app server whose models folder is ``models_root``."""
    root, _ = models_root
    env = models_env(root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


@pytest.fixture
def tab(browser, models_app):
    """A fresh tab on the server with the models folder."""
    with new_tab(browser, models_app) as page:
        yield page


def test_attention_lab_runs_a_pretrained_gpt2(tab):
    open_page(tab, "/attention")
    pick_radio(tab, "Weights", "Pretrained (GPT-2, Llama, BERT)")
    choose(tab, "Pretrained model", next(o for o in _options(tab) if o.startswith("tiny-gpt2 ")))
    tab.get_by_text("What comes next?").wait_for()
    text = main_text(tab)
    assert "␣" in text  # GPT-2's subword tokens, leading spaces made visible
    assert "Weights of tiny-gpt2 (GPT2LMHeadModel)" in text
    assert "tiny-gpt2's probabilities for the token after" in text
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


def test_positional_page_draws_a_pretrained_gpt2s_learned_positions(tab):
    open_page(tab, "/positional")
    click_radio_option(tab, "Real models")
    choose(tab, "Pretrained model", next(o for o in _options(tab) if o.startswith("tiny-gpt2 ")))
    tab.get_by_text("PC2 against PC1").wait_for()
    text = main_text(tab)
    assert "Showing the learned position table of tiny-gpt2 (GPT2LMHeadModel)" in text
    assert "Its first principal components" in text
    save_screenshot(tab, "pretrained_positions.png")
    assert not tab.get_by_test_id("stException").count()


def test_bad_folders_are_listed_with_their_reasons_and_the_good_models_work(tab, models_root):
    bad = models_root[1]
    open_page(tab, "/attention")
    pick_radio(tab, "Weights", "Pretrained (GPT-2, Llama, BERT)")
    options = _options(tab)
    assert not any(o.split(" ")[0] in bad for o in options)  # broken folders are not in the menu
    open_expander(tab, "More models")
    text = main_text(tab)
    for name, reason in bad.items():
        assert f"Skipped folder {name}: " in text and reason in text.split(f"Skipped folder {name}: ")[1], name
    tab.get_by_text("Skipped folder oversized").scroll_into_view_if_needed()
    save_screenshot(tab, "pretrained_bad_folders.png")
    choose(tab, "Pretrained model", next(o for o in options if o.startswith("tiny-bert ")))
    tab.get_by_text("Fill in the blanks").wait_for()
    assert not tab.get_by_test_id("stException").count()


def test_a_share_link_opens_the_named_model_or_falls_back_with_a_notice(tab):
    open_page(tab, "/attention?attn.source=pretrained&attn.pretrained=tiny-bert&attn.layer=2&attn.view=head")
    tab.get_by_text("Fill in the blanks").wait_for()
    text = main_text(tab)
    assert "Weights of tiny-bert (BertForMaskedLM)" in text and "Layer 2 · head 1" in text
    assert "The link's setting" not in text
    open_page(tab, "/attention?attn.source=pretrained&attn.pretrained=gpt2-xl")
    tab.get_by_text("The link's setting attn.pretrained='gpt2-xl' was changed to").wait_for()
    assert "no GPT-2, Llama-family or BERT model of that name is on this server" in main_text(tab)
    assert not tab.get_by_test_id("stException").count()
