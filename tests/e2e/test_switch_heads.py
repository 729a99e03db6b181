"""Switching heads off in the browser: a tiny GPT-2's next token changes, and its logit lens opens."""

from __future__ import annotations

import re

import pytest
import torch

from tests.e2e.actions import main_text, open_pretrained, readme_screenshot
from tests.e2e.conftest import SCREENSHOT_DIR, models_env, new_tab, serve_app, wait_for_app
from tests.pretrained.hf_folders import gpt2_folder

SUMMARY = re.compile(r"Next token after “[^”]+”: top “[^”]+” ([\d.]+)% → “[^”]+” ([\d.]+)%")


@pytest.fixture(scope="module")
def gpt2_app(tmp_path_factory):
    """A server whose models folder holds a tiny GPT-2 with large weights, so its predictions are not flat."""
    root = tmp_path_factory.mktemp("models")
    hf = gpt2_folder(root / "tiny-gpt2", layers=2, heads=4, width=16)
    with torch.no_grad():
        for p in hf.parameters():
            if p.dim() == 2:
                p.mul_(25.0)
    hf.save_pretrained(root / "tiny-gpt2")
    env = models_env(root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


def _head(tab, layer: int, head: int):
    """The button of one head in the row of its layer."""
    row = tab.get_by_test_id("stButtonGroup").filter(has_text=f"Layer {layer}")
    return row.get_by_role("button", name=f"H{head}", exact=True)


def test_switching_a_head_off_changes_the_next_token_and_the_lens_opens(browser, gpt2_app):
    with new_tab(browser, gpt2_app) as tab:
        open_pretrained(tab, "tiny-gpt2")
        tab.get_by_text("Switch heads off", exact=True).wait_for()
        assert "Every head is on" in main_text(tab)
        _head(tab, 2, 1).click()
        wait_for_app(tab)
        _head(tab, 1, 3).click()
        wait_for_app(tab)
        text = main_text(tab)
        assert "Switched off: L1 H3, L2 H1" in text
        before, after = (float(x) for x in SUMMARY.search(text).groups())
        assert before != after  # the prediction changed
        assert "attn.off=1.3%2C2.1" in tab.url or "attn.off=1.3,2.1" in tab.url
        readme_screenshot(tab, "switch_heads_gpt2.png", start=tab.get_by_text("Switch heads off", exact=True))
        tab.get_by_text("Logit lens: what would the model say").click()
        wait_for_app(tab)
        tab.get_by_text("Logit lens: the likeliest next token after each layer").wait_for()
        assert "The last row is the model's own prediction" in main_text(tab)
        chart = tab.get_by_test_id("stPlotlyChart").filter(has_text="Logit lens: the likeliest").first
        chart.scroll_into_view_if_needed()
        chart.screenshot(path=str(SCREENSHOT_DIR / "logit_lens_gpt2.png"))
