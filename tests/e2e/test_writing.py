"""*Watch it write* in the browser: a random-initialised local GPT-2 and Llama-family model each write 20 tokens in
the Attention Lab, the heatmap gains 20 rows, and Stop stops a long writing early."""

from __future__ import annotations

import re

import pytest
import torch

from tests.e2e.actions import open_pretrained, pick_radio, widget
from tests.e2e.conftest import SCREENSHOT_DIR, models_env, new_tab, serve_app, wait_for_app
from tests.pretrained.hf_folders import gpt2_folder, llama_folder

NEW_TOKENS = 20
PROMPT = "the cat sat on the mat"
# The heatmap's rows, read from the Plotly chart whose y axis names the steps.
ROWS_JS = """() => {
  for (const gd of document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot')) {
    const title = gd.layout && gd.layout.yaxis && gd.layout.yaxis.title && gd.layout.yaxis.title.text;
    if (!title || !title.startsWith('step:')) continue;
    const z = gd.data[0].z;  // a list of rows, or Plotly's binary form {dtype, bdata, shape}
    if (Array.isArray(z)) return z.length;
    if (z && z.shape) return Number(String(z.shape).split(',')[0]);
    return gd.calcdata[0][0].z.length;
  }
  return 0;
}"""


def _greedy_without_end(hf, tokenizer_ids: list[int], steps: int) -> bool:
    """Whether greedy writing from the prompt goes ``steps`` tokens without the end-of-text token (id 0)."""
    ids = list(tokenizer_ids)
    with torch.no_grad():
        for _ in range(steps):
            ids.append(int(hf(torch.tensor([ids])).logits[0, -1].argmax()))
    return 0 not in ids[len(tokenizer_ids):]


@pytest.fixture(scope="module")
def models_root(tmp_path_factory):
    """A models folder with a small GPT-2 and a small Llama (grouped K/V heads) whose greedy writings from PROMPT
    run past 64 tokens (so that only Stop ends a long one)."""
    from transformer_core.pretrained import TextTokenizer

    root = tmp_path_factory.mktemp("models")
    makers = {"tiny-gpt2": lambda path, seed: gpt2_folder(path, layers=2, heads=4, width=32, positions=128, seed=seed),
              "tiny-llama": lambda path, seed: llama_folder(path, layers=2, heads=4, kv_heads=2, width=32,
                                                            positions=128, seed=seed)}
    for name, make in makers.items():
        for seed in range(20):
            hf = make(root / name, seed)
            ids = TextTokenizer.from_folder(root / name).encode(PROMPT).ids
            if _greedy_without_end(hf, ids, 64):
                break
        else:
            pytest.fail(f"no seed of {name} writes 64 tokens without the end token")
    return root


@pytest.fixture(scope="module")
def models_app(models_root, tmp_path_factory):
    env = models_env(models_root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


@pytest.fixture
def tab(browser, models_app):
    with new_tab(browser, models_app) as page:
        yield page


def _open_writer(tab, model: str) -> None:
    open_pretrained(tab, model)
    tab.get_by_text("Watch it write").scroll_into_view_if_needed()


def _new_tokens(tab) -> int:
    return int(widget(tab, "stSlider", "New tokens").first.get_by_test_id("stSliderThumbValue").first.inner_text())


def _most_new_tokens(tab) -> None:
    """Move the New tokens slider to its end (64)."""
    thumb = widget(tab, "stSlider", "New tokens").first.locator("input[type=range]").first
    thumb.focus()
    thumb.press("End")
    wait_for_app(tab)


def _status(tab) -> str:
    return tab.get_by_text(re.compile(r"^\d+ of at most \d+ new tokens")).first.inner_text().strip()


def _twenty_rows(tab) -> None:
    assert _new_tokens(tab) == NEW_TOKENS  # the default
    tab.get_by_test_id("stMain").get_by_role("button", name="Write", exact=True).click()
    wait_for_app(tab)
    assert tab.evaluate(ROWS_JS) == NEW_TOKENS
    assert _status(tab).startswith(f"{NEW_TOKENS} of at most {NEW_TOKENS} new tokens")
    assert not tab.get_by_test_id("stException").count()


def _stop_stops_it(tab) -> None:
    _most_new_tokens(tab)
    assert _new_tokens(tab) == 64
    tab.get_by_test_id("stMain").get_by_role("button", name="Write", exact=True).click()
    stop = tab.get_by_test_id("stMain").get_by_role("button", name="Stop")
    tab.wait_for_function(f"({ROWS_JS})() >= 3", timeout=30_000)
    stop.click()
    wait_for_app(tab)
    rows = tab.evaluate(ROWS_JS)
    assert 3 <= rows < 64, rows
    assert _status(tab).endswith("stopped") and _status(tab).startswith(f"{rows} of at most 64")
    write = tab.get_by_test_id("stMain").get_by_role("button", name="Write", exact=True)
    assert stop.is_disabled() and write.is_enabled()
    assert not tab.get_by_test_id("stException").count()


def test_gpt2_writes_twenty_rows_and_stop_stops_it(tab):
    _open_writer(tab, "tiny-gpt2")
    _twenty_rows(tab)
    _stop_stops_it(tab)


def test_a_llama_family_model_writes_twenty_rows_and_stop_stops_it(tab):
    _open_writer(tab, "tiny-llama")
    _twenty_rows(tab)
    pick_radio(tab, "Choosing the next token", "Sample")  # a sampled text, for the guide's picture
    tab.get_by_test_id("stMain").get_by_role("button", name="Write", exact=True).click()
    wait_for_app(tab)
    tab.set_viewport_size({"width": 1280, "height": 1250})
    tab.get_by_text("Watch it write").evaluate("element => element.scrollIntoView({block: 'start'})")
    wait_for_app(tab)
    SCREENSHOT_DIR.mkdir(exist_ok=True)
    tab.screenshot(path=str(SCREENSHOT_DIR / "generation.png"))
    pick_radio(tab, "Choosing the next token", "Greedy")
    _stop_stops_it(tab)
