"""The live heatmaps' grid shrinks as a whole to a column narrower than it was laid out for (a 1024-pixel page with
the sidebar open leaves about 680 of the 940 pixels): measured in Chromium, no app server needed."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.render.grid_image import FIT_STEP, GridLayout, grid_html, tick_labels
from tests.e2e.actions import open_page

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
                  .filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.textContent)}; }"""


def test_at_1024_with_the_sidebar_open_charts_scroll_and_figures_wrap_within_the_column(page) -> None:
    page.set_viewport_size({"width": 1024, "height": 768})
    open_page(page, "/training?steps=3000")
    shown = page.evaluate(WIDTHS)
    assert shown["charts"] and all(over <= 1 for over, _scroll in shown["charts"]), shown  # none past the column
    assert any(scroll > 0 for _over, scroll in shown["charts"])  # the heatmaps' chart scrolls to its last heads
    assert shown["cut"] == []
