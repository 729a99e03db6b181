"""Exports: heatmap PNG/SVG carry the right colours and values; CSV/NPY round-trip the numbers exactly."""

from __future__ import annotations

import csv
import importlib.metadata
import io
import xml.etree.ElementTree as ET

import numpy as np
import plotly.colors as pcolors
import pytest
from PIL import Image

from explorer.render import heatmap, heatmap_image
from tests.conftest import REPO_ROOT
from ui.common import exports

SVG = "{http://www.w3.org/2000/svg}"


def test_colormap_matches_plotly_scale() -> None:
    lut = exports.colormap("Viridis")
    assert lut.shape == (256, 3) and lut.dtype == np.uint8
    first, last = (pcolors.unlabel_rgb(c) for c in pcolors.sample_colorscale("Viridis", [0.0, 1.0]))
    assert tuple(lut[0]) == tuple(round(v) for v in first)
    assert tuple(lut[-1]) == tuple(round(v) for v in last)


def test_png_cells_have_the_colour_of_their_value() -> None:
    z = np.array([[0.0, 1.0], [0.5, np.nan]])
    data = exports.matrix_png(z, ["a", "b"], ["c", "d"], title="t", zmin=0, zmax=1, cell_px=40)
    img = Image.open(io.BytesIO(data)).convert("RGB")
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    lut = exports.colormap("Viridis")
    lay = heatmap_image.layout(heatmap.matrix_spec(z, ["a", "b"], ["c", "d"], title="t", zmin=0, zmax=1), 40)
    corner = (lay.left + 2, lay.top + 2)  # a cell's corner, away from the printed number
    assert img.getpixel(corner) == tuple(int(v) for v in lut[0])
    assert img.getpixel((corner[0] + 40, corner[1])) == tuple(int(v) for v in lut[-1])
    assert img.getpixel((corner[0] + 40, corner[1] + 40)) == exports.NAN_RGB
    assert img.size == (lay.width, lay.height)


def test_png_handles_big_matrices_and_long_labels() -> None:
    z = np.random.default_rng(0).normal(size=(48, 30))
    img = Image.open(io.BytesIO(exports.matrix_png(z, [f"row{i}" for i in range(48)],
                                                   [f"a long label {i}" for i in range(30)], diverging=True)))
    assert img.width > 30 * 6 and img.height > 48 * 6


def test_svg_has_one_rect_with_tooltip_per_cell() -> None:
    z = np.arange(6, dtype=float).reshape(2, 3)
    spec = heatmap.matrix_spec(z, ["x", "y"], ["p", "q", "r & s"], title="<title>")
    root = ET.fromstring(heatmap_image.spec_svg(spec))
    cells = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(cells) == 6
    assert cells[5].find(f"{SVG}title").text == "y → r & s: 5"
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "<title>" in texts and "2.00" in texts


def test_matrix_csv_round_trips_exactly() -> None:
    z = np.random.default_rng(1).random((3, 2))
    rows = list(csv.reader(io.StringIO(exports.matrix_csv(z, ["a,b", "c", "d"], ["k1", 'k"2']))))
    assert rows[0] == ["", "k1", 'k"2']
    assert [r[0] for r in rows[1:]] == ["a,b", "c", "d"]
    assert np.array_equal(np.array([[float(v) for v in r[1:]] for r in rows[1:]]), z)


def test_tensor_csv_long_format_with_labels() -> None:
    t = np.random.default_rng(2).random((2, 3, 2, 2))
    text = exports.tensor_csv(t, ("layer", "head", "query", "key"), labels={"query": ["the", "cat"]},
                              value_name="weight")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == t.size
    assert list(rows[0]) == ["layer", "head", "query", "key", "query_label", "weight"]
    row = rows[-1]
    assert (row["layer"], row["head"], row["query"], row["key"], row["query_label"]) == ("1", "2", "1", "1", "cat")
    assert float(row["weight"]) == t[1, 2, 1, 1]
    with pytest.raises(ValueError, match="dimension names"):
        exports.tensor_csv(t, ("a", "b"))


def test_npy_round_trip() -> None:
    t = np.random.default_rng(3).random((2, 2, 3)).astype(np.float32)
    back = np.load(io.BytesIO(exports.tensor_npy(t)), allow_pickle=False)
    assert back.dtype == np.float32 and np.array_equal(back, t)


def test_heatmaps_need_matrices() -> None:
    for fn in (exports.matrix_png, lambda z: heatmap_image.spec_svg(heatmap.matrix_spec(z)), exports.matrix_csv):
        with pytest.raises(ValueError, match="2-D"):
            fn(np.zeros(3))


def test_pandas_is_pinned_at_the_version_the_exports_are_tested_with() -> None:
    """ui/ imports pandas itself (numbers tables, chart data), so requirements.txt pins it like the others."""
    lines = (REPO_ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    pins = dict(line.split("==", 1) for line in lines if "==" in line and not line.startswith("#"))
    assert pins["pandas"] == importlib.metadata.version("pandas")
