"""Projector mode at 1024 × 768, measured in the browser: a chart on the first screen, whole titles, token labels
on the layers × heads grid, and a chart toolbar that leaves every head's title visible."""

from __future__ import annotations

import pytest

from tests.e2e.actions import open_page

PROJECTOR = {"width": 1024, "height": 768}
CHARTS = ".js-plotly-plot, [data-testid=stVegaLiteChart], [data-testid=stImage]"
MIN_VISIBLE_PX = 150  # a chart counts as "on the first screen" when at least this much of it shows
GRID = "/attention?attn.view=grid&attn.heads=4&present=true"

# Every chart title's bounding box (plotly's and Vega-Lite's), with the box of the chart it belongs to.
TITLE_BOXES = """() => [...document.querySelectorAll('.gtitle, [data-testid=stVegaLiteChart] .role-title-text text')]
    .map(t => { const chart = t.closest('svg').getBoundingClientRect(); const box = t.getBoundingClientRect();
                return {text: t.textContent, left: box.left, right: box.right, chartLeft: chart.left,
                        chartRight: chart.right}; })"""


def _projector(page, path: str) -> None:
    page.set_viewport_size(PROJECTOR)
    open_page(page, path)


def _boxes(page, selector: str) -> list[dict]:
    return page.locator(selector).evaluate_all("els => els.map(e => e.getBoundingClientRect().toJSON())")


@pytest.mark.parametrize("path", ["/attention", "/positional", "/vit", "/builder", "/training"])
def test_the_first_screen_shows_a_chart(page, path):
    _projector(page, f"{path}?present=true")
    page.locator(CHARTS).first.wait_for(state="visible")
    tops = [box["top"] for box in _boxes(page, CHARTS) if box["height"] > 0]
    assert tops and min(tops) < PROJECTOR["height"] - MIN_VISIBLE_PX, f"first chart starts at {min(tops, default=None)}"


@pytest.mark.parametrize("path", ["/training?present=true", "/builder?present=true", GRID])
def test_chart_titles_are_whole(page, path):
    _projector(page, path)
    page.locator(CHARTS).first.wait_for(state="visible")
    titles = page.evaluate(TITLE_BOXES)
    assert titles, "no chart titles found"
    for title in titles:
        assert "…" not in title["text"], title
        assert title["chartLeft"] - 1 <= title["left"] and title["right"] <= title["chartRight"] + 1, title


@pytest.mark.parametrize("path", ["/training?present=true", GRID])
def test_charts_fit_the_screen(page, path):
    _projector(page, path)
    page.locator(CHARTS).first.wait_for(state="visible")
    page.locator("[data-testid=stVegaLiteChart]:visible, .js-plotly-plot:visible").last.wait_for(state="visible")
    rights = [box["right"] for box in _boxes(page, "[data-testid=stVegaLiteChart] svg, .js-plotly-plot .main-svg")]
    assert rights and max(rights) <= PROJECTOR["width"], rights


def test_the_grid_labels_its_tokens_in_large_dark_type(page):
    _projector(page, GRID)
    grid = page.locator(".js-plotly-plot").first
    grid.wait_for(state="visible")
    ticks = grid.locator(".xtick text, .ytick text")
    texts = set(ticks.evaluate_all("els => els.map(e => e.textContent)"))
    assert {"the", "cat", "sat", "on", "mat"} <= {t.replace("\u200b", "") for t in texts}, texts
    sizes = ticks.evaluate_all("els => els.map(e => parseFloat(getComputedStyle(e).fontSize))")
    assert min(sizes) >= 14, sizes
    heads = grid.locator(".annotation-text").filter(has_text="Head")
    assert heads.count() == 4
    colour = heads.first.evaluate("e => getComputedStyle(e).fill")
    assert all(int(c) < 80 for c in colour[colour.index("(") + 1 : -1].split(",")[:3]), colour  # dark, not grey


def test_the_toolbar_leaves_every_head_title_visible(page):
    _projector(page, GRID)
    grid = page.locator(".js-plotly-plot").first
    grid.wait_for(state="visible")
    grid.hover()
    toolbar = page.locator(".modebar").first
    toolbar.wait_for(state="visible")
    bar = toolbar.bounding_box()
    for box in _boxes(page, ".js-plotly-plot .annotation-text"):
        overlap_x = box["left"] < bar["x"] + bar["width"] and bar["x"] < box["right"]
        overlap_y = box["top"] < bar["y"] + bar["height"] and bar["y"] < box["bottom"]
        assert not (overlap_x and overlap_y), (box, bar)


# The text of each rendered line of an element's first paragraph (characters grouped by their line's top).
LINES = """e => { const text = e.querySelector('p').firstChild; const range = document.createRange(); const lines = {};
    for (let i = 0; i < text.length; i++) { range.setStart(text, i); range.setEnd(text, i + 1);
        const top = Math.round(range.getBoundingClientRect().top); lines[top] = (lines[top] || '') + text.data[i]; }
    return Object.keys(lines).sort((a, b) => a - b).map(top => lines[top].trim()); }"""


def test_labels_break_between_words_at_1024(page):
    page.set_viewport_size(PROJECTOR)
    open_page(page, "/builder")
    label = page.get_by_test_id("stWidgetLabel").filter(has_text="Norm placement").first
    lines = label.evaluate(LINES)
    assert " ".join(lines) == "Norm placement"
    assert all(word in ("Norm", "placement") for line in lines for word in line.split()), lines
