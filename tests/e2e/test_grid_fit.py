"""The live heatmaps' grid shrinks as a whole to a column narrower than it was laid out for (a 1024-pixel page with
the sidebar open leaves about 680 of the 940 pixels), and a chart's cell numbers shrink to their cells: measured in
Chromium (the first without an app server)."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.render.grid_image import FIT_STEP, GridLayout, grid_html, tick_labels
from tests.e2e.actions import open_page
from ui.common import charts

GRID = "[role=img]"


def _grid(width_px: int) -> str:
    lay = GridLayout(layers=2, heads=4, panel_w=200, panel_h=200, rows=tick_labels(None, 8), cols=tick_labels(None, 8),
                     font=12, scale="Viridis", zmin=0.0, zmax=1.0)
    assert lay.width > 900
    return f'<div id="column" style="width:{width_px}px">{grid_html(np.full((2, 4, 8, 8), 1 / 8), lay)}</div>'


@pytest.mark.parametrize("column", [2000, 680, 400])
def test_the_grid_fits_its_column_and_shrinks_no_more_than_one_step(browser, column) -> None:
    tab = browser.new_page(viewport={"width": 2100, "height": 900})
    try:
        tab.set_content(_grid(column))
        shown = tab.locator(GRID).bounding_box()
        laid_out = float(tab.locator(GRID).evaluate("grid => grid.offsetWidth"))  # before the zoom
        images = tab.locator(f"{GRID} img").evaluate_all("imgs => imgs.map(i => i.getBoundingClientRect().width)")
    finally:
        tab.close()
    assert shown["width"] <= column + 0.5
    assert shown["width"] >= min(laid_out, column) * FIT_STEP - 1  # the largest step that fits
    assert max(images[:8]) == pytest.approx(200 * shown["width"] / laid_out, rel=0.02)  # pictures and text alike


WIDTHS = """() => {
  const column = document.querySelector('[data-testid=stMainBlockContainer] [data-testid=stVerticalBlock]');
  const right = column.getBoundingClientRect().right;
  return {charts: Array.from(document.querySelectorAll('[data-testid=stVegaLiteChart]'),
                             e => [e.getBoundingClientRect().right - right, e.scrollWidth - e.clientWidth]),
          cut: Array.from(document.querySelectorAll('[data-testid=stMetricValue] div, [data-testid=stMetricLabel] p'))
                  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent),
          choices: Array.from(document.querySelectorAll('[data-testid=stSelectbox] input'))
                     .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.value)}; }"""


def test_at_1024_with_the_sidebar_open_charts_figures_and_choices_fit_the_column(page) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, "/training?steps=3000&compare=1")
    shown = page.evaluate(WIDTHS)
    assert shown["charts"] and all(over <= 1 for over, _scroll in shown["charts"]), shown  # none past the column
    # the two configurations' heatmaps one under the other, each whole (side by side they scrolled their last
    # heads out of sight)
    assert all(scroll <= 1 for _over, scroll in shown["charts"]), shown
    heatmaps = page.locator(".st-key-wrap1-live-heatmaps [data-testid=stVegaLiteChart]")
    first, second = (heatmaps.nth(i).bounding_box() for i in range(2))
    assert second["y"] >= first["y"] + first["height"] - 1
    assert shown["cut"] == []
    assert shown["choices"] == []  # the settings' six columns go three to a row rather than show "sinusoi"


CELL_TEXTS = """() => Array.from(document.querySelectorAll('.heatmap-label text'), t => {
  const box = t.getBoundingClientRect();
  return [Math.round(box.top), box.left, box.right, parseFloat(t.style.fontSize)]; })"""


@pytest.mark.parametrize("width", [340, 900])
def test_cell_numbers_shrink_to_narrow_cells_rather_than_run_together(browser, width) -> None:
    fig = charts.heatmap(np.full((6, 16), 0.001), zmin=0.0, zmax=1.0)  # sixteen "<1%" a row
    assert fig.data[0].text is not None
    # Plotly sizes the text for 0.65 em a character: true of the app's Source Sans and of a monospace font (this
    # page has no Source Sans), not of the wider font Chromium would put in place of Plotly's own "Open Sans".
    fig.update_layout(font_family="monospace")
    tab = browser.new_page(viewport={"width": 1000, "height": 600})
    try:
        tab.set_content(fig.to_html(include_plotlyjs=True, default_width=f"{width}px", default_height="400px"))
        tab.wait_for_selector(".heatmap-label text", state="attached")
        texts = tab.evaluate(CELL_TEXTS)
    finally:
        tab.close()
    assert len(texts) == 6 * 16
    rows: dict[int, list[tuple[float, float]]] = {}
    for top, left, right, _size in texts:
        rows.setdefault(top, []).append((left, right))
    for cells in rows.values():
        cells.sort()
        pairs = zip(cells, cells[1:], strict=False)
        assert all(right <= following + 0.5 for (_l, right), (following, _r) in pairs), cells
    sizes = {size for *_box, size in texts}
    assert max(sizes) <= fig.layout.font.size  # never larger than the chart's text
    if width == 900:
        assert sizes == {fig.layout.font.size}  # wide cells keep it


STEPS = """() => {
  const column = document.querySelector('[data-testid=stMainBlockContainer] [data-testid=stVerticalBlock]');
  const right = column.getBoundingClientRect().right;
  const past = e => e.getBoundingClientRect().right - right;
  return {charts: Array.from(document.querySelectorAll('[data-testid=stVegaLiteChart]'),
                             e => Math.max(past(e), e.scrollWidth - e.clientWidth)),
          formulas: Array.from(document.querySelectorAll('.katex-display'),
                               e => Math.max(past(e), e.scrollWidth - e.clientWidth)),
          buttons: Array.from(document.querySelectorAll('[data-testid=stButton] [data-testid=stMarkdownContainer]'))
                     .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent),
          pills: Array.from(document.querySelectorAll('[data-testid=stButtonGroup] button'))
                   .filter(b => b.getBoundingClientRect().right > b.closest('[data-testid=stButtonGroup]')
                                                                    .getBoundingClientRect().right + 1)
                   .map(b => b.textContent)}; }"""


def test_at_1024_with_the_sidebar_open_the_attention_steps_put_text_above_maps_and_buttons_wrap(page) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, "/attention?attn.beyond=mlp")  # the steps, and the MLP lens's twelve neurons to pick
    shown = page.evaluate(STEPS)
    assert len(shown["charts"]) >= 9 and len(shown["formulas"]) >= 9, shown
    assert max(shown["charts"]) <= 1, shown  # Q, K and V drawn for a 520-pixel column fit without scrolling
    assert max(shown["formulas"]) <= 3, shown  # "X = LN(E√d_model + PE)" whole (KaTeX's own overflow is 2 pixels)
    assert shown["buttons"] == []  # not "Switch every head b…"
    assert shown["pills"] == []  # on a second row, not scrolled out of sight


CUT = """() => Array.from(document.querySelectorAll(
    '[data-testid=stMetricValue] > div, [data-testid=stSelectbox] input, '
    + '[data-testid=stPageLink] span:has(> [data-testid=stMarkdownContainer])'))
  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent || e.value)"""


def test_at_1024_with_the_sidebar_open_the_vit_figures_and_settings_go_two_to_a_row(page) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, "/vit?vit.size=224&vit.patch=14")
    assert page.evaluate(CUT) == []  # not "16·16 = 256" run into "257", nor "Train a ViT on shapes in"
    figures = page.locator("[data-testid=stMetric]").evaluate_all(
        "ms => ms.map(m => { const r = m.getBoundingClientRect(); return [r.left, r.top]; })")
    assert len({round(top) for _left, top in figures}) == 2  # two rows of two
