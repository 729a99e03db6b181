"""The Attention Lab ready for a lesson, in the browser, with small GPT-2 and ViT folders on the server: no crash
in any switch-off state, chart toolbars clear of every title, the chart on a projector's first screen, and a
*Find the heads* button that brings its view into sight."""

from __future__ import annotations

import pytest

from tests.e2e.actions import click_button, main_text, open_page
from tests.e2e.conftest import models_env, new_tab, save_screenshot, serve_app, wait_for_app
from tests.pretrained.hf_folders import gpt2_folder, vit_folder

GPT2 = "/attention?attn.source=pretrained&attn.pretrained=tiny-gpt2"
PROJECTOR = {"width": 1024, "height": 768}
MIN_VISIBLE_PX = 200  # the main chart counts as on the first screen when at least this much of it shows
CHARTS = ":is(.js-plotly-plot, [data-testid=stVegaLiteChart]) >> visible=true"  # charts not in a closed expander

# Every title of every chart (Plotly's title and panel titles, Vega-Lite's titles) and every chart toolbar (Plotly's
# modebar, Streamlit's element toolbar) on screen, as boxes; the toolbars show while the pointer is on their chart.
BOXES = """() => { const box = e => { const r = e.getBoundingClientRect();
    return {text: e.textContent, left: r.left, top: r.top, right: r.right, bottom: r.bottom}; };
  const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  return {titles: [...document.querySelectorAll('.gtitle, .annotation-text, .role-title-text text')].filter(shown)
                    .map(box),
          bars: [...document.querySelectorAll('.modebar, [data-testid=stElementToolbar]')].filter(shown)
                  .filter(e => getComputedStyle(e).opacity !== '0').map(box)}; }"""


@pytest.fixture(scope="module")
def lab_app(tmp_path_factory):
    """A server whose models folder holds a tiny GPT-2 and a ViT with 14 × 14 patches (as ViT-B/16)."""
    root = tmp_path_factory.mktemp("models")
    gpt2_folder(root / "tiny-gpt2", layers=2, heads=4, width=16)
    vit_folder(root / "tiny-vit", layers=1, heads=2, image=56, patch=4)
    env = models_env(root, tmp_path_factory.mktemp("hf"))
    with serve_app(env) as base_url:
        yield base_url


@pytest.fixture
def tab(browser, lab_app):
    with new_tab(browser, lab_app) as page:
        yield page


def _head(tab, layer: int, head: int):
    return tab.get_by_test_id("stButtonGroup").filter(has_text=f"Layer {layer}").get_by_role(
        "button", name=f"H{head}", exact=True)


def test_mean_mode_with_the_lens_and_every_head_back_on_keeps_the_page(tab):
    open_page(tab, GPT2 + "&attn.off_mode=mean")
    tab.get_by_text("Logit lens: what would the model say").click()
    wait_for_app(tab)
    _head(tab, 1, 2).click()
    wait_for_app(tab)
    click_button(tab, "Switch every head back on")
    assert not tab.get_by_test_id("stException").count(), main_text(tab)[:500]
    assert "Every head is on" in main_text(tab)
    tab.get_by_text("Find the heads", exact=True).wait_for()


def _overlaps(page) -> list[tuple[dict, dict]]:
    found = page.evaluate(BOXES)
    return [(t, b) for t in found["titles"] for b in found["bars"]
            if t["left"] < b["right"] and b["left"] < t["right"] and t["top"] < b["bottom"] and b["top"] < t["bottom"]]


@pytest.mark.parametrize(("path", "size"), [
    (GPT2 + "&present=true&attn.view=head&attn.text=the+cat+sat+on+the+mat+and+the+dog", PROJECTOR),
    (GPT2 + "&present=true&attn.view=grid", PROJECTOR),
    ("/vit", PROJECTOR),
    ("/vit?present=true", PROJECTOR),
])
def test_chart_toolbars_never_cover_a_title(tab, path, size):
    tab.set_viewport_size(size)
    open_page(tab, path)
    tab.locator(CHARTS).first.wait_for(state="visible")
    charts = tab.locator(CHARTS)
    checked = 0
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.evaluate("e => e.scrollIntoView({block: 'center'})")
        chart.hover(force=True)
        tab.wait_for_timeout(300)
        bad = _overlaps(tab)
        assert not bad, (path, [(t, b) for t, b in bad])
        checked += 1
    assert checked, path


def test_the_projector_first_screen_shows_the_lab_chart(tab):
    tab.set_viewport_size(PROJECTOR)
    open_page(tab, GPT2 + "&present=true&attn.text=the+cat+sat+on+the+mat+and+the+dog+was+tired+of+it+all")
    tab.locator(CHARTS).first.wait_for(state="visible")
    save_screenshot(tab, "attention_lab_projector_gpt2_1024.png")
    top = tab.locator(CHARTS).first.bounding_box()["y"]
    assert top < PROJECTOR["height"] - MIN_VISIBLE_PX, f"the first chart starts at {top:.0f} px, too low"


def test_a_best_head_button_brings_the_one_head_view_into_sight(tab):
    open_page(tab, GPT2)
    button = tab.get_by_role("button", name="Best previous-token head").first
    button.scroll_into_view_if_needed()
    button.click()
    wait_for_app(tab)
    chart = tab.locator(".js-plotly-plot").first  # the One head view, far above the button
    chart.wait_for(state="visible")
    tab.wait_for_timeout(1500)  # the smooth scroll
    box = chart.bounding_box()
    height = tab.viewport_size["height"]
    assert box["y"] < height and box["y"] + box["height"] > 0, box
    assert "is now in the One head view" in tab.get_by_test_id("stToast").inner_text()
