"""Vega-Lite heatmaps: drawn from the spec with the one colour mapping, the cell text and the hover values."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.render import heatmap as hm
from ui.common.vega_heatmap import text_fits, vega_heatmap, vega_row


def test_colours_are_the_specs_scale_blended_in_rgb() -> None:
    spec = hm.attention_spec(np.array([[0.2, 0.8], [0.5, 0.5]]), ["a", "b"], ["c", "d"], scale="Cividis")
    data, chart = vega_heatmap(spec, height=200)
    data = data.to_pandas()
    colour = chart["layer"][0]["encoding"]["color"]
    assert colour["field"] == "n" and data["n"].tolist() == [0.2, 0.8, 0.5, 0.5]  # the place in 0..1
    assert colour["scale"] == {"domain": [0, 1], "range": list(hm.SCALES["Cividis"]), "interpolate": "rgb",
                               "clamp": True}
    assert data["t"].tolist() == ["20%", "80%", "50%", "50%"]
    assert data["ink"].tolist() == ["white" if hm.ink(c) == (255, 255, 255) else "black"
                                    for c in spec.colours().reshape(-1, 3)]
    assert chart["layer"][1]["encoding"]["text"] == {"field": "t"}  # the numbers are printed in the cells


def test_the_ink_of_every_cell_is_the_per_colour_rule() -> None:
    """The data's ink, worked out for all cells at once, is :func:`hm.ink` of each cell's colour, on every grey and
    on random colours (the rule's own edge, luma 140, included)."""
    greys = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 3, axis=1)
    colours = np.concatenate([greys, np.random.default_rng(0).integers(0, 256, size=(2000, 3), dtype=np.uint8)])
    assert hm.dark_ink(colours).tolist() == [hm.ink(tuple(int(v) for v in c)) == (0, 0, 0) for c in colours]
    spec = hm.attention_spec(np.linspace(0, 1, 64).reshape(8, 8), list("abcdefgh"), list("abcdefgh"))
    data, _ = vega_heatmap(spec, height=200)
    assert data.column("ink").to_pylist() == ["black" if hm.ink(c) == (0, 0, 0) else "white"
                                              for c in spec.colours().reshape(-1, 3)]


def test_masked_cells_are_grey_and_say_minus_infinity() -> None:
    z = np.array([[0.5, np.nan], [0.1, -0.2]])
    text = np.array([["0.50", "-∞"], ["0.10", "-0.20"]], dtype=object)
    data, chart = vega_heatmap(hm.matrix_spec(z, diverging=True, hover_name="score", text=text), height=200)
    data = data.to_pandas()
    assert data["v"].isna().tolist() == [False, True, False, False]
    colour = chart["layer"][0]["encoding"]["color"]
    assert colour["condition"] == {"test": "!isValid(datum.n)", "value": hm.NAN_HEX}
    assert data["n"].tolist()[2:] == pytest.approx([0.6, 0.3])  # on -0.5..0.5, 0.1 sits at 0.6 and -0.2 at 0.3
    tooltip = chart["layer"][0]["encoding"]["tooltip"]
    assert tooltip[-1]["field"] == "t" and data["t"][1] == "-∞"  # hover reads "-∞" for the masked cell


def test_big_maps_keep_hover_but_drop_cell_text() -> None:
    data, chart = vega_heatmap(hm.attention_spec(np.full((20, 20), 0.05)), height=300)
    assert len(chart["layer"]) == 1 and len(data) == 400
    assert chart["layer"][0]["encoding"]["tooltip"][-1] == {"field": "v", "title": "weight",
                                                           "type": "quantitative", "format": ".4f"}


def test_the_chart_spec_stays_when_only_the_numbers_change() -> None:
    """So the browser swaps the data in place instead of building the chart anew."""
    rng = np.random.default_rng(0)
    first, second = (vega_heatmap(hm.matrix_spec(rng.normal(size=(4, 4)), diverging=True), height=200)
                     for _ in range(2))
    assert first[1] == second[1] and not first[0]["v"].equals(second[0]["v"])
    assert first[0].schema == second[0].schema


def test_row_of_maps_keeps_each_panel_apart() -> None:
    specs = [hm.matrix_spec(np.full((2, 3), k), diverging=True, zmin=-2, zmax=2) for k in (-1.0, 1.0)]
    data, chart = vega_row(specs, ["Q", "K"], height=100, width=120)
    data = data.to_pandas()
    assert data.groupby("p")["v"].first().tolist() == [-1.0, 1.0]
    assert [p["title"]["text"] for p in chart["hconcat"]] == ["Q", "K"]
    assert chart["hconcat"][1]["layer"][0]["transform"][0] == {"filter": "datum.p == 1"}


def test_numbers_too_wide_for_their_cells_stack_the_maps() -> None:
    spec = hm.matrix_spec(np.full((6, 8), -0.71), diverging=True)  # "-0.71": five characters per cell
    assert text_fits(spec, 8 * 40, 10) and not text_fits(spec, 8 * 20, 10)
    _, side = vega_row([spec, spec], ["Q", "K"], height=100, width=140)
    _, stacked = vega_row([spec, spec], ["Q", "K"], height=100, width=460, stacked=True)
    assert "hconcat" in side and len(side["hconcat"][0]["layer"]) == 1  # no room: hover only, no printed numbers
    assert "vconcat" in stacked and len(stacked["vconcat"][1]["layer"]) == 2  # numbers printed, labels on both
    assert stacked["vconcat"][1]["layer"][0]["encoding"]["y"]["axis"]["labelExpr"]


def test_maps_without_numbers_get_a_colour_bar_in_values() -> None:
    spec = hm.matrix_spec(np.linspace(-2, 2, 400).reshape(20, 20), diverging=True)
    legend = vega_heatmap(spec, height=300)[1]["layer"][0]["encoding"]["color"]["legend"]
    assert legend["labelExpr"] == "format(-2.0 + datum.value * 4.0, '.2f')"  # n = 0 reads -2, n = 1 reads 2
    small = vega_heatmap(hm.matrix_spec(np.eye(3)), height=200)[1]
    assert small["layer"][0]["encoding"]["color"]["legend"] is None  # the numbers are in the cells


def test_every_scale_the_sidebar_offers_has_stops() -> None:
    from ui.common import state

    assert set(state.SEQUENTIAL_SCALES) <= set(hm.SCALES)


def test_rows_and_columns_decide_apart_whether_to_turn_their_labels() -> None:
    """Long query labels ("␣the␣mat") stay upright, one per row, while the same labels turn on the columns."""
    tokens = ["␣the␣mat", "␣tired␣was", "␣on␣the", "␣cat␣sat", "␣a␣dog", "␣ran␣far", "␣away", "␣all", "␣you", "␣is"]
    _, chart = vega_heatmap(hm.attention_spec(np.full((10, 10), 0.1), tokens, tokens), height=440)
    x, y = (chart["layer"][0]["encoding"][axis]["axis"] for axis in "xy")
    assert x["labelAngle"] == -90 and y["labelAngle"] == 0
    assert y["tickCount"] == len(tokens)  # every row labelled
    _, narrow = vega_heatmap(hm.attention_spec(np.full((10, 2), 0.5), tokens, ["a", "b"]), height=440)
    rows, cols = (narrow["layer"][0]["encoding"][axis]["axis"] for axis in "yx")
    assert rows["labelAngle"] == 0 and cols["labelAngle"] == 0
