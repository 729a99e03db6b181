"""The live heatmaps' picture: every cell in the colour of its weight, the colour bar's ends, token labels that
appear only where the chart has them, and a transparent background."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from explorer.attention_grid_image import MAX_TICK_LABELS, GridLayout, grid_png, tick_labels
from explorer.heatmap import SCALES


def reference_rgb(w: np.ndarray, scale: str) -> np.ndarray:
    """An independent colour mapping: each channel interpolated over the scale's evenly spaced stops."""
    stops = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for h in SCALES[scale]], dtype=float)
    at = np.linspace(0, 1, len(stops))
    return np.stack([np.interp(w, at, stops[:, c]) for c in range(3)], axis=-1)


def layout(layers: int, heads: int, t: int, s: int, **changes) -> GridLayout:
    options = dict(layers=layers, heads=heads, panel_w=12 * s, panel_h=12 * t, rows=tick_labels(None, t),
                   cols=tick_labels(None, s), font=12, ink="#1F2933", scale="Viridis", zmin=0.0, zmax=1.0)
    return GridLayout(**{**options, **changes})


def picture(maps: np.ndarray, lay: GridLayout) -> np.ndarray:
    img = Image.open(io.BytesIO(grid_png(maps, lay)))
    assert img.format == "PNG" and img.size == lay.size
    return np.asarray(img.convert("RGBA")).astype(int)


@pytest.mark.parametrize("scale", ["Viridis", "Blues"])
def test_every_cell_has_the_colour_of_its_weight(scale):
    rng = np.random.default_rng(0)
    maps = rng.dirichlet(np.ones(5), size=(2, 3, 4))  # (L, H, T, S): rows sum to 1
    lay = layout(2, 3, 4, 5, scale=scale)
    pix = picture(maps, lay)
    for i, j, q, k in np.ndindex(maps.shape):
        x0, y0 = lay.origin(i, j)
        y, x = y0 + int((q + 0.5) * lay.panel_h / 4), x0 + int((k + 0.5) * lay.panel_w / 5)
        assert pix[y, x, 3] == 255
        assert np.abs(pix[y, x, :3] - reference_rgb(maps[i, j, q, k], scale)).max() <= 1, (i, j, q, k)


def test_the_colour_bar_runs_from_the_top_of_the_range_down_and_the_background_is_clear():
    lay = layout(1, 2, 3, 3)
    pix = picture(np.full((1, 2, 3, 3), 1 / 3), lay)
    assert pix[0, 0, 3] == 0 and pix[-1, -1, 3] == 0  # transparent: reads on the light and the dark theme
    bar = pix[:, lay.left + lay.grid_w + 12 + 7]  # the middle of the colour bar, top to bottom
    coloured = bar[bar[:, 3] == 255, :3]
    assert np.abs(coloured[0] - reference_rgb(1.0, "Viridis")).max() <= 1
    assert np.abs(coloured[-1] - reference_rgb(0.0, "Viridis")).max() <= 1
    assert len(coloured) >= 60


def test_token_labels_only_where_the_chart_writes_them():
    assert tick_labels(["BOS", "a", "b"], 3) == ("BOS", "a", "b")
    assert tick_labels(["a", "b"], 3) == ("0", "1", "2")  # labels that do not fit the map: positions
    assert tick_labels(None, MAX_TICK_LABELS + 1) == ()  # too many to read: none, as in the chart
    unlabelled = layout(1, 1, 30, 30, rows=(), cols=())
    labelled = layout(1, 1, 3, 3, rows=("BOS", "a", "b"), cols=("a", "b", "c"), panel_w=360, panel_h=360)
    assert unlabelled.left < labelled.left and unlabelled.bottom < labelled.bottom
    left_of_cells = picture(np.full((1, 1, 3, 3), 0.5), labelled)[:, labelled.left - 40:labelled.left - 2]
    assert (left_of_cells[..., 3] > 0).any(), "the query tokens are written left of the cells"


def test_long_key_tokens_turn_on_their_side():
    words = ("attention", "is", "all")
    narrow = layout(1, 1, 3, 3, cols=words, panel_w=60, panel_h=60)
    wide = layout(1, 1, 3, 3, cols=words, panel_w=600, panel_h=60)
    assert not narrow.upright and wide.upright
    assert narrow.bottom > wide.bottom


def test_a_layout_for_other_maps_is_refused():
    with pytest.raises(ValueError, match="2 layers × 3 heads"):
        grid_png(np.zeros((1, 3, 4, 5)), layout(2, 3, 4, 5))
