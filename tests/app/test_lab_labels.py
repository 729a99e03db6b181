"""The Attention Lab's labels read from the back of a room: every token on the grid (or a note why not), and
token lines in the theme's strong colour."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.app.conftest import app_at, assert_no_exception
from ui.attention import keys as av
from ui.attention.charts import line_opacity, lines_figure
from ui.common.chart_style import STRONG_COLOURS

PAGE = "pages/attention.py"


def _chart(at, key: str) -> dict:
    return next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if c.proto.id and key in c.proto.id)


def _grid(text: str, heads: int) -> tuple[dict, str]:
    at = app_at(None)
    at.session_state[av.TEXT] = text
    at.session_state[av.D_MODEL] = 64
    at.session_state[av.HEADS] = heads
    at.session_state[av.VIEW] = "grid"
    at.switch_page(PAGE).run()
    assert_no_exception(at)
    return _chart(at, "attn.grid"), " ".join(c.value for c in at.caption)


def test_the_grid_labels_every_token_when_they_fit() -> None:
    grid, caption = _grid("the cat sat on the mat", heads=4)
    layout = grid["layout"]
    for name in ("xaxis", "yaxis"):
        assert layout[name]["dtick"] == 1 and layout[name]["tickmode"] == "linear", layout[name]
    assert "Labelled:" not in caption


def test_the_grid_says_why_it_labels_only_some_tokens() -> None:
    text = "a b c d e f g h i j k l m n o p q r s t u v w x"  # 24 one-letter words
    grid, caption = _grid(text, heads=8)
    layout = grid["layout"]
    assert layout["yaxis"]["dtick"] == 1  # the rows grow to hold every query label
    assert layout["xaxis"]["dtick"] > 1
    assert "Labelled: every" in caption and "key along the bottom" in caption and "do not fit" in caption


def test_token_lines_use_the_strong_colour_and_stay_visible() -> None:
    spread = np.full((6, 6), 1 / 6)  # an evenly spread head: every line as light as lines get
    fig = lines_figure({1: spread}, ["the", "cat", "sat", "on", "the", "mat"])
    lines = [t for t in fig.data if t.mode == "lines" and t.x and t.x[0] is not None]
    assert lines and {t.line.color for t in lines} == {STRONG_COLOURS["light"]}
    assert min(t.opacity for t in lines) >= 0.45
    assert line_opacity(0.9) > line_opacity(0.2)  # heavier weights stay darker
    tokens = [t for t in fig.data if t.mode == "markers+text"]
    assert all(t.textfont.color == "#1F2933" for t in tokens)  # dark labels, not grey


@pytest.mark.parametrize(("heads", "panel_px"), [(16, 20), (8, 51)])  # measured at 1024 with the sidebar open
def test_the_grids_key_labels_fit_a_1024_pixel_page_with_the_sidebar_open(heads, panel_px) -> None:
    words = " ".join(f"w{i}" for i in range(32))
    grid, _caption = _grid(words, heads=heads)
    xaxis = grid["layout"]["xaxis"]
    apart = xaxis["dtick"] * panel_px / 32  # pixels between two labelled keys
    assert apart >= xaxis["tickfont"]["size"] + 1, (xaxis["dtick"], apart)  # side by side, not on top
