"""The Attention Lab in the browser with a random-initialised local Llama-family model: its tokens and next-token
table, the K/V groups of the all-heads grid, a K/V head switched off with its whole group; screenshots for the
guide."""

from __future__ import annotations

import pytest

from tests.e2e.actions import click_radio_option, main_text, open_pretrained, readme_screenshot
from tests.e2e.conftest import assert_no_exception, models_env, new_tab, serve_app, wait_for_app
from tests.pretrained.hf_folders import llama_folder


@pytest.fixture(scope="module")
def llama_app(tmp_path_factory):
    """A server whose models folder holds a tiny Llama (6 query heads, 2 K/V heads; large weights, so its
    attention and predictions are far from flat)."""
    root = tmp_path_factory.mktemp("models")
    llama_folder(root / "tiny-llama", layers=2, heads=6, kv_heads=2, width=48, positions=64, tied=True)
    env = models_env(root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


def test_the_lab_shows_a_llama_models_shared_kv_heads_and_switches_a_group_off(browser, llama_app):
    with new_tab(browser, llama_app) as tab:
        open_pretrained(tab, "tiny-llama")
        click_radio_option(tab, "All layers × heads")
        wait_for_app(tab)
        tab.get_by_text("What comes next?", exact=True).wait_for()
        text = main_text(tab)
        assert "6 query heads sharing 2 K/V heads" in text and "K/V 1 → H1–H3; K/V 2 → H4–H6" in text
        assert_no_exception(tab)
        readme_screenshot(tab, "attention_lab_llama.png", start=tab.get_by_text("Weights of", exact=False).first)
        row = tab.get_by_test_id("stButtonGroup").filter(has_text="L1 K/V")
        row.get_by_role("button", name="KV2", exact=True).click()
        wait_for_app(tab)
        text = main_text(tab)
        assert "K/V heads off: L1 K/V 2 (H4–H6)" in text and "Switched off: L1 H4, L1 H5, L1 H6" in text
        assert_no_exception(tab)
        readme_screenshot(tab, "kv_heads_llama.png", start=tab.get_by_text("Switch heads off", exact=True))
