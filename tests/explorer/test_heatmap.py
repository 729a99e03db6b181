"""The heatmap spec, its one colour mapping and the PNG/SVG drawn from it, checked against Plotly's own scales."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import numpy as np
import plotly.colors as pcolors
import pytest
from PIL import Image

from explorer.render import heatmap as hm
from explorer.render.heatmap_image import layout, spec_png, spec_svg

SVG = "{http://www.w3.org/2000/svg}"


def plotly_rgb(scale: str, t: float) -> np.ndarray:
    """Plotly's colour at ``t`` in 0..1 of its scale ``scale``: the independent reference."""
    colour = pcolors.sample_colorscale(pcolors.get_colorscale(scale), [t])[0]
    colour = pcolors.convert_colors_to_same_type(colour, "rgb")[0][0]
    return np.array(pcolors.unlabel_rgb(colour), dtype=float)


@pytest.mark.parametrize("scale", [*hm.SCALES])
def test_colours_match_plotlys_scale_everywhere(scale: str) -> None:
    ts = np.linspace(0.0, 1.0, 37)
    ours = hm.colours(ts, scale, 0.0, 1.0).astype(float)
    theirs = np.array([plotly_rgb(scale, t) for t in ts])
    assert np.abs(ours - theirs).max() <= 1  # the same stops blended the same way; rounding aside


def test_colours_clip_scale_and_grey_out_nan() -> None:
    rgb = hm.colours(np.array([-5.0, 2.0, 7.0, np.nan]), "Viridis", 2.0, 6.0)
    assert tuple(rgb[0]) == tuple(rgb[1]) == (0x44, 0x01, 0x54)  # below the range: the first stop
    assert tuple(rgb[2]) == (0xFD, 0xE7, 0x25)  # above: the last
    assert tuple(rgb[3]) == hm.NAN_RGB


def test_attention_text_is_rounded_percentages() -> None:
    spec = hm.attention_spec(np.array([[0.314, 0.686], [0.002, 0.998], [0.0, 1.0]]), ["a", "b", "c"], ["x", "y"])
    assert spec.text.tolist() == [["31%", "69%"], ["<1%", "100%"], ["0%", "100%"]]
    assert spec.hover_name == "weight" and spec.rows == ("a", "b", "c") and spec.cols == ("x", "y")


def test_fixed_and_stretched_ranges() -> None:
    w = np.full((4, 4), 0.25) + np.array([0.01, -0.01, 0.0, 0.0])
    fixed, stretched = hm.attention_spec(w), hm.attention_spec(w, stretch=True)
    assert (fixed.zmin, fixed.zmax) == (0.0, 1.0) and fixed.uniform and "nearly uniform" in fixed.title
    assert (stretched.zmin, stretched.zmax) == pytest.approx((0.24, 0.26))
    assert tuple(stretched.colours()[0, 0]) == (0xFD, 0xE7, 0x25)  # the highest weight takes the top colour
    assert tuple(fixed.colours()[0, 0]) == tuple(hm.colours(np.array(0.26), "Viridis", 0, 1))


def test_diverging_matrix_is_centred_on_zero() -> None:
    spec = hm.matrix_spec(np.array([[-1.0, 3.0], [0.0, np.nan]]), diverging=True)
    assert (spec.zmin, spec.zmax, spec.scale) == (-3.0, 3.0, "RdBu_r")
    assert spec.text.tolist() == [["-1.00", "3.00"], ["0.00", ""]]
    assert tuple(spec.colours()[1, 0]) == (0xF7, 0xF7, 0xF7)  # zero is the middle stop: white-ish


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"z": np.zeros(3)}, "2-D"), ({"z": np.zeros((2, 2)), "scale": "Rainbow"}, "Unknown colour scale"),
])
def test_bad_specs_explain_themselves(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        hm.matrix_spec(**kwargs)


def _cell_pixel(img: Image.Image, spec: hm.HeatmapSpec, i: int, j: int, cell: int = 40) -> tuple[int, ...]:
    lay = layout(spec, cell)
    return img.getpixel((lay.left + j * cell + 3, lay.top + i * cell + 3))  # a corner, away from the text


def test_png_cells_have_the_scales_colours() -> None:
    w = np.array([[0.0, 0.5, 1.0], [0.2, np.nan, 0.9]])
    for scale in ("Viridis", "Cividis", "Greys"):
        spec = hm.attention_spec(w, ["q1", "q2"], ["k1", "k2", "k3"], scale=scale)
        img = Image.open(io.BytesIO(spec_png(spec, cell_px=40))).convert("RGB")
        for i, j in ((0, 0), (0, 1), (0, 2), (1, 0), (1, 2)):
            assert np.abs(np.array(_cell_pixel(img, spec, i, j)) - plotly_rgb(scale, w[i, j])).max() <= 1
        assert _cell_pixel(img, spec, 1, 1) == hm.NAN_RGB


def test_png_honours_a_stretched_range() -> None:
    w = np.array([[0.30, 0.32], [0.34, 0.36]])
    fixed = Image.open(io.BytesIO(spec_png(hm.attention_spec(w), cell_px=40))).convert("RGB")
    stretched_spec = hm.attention_spec(w, stretch=True)
    stretched = Image.open(io.BytesIO(spec_png(stretched_spec, cell_px=40))).convert("RGB")
    assert np.abs(np.array(_cell_pixel(fixed, hm.attention_spec(w), 1, 1)) - plotly_rgb("Viridis", 0.36)).max() <= 1
    assert _cell_pixel(stretched, stretched_spec, 0, 0) == (0x44, 0x01, 0x54)
    assert _cell_pixel(stretched, stretched_spec, 1, 1) == (0xFD, 0xE7, 0x25)


def test_svg_has_labels_cell_text_and_colours() -> None:
    w = np.array([[0.314, 0.686], [0.002, 0.998]])
    spec = hm.attention_spec(w, ["the", "cat"], ["the", "cat"], title="Layer 1 · head 2")
    root = ET.fromstring(spec_svg(spec))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "Layer 1 · head 2" in texts and texts.count("the") == 2 and texts.count("cat") == 2
    assert {"31%", "69%", "<1%", "100%"} <= set(texts)
    cells = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    r, g, b = (int(v) for v in cells[1].get("fill")[4:-1].split(","))
    assert np.abs(np.array([r, g, b]) - plotly_rgb("Viridis", 0.686)).max() <= 1


def test_numbers_that_round_to_zero_print_without_a_sign():
    from explorer.render.heatmap import number_text

    assert number_text(-0.0004, 2) == "0.00" and number_text(-0.004, 3) == "-0.004"
    assert number_text(-1.5, 1) == "-1.5" and number_text(float("-inf"), 2) == "-∞"
