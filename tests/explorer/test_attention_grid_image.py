"""The live heatmaps' grid: every cell in the colour of its weight, the colour bar's ends, headers, and token
labels only where the chart writes them."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

from explorer.i18n.active import using_language
from explorer.render.grid_image import MAX_TICK_LABELS, GridLayout, grid_html, tick_labels
from explorer.render.heatmap import SCALES


def reference_rgb(w: np.ndarray, scale: str) -> np.ndarray:
    """An independent colour mapping: each channel interpolated over the scale's evenly spaced stops."""
    stops = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in SCALES[scale]], dtype=float)
    at = np.linspace(0, 1, len(stops))
    return np.stack([np.interp(w, at, stops[:, c]) for c in range(3)], axis=-1)


def layout(layers: int, heads: int, t: int, s: int, **changes) -> GridLayout:
    options = dict(layers=layers, heads=heads, panel_w=120, panel_h=120, rows=tick_labels(None, t),
                   cols=tick_labels(None, s), font=12, scale="Viridis", zmin=0.0, zmax=1.0)
    return GridLayout(**{**options, **changes})


def pictures(html: str) -> dict[str, np.ndarray]:
    """Every picture in the grid by its alternative text, decoded to ``(H, W, 3)`` ints."""
    found = re.findall(r'<img src="data:image/png;base64,([^"]+)" alt="([^"]+)"', html)
    return {alt: np.asarray(Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB")).astype(int)
            for data, alt in found}


@pytest.mark.parametrize("scale", ["Viridis", "Blues"])
def test_every_cell_has_the_colour_of_its_weight(scale):
    maps = np.random.default_rng(0).dirichlet(np.ones(5), size=(2, 3, 4))  # (L, H, T, S): rows sum to 1
    shown = pictures(grid_html(maps, layout(2, 3, 4, 5, scale=scale)))
    for i, j in np.ndindex(2, 3):
        panel = shown[f"layer {i + 1}, head {j + 1}"]
        assert panel.shape == (4, 5, 3)  # one pixel per cell, enlarged by the browser
        assert np.abs(panel - reference_rgb(maps[i, j], scale)).max() <= 1


def test_the_colour_bar_runs_from_the_top_of_the_range_down():
    lay = layout(1, 2, 3, 3, zmin=0.2, zmax=0.6)
    html = grid_html(np.full((1, 2, 3, 3), 1 / 3), lay)
    bar = pictures(html)["colour scale"][:, 0]
    assert np.abs(bar[0] - reference_rgb(1.0, "Viridis")).max() <= 1
    assert np.abs(bar[-1] - reference_rgb(0.0, "Viridis")).max() <= 1
    assert all(f">{v}</div>" in html for v in ("0.6", "0.4", "0.2")) and '">weight<div' in html


@pytest.mark.parametrize(("code", "marks"), [("de", ("0,6", "0,4", "0,2")), ("zh-CN", ("0.6", "0.4", "0.2"))])
def test_the_colour_bar_writes_its_numbers_as_the_reader_does(code, marks):
    with using_language(code):
        html = grid_html(np.full((1, 2, 3, 3), 1 / 3), layout(1, 2, 3, 3, zmin=0.2, zmax=0.6))
    assert all(f">{v}</div>" in html for v in marks)


def test_headers_name_every_layer_and_head_and_the_grid_says_what_it_shows():
    html = grid_html(np.full((3, 2, 2, 2), 0.5), layout(3, 2, 2, 2), label="Cross-attention at step 7")
    assert all(f"head {j}</div>" in html for j in (1, 2)) and all(f"layer {i}</div>" in html for i in (1, 2, 3))
    assert 'role="img" aria-label="Cross-attention at step 7"' in html


def test_token_labels_only_where_the_chart_writes_them():
    assert tick_labels(["BOS", "a", "b"], 3) == ("BOS", "a", "b")
    assert tick_labels(["a", "b"], 3) == ("0", "1", "2")  # labels that do not fit the map: positions
    assert tick_labels(None, MAX_TICK_LABELS + 1) == ()  # too many to read: none, as in the chart
    labelled = grid_html(np.full((1, 1, 3, 3), 0.5), layout(1, 1, 3, 3, rows=("BOS", "<a>", "b"), cols=("x", "y", "z")))
    assert ">BOS</div>" in labelled and "&lt;a&gt;" in labelled and ">z</div>" in labelled  # escaped, never markup
    unlabelled = layout(1, 1, 30, 30, rows=(), cols=())
    assert unlabelled.left < layout(1, 1, 3, 3, rows=("BOS", "a", "b")).left
    assert "white-space:nowrap" not in grid_html(np.full((1, 1, 30, 30), 1 / 30), unlabelled)  # no token labels
    assert "white-space:nowrap" in labelled


def test_long_key_tokens_turn_on_their_side():
    words = ("attention", "is", "all")
    narrow, wide = layout(1, 1, 3, 3, cols=words, panel_w=60), layout(1, 1, 3, 3, cols=words, panel_w=600)
    assert not narrow.upright and wide.upright
    assert "vertical-rl;transform:rotate(180deg);margin" in grid_html(np.zeros((1, 1, 3, 3)), narrow)
    assert "vertical-rl;transform:rotate(180deg);margin" not in grid_html(np.zeros((1, 1, 3, 3)), wide)


def test_headers_shrink_to_fit_narrow_panels():
    assert layout(2, 4, 3, 3, font=16).header_font == 19
    assert layout(2, 4, 3, 3, font=16, panel_w=40).header_font < 19


def test_panels_too_small_for_their_names_are_numbered_under_one_title_without_token_labels():
    tiny = layout(8, 16, 7, 7, panel_w=14, panel_h=14)  # 16 heads in half a page (Compare on)
    assert tiny.numbered and tiny.shown_rows == tiny.shown_cols == ()
    html = grid_html(np.full((8, 16, 7, 7), 0.5), tiny)
    assert ">head</div>" in html and ">layer</div>" in html and "head 16</div>" not in html and ">16</div>" in html
    assert "white-space:nowrap" not in html  # seven tokens in 14 pixels: no labels
    roomy = layout(2, 4, 7, 7, panel_w=120, panel_h=120)
    assert not roomy.numbered and roomy.shown_cols == roomy.cols
    assert "head 4</div>" in grid_html(np.full((2, 4, 7, 7), 0.5), roomy)


def test_a_layout_for_other_maps_is_refused():
    with pytest.raises(ValueError, match="2 layers × 3 heads"):
        grid_html(np.zeros((1, 3, 4, 5)), layout(2, 3, 4, 5))
