"""Exports any page can reuse: a matrix as PNG (Pillow, server-side, no kaleido) or SVG, tensors as CSV or NPY.

The ``*_png``/``*_svg``/``*_csv``/``*_npy`` functions are pure (numbers in, file contents out);
:func:`matrix_downloads` and :func:`tensor_downloads` draw Streamlit download buttons whose files are only
made when clicked. Heatmap images use the same colour scales as the plotly charts, print the numbers in the cells
when the matrix is small, and grey out NaN cells (e.g. masked scores).
"""

from __future__ import annotations

import csv
import io
import itertools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from html import escape
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.colors as pcolors
import streamlit as st
from PIL import Image, ImageDraw, ImageFont

TEXT_CELLS = 16  # print values in the cells when both sides are at most this long
NAN_RGB = (220, 220, 220)  # colour of NaN cells
_FONT_PATHS = ("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", "DejaVuSans.ttf")


@lru_cache(maxsize=16)
def colormap(name: str = "Viridis", n: int = 256) -> np.ndarray:
    """``(n, 3)`` uint8 lookup table of a plotly colour scale (e.g. "Viridis", "Cividis", "RdBu_r")."""
    colours = pcolors.sample_colorscale(pcolors.get_colorscale(name), np.linspace(0, 1, n).tolist())
    rgb = [pcolors.unlabel_rgb(pcolors.convert_colors_to_same_type(c, "rgb")[0][0]) for c in colours]
    return np.clip(np.rint(np.asarray(rgb, dtype=float)), 0, 255).astype(np.uint8)


def _bounds(z: np.ndarray, zmin: float | None, zmax: float | None, diverging: bool) -> tuple[float, float]:
    finite = z[np.isfinite(z)]
    if diverging and zmin is None and zmax is None:
        bound = float(np.abs(finite).max()) if finite.size else 1.0
        return -bound, bound
    lo = zmin if zmin is not None else (float(finite.min()) if finite.size else 0.0)
    hi = zmax if zmax is not None else (float(finite.max()) if finite.size else 1.0)
    return lo, (hi if hi > lo else lo + 1.0)


def colours_for(z: np.ndarray, lut: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """RGB colour ``(..., 3)`` of every value of ``z``; NaN becomes :data:`NAN_RGB`."""
    t = np.clip((np.nan_to_num(z, nan=lo) - lo) / (hi - lo), 0, 1)
    rgb = lut[np.rint(t * (len(lut) - 1)).astype(int)]
    rgb[np.isnan(z)] = NAN_RGB
    return rgb


@dataclass(frozen=True)
class _Layout:
    cell: int  # side of one cell in pixels
    left: int  # width of the row-label margin
    top: int  # height of the title and column-label margin
    font: int  # label font size in pixels
    rotate: bool  # whether column labels are written vertically
    text: bool  # whether values are printed in the cells
    width: int
    height: int


def _layout(shape: tuple[int, int], rows: list[str], cols: list[str], title: str, cell_px: int | None) -> _Layout:
    n = max(shape)
    cell = cell_px or int(np.clip(560 / max(n, 1), 6, 56))
    font = int(np.clip(cell * 0.32, 9, 14))
    char = 0.62 * font
    left = int(max((len(r) for r in rows), default=1) * char) + 12
    rotate = max((len(c) for c in cols), default=1) * char > cell
    label_h = int(max((len(c) for c in cols), default=1) * char) + 10 if rotate else font + 10
    top = label_h + (font + 16 if title else 6)
    text = n <= TEXT_CELLS and cell >= 26
    width = left + shape[1] * cell + 90  # room for the colour bar
    return _Layout(cell, left, top, font, rotate, text, width, max(top + shape[0] * cell + 12, top + 140))


def _labels(labels: Sequence[str] | None, n: int) -> list[str]:
    return [str(s) for s in labels] if labels is not None and len(labels) == n else [str(i) for i in range(n)]


def _value_text(v: float, decimals: int) -> str:
    return "" if np.isnan(v) else ("-∞" if v == -np.inf else f"{v:.{decimals}f}")


def _ink(rgb: Sequence[int]) -> tuple[int, int, int]:
    return (0, 0, 0) if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140 else (255, 255, 255)


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for path in _FONT_PATHS:
        if Path(path).exists() or "/" not in path:
            try:
                return ImageFont.truetype(path, size)
            except OSError:
                continue
    return ImageFont.load_default(size)


def matrix_png(z: np.ndarray, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None, *,
               title: str = "", colorscale: str = "Viridis", diverging: bool = False, zmin: float | None = None,
               zmax: float | None = None, decimals: int = 2, cell_px: int | None = None) -> bytes:
    """A heatmap of a 2-D matrix as PNG bytes (rows top to bottom, labels, colour bar, values in small cells)."""
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"A heatmap needs a 2-D matrix, got shape {z.shape}.")
    rows, cols = _labels(row_labels, z.shape[0]), _labels(col_labels, z.shape[1])
    lay = _layout(z.shape, rows, cols, title, cell_px)
    lo, hi = _bounds(z, zmin, zmax, diverging)
    lut = colormap("RdBu_r" if diverging else colorscale)
    rgb = colours_for(z, lut, lo, hi)
    img = Image.new("RGB", (lay.width, lay.height), "white")
    draw, font = ImageDraw.Draw(img), _font(lay.font)
    if title:
        draw.text((6, 6), title, fill="black", font=_font(lay.font + 2))
    for (i, j) in itertools.product(range(z.shape[0]), range(z.shape[1])):
        x0, y0 = lay.left + j * lay.cell, lay.top + i * lay.cell
        draw.rectangle([x0, y0, x0 + lay.cell - 1, y0 + lay.cell - 1], fill=tuple(int(c) for c in rgb[i, j]))
        if lay.text:
            draw.text((x0 + lay.cell / 2, y0 + lay.cell / 2), _value_text(z[i, j], decimals),
                      fill=_ink(rgb[i, j]), font=font, anchor="mm")
    for i, label in enumerate(rows):
        draw.text((lay.left - 6, lay.top + (i + 0.5) * lay.cell), label, fill="black", font=font, anchor="rm")
    for j, label in enumerate(cols):
        _column_label(img, draw, font, label, lay, j)
    _png_colourbar(draw, font, lut, lo, hi, lay, z.shape)
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _column_label(img: Image.Image, draw: ImageDraw.ImageDraw, font, label: str, lay: _Layout, j: int) -> None:
    x = lay.left + (j + 0.5) * lay.cell
    if not lay.rotate:
        draw.text((x, lay.top - 4), label, fill="black", font=font, anchor="mb")
        return
    w = int(font.getlength(label)) + 4
    tile = Image.new("RGB", (w, lay.font + 6), "white")
    ImageDraw.Draw(tile).text((2, 2), label, fill="black", font=font)
    tile = tile.rotate(90, expand=True)
    img.paste(tile, (int(x - tile.width / 2), lay.top - 4 - tile.height))


def _png_colourbar(draw: ImageDraw.ImageDraw, font, lut: np.ndarray, lo: float, hi: float, lay: _Layout,
                   shape: tuple[int, int]) -> None:
    x0, y0 = lay.left + shape[1] * lay.cell + 14, lay.top
    h = max(lay.height - lay.top - 14, 40)
    for y in range(h):
        draw.line([x0, y0 + y, x0 + 14, y0 + y], fill=tuple(int(c) for c in lut[int((1 - y / (h - 1)) * 255)]))
    draw.text((x0 + 18, y0), f"{hi:.3g}", fill="black", font=font, anchor="lt")
    draw.text((x0 + 18, y0 + h), f"{lo:.3g}", fill="black", font=font, anchor="lb")


def matrix_svg(z: np.ndarray, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None, *,
               title: str = "", colorscale: str = "Viridis", diverging: bool = False, zmin: float | None = None,
               zmax: float | None = None, decimals: int = 2, cell_px: int | None = None) -> str:
    """The same heatmap as :func:`matrix_png`, as SVG text; every cell has a tooltip with its exact value."""
    z = np.asarray(z, dtype=float)
    if z.ndim != 2:
        raise ValueError(f"A heatmap needs a 2-D matrix, got shape {z.shape}.")
    rows, cols = _labels(row_labels, z.shape[0]), _labels(col_labels, z.shape[1])
    lay = _layout(z.shape, rows, cols, title, cell_px)
    lo, hi = _bounds(z, zmin, zmax, diverging)
    lut = colormap("RdBu_r" if diverging else colorscale)
    rgb = colours_for(z, lut, lo, hi)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{lay.width}" height="{lay.height}" '
           f'font-family="DejaVu Sans, Arial, sans-serif" font-size="{lay.font}">',
           f'<rect width="{lay.width}" height="{lay.height}" fill="white"/>']
    if title:
        out.append(f'<text x="6" y="{lay.font + 8}" font-size="{lay.font + 2}">{escape(title)}</text>')
    for (i, j) in itertools.product(range(z.shape[0]), range(z.shape[1])):
        x0, y0, (r, g, b) = lay.left + j * lay.cell, lay.top + i * lay.cell, rgb[i, j]
        out.append(f'<rect x="{x0}" y="{y0}" width="{lay.cell}" height="{lay.cell}" fill="rgb({r},{g},{b})">'
                   f'<title>{escape(rows[i])} → {escape(cols[j])}: {z[i, j]:.6g}</title></rect>')
        if lay.text:
            ink = "rgb({},{},{})".format(*_ink(rgb[i, j]))
            out.append(f'<text x="{x0 + lay.cell / 2}" y="{y0 + lay.cell / 2}" fill="{ink}" text-anchor="middle" '
                       f'dominant-baseline="central">{_value_text(z[i, j], decimals)}</text>')
    for i, label in enumerate(rows):
        out.append(f'<text x="{lay.left - 6}" y="{lay.top + (i + 0.5) * lay.cell}" text-anchor="end" '
                   f'dominant-baseline="central">{escape(label)}</text>')
    for j, label in enumerate(cols):
        x, y = lay.left + (j + 0.5) * lay.cell, lay.top - 6
        turn = f' transform="rotate(-90 {x} {y})" text-anchor="start"' if lay.rotate else ' text-anchor="middle"'
        out.append(f'<text x="{x}" y="{y}"{turn} dominant-baseline="central">{escape(label)}</text>')
    out.append(_svg_colourbar(lut, lo, hi, lay, z.shape))
    out.append("</svg>")
    return "\n".join(out)


def _svg_colourbar(lut: np.ndarray, lo: float, hi: float, lay: _Layout, shape: tuple[int, int]) -> str:
    x0, y0, h = lay.left + shape[1] * lay.cell + 14, lay.top, max(lay.height - lay.top - 14, 40)
    stops = "".join(f'<stop offset="{k / 10:.1f}" stop-color="rgb({r},{g},{b})"/>'
                    for k, (r, g, b) in enumerate(lut[np.linspace(255, 0, 11).astype(int)]))
    return (f'<defs><linearGradient id="bar" x1="0" y1="0" x2="0" y2="1">{stops}</linearGradient></defs>'
            f'<rect x="{x0}" y="{y0}" width="14" height="{h}" fill="url(#bar)"/>'
            f'<text x="{x0 + 18}" y="{y0 + lay.font}">{hi:.3g}</text>'
            f'<text x="{x0 + 18}" y="{y0 + h}">{lo:.3g}</text>')


def matrix_csv(z: np.ndarray, row_labels: Sequence[str] | None = None,
               col_labels: Sequence[str] | None = None) -> str:
    """A 2-D matrix as CSV: a header of column labels, then one labelled row per matrix row (full precision)."""
    z = np.asarray(z)
    if z.ndim != 2:
        raise ValueError(f"matrix_csv needs a 2-D matrix, got shape {z.shape}.")
    rows, cols = _labels(row_labels, z.shape[0]), _labels(col_labels, z.shape[1])
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["", *cols])
    for label, row in zip(rows, z.tolist(), strict=True):
        writer.writerow([label, *(repr(float(v)) for v in row)])
    return buf.getvalue()


def tensor_csv(array: np.ndarray, dim_names: Sequence[str], *, labels: Mapping[str, Sequence[str]] | None = None,
               value_name: str = "value") -> str:
    """Any tensor as a long CSV: one row per element with its index along each dimension (and labels if given).

    ``labels`` maps a dimension name to one label per index, e.g. ``{"query": tokens, "key": tokens}``; each
    labelled dimension gets an extra ``<name>_label`` column.
    """
    array = np.asarray(array)
    if len(dim_names) != array.ndim:
        raise ValueError(f"{len(dim_names)} dimension names for an array with {array.ndim} dimensions.")
    labels = dict(labels or {})
    named = [d for d in dim_names if d in labels and len(labels[d]) == array.shape[dim_names.index(d)]]
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow([*dim_names, *(f"{d}_label" for d in named), value_name])
    for index in np.ndindex(array.shape):
        extra = [labels[d][index[dim_names.index(d)]] for d in named]
        writer.writerow([*index, *extra, repr(float(array[index]))])
    return buf.getvalue()


def tensor_npy(array: np.ndarray) -> bytes:
    """NumPy's ``.npy`` file of ``array`` (load with ``np.load``; no pickles)."""
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def _button(label: str, data: Callable[[], str | bytes], file_name: str, mime: str, key: str, help: str) -> None:
    st.download_button(label, data, file_name=file_name, mime=mime, key=key, help=help, on_click="ignore",
                       icon=":material/download:")


def matrix_downloads(z: np.ndarray, row_labels: Sequence[str] | None = None,
                     col_labels: Sequence[str] | None = None, *, name: str, key: str, title: str = "",
                     colorscale: str = "Viridis", diverging: bool = False, zmin: float | None = None,
                     zmax: float | None = None, decimals: int = 2) -> None:
    """Four download buttons in a row — PNG, SVG, CSV, NPY of one matrix; files are made when clicked."""
    z = np.asarray(z, dtype=float).copy()
    style = dict(title=title, colorscale=colorscale, diverging=diverging, zmin=zmin, zmax=zmax, decimals=decimals)
    cols = st.columns(4)
    with cols[0]:
        _button("PNG", lambda: matrix_png(z, row_labels, col_labels, **style), f"{name}.png", "image/png",
                f"{key}.png", "The heatmap as a picture, with the values in the cells when it is small.")
    with cols[1]:
        _button("SVG", lambda: matrix_svg(z, row_labels, col_labels, **style), f"{name}.svg", "image/svg+xml",
                f"{key}.svg", "The heatmap as a vector drawing; hover a cell in a browser to read its value.")
    with cols[2]:
        _button("CSV", lambda: matrix_csv(z, row_labels, col_labels), f"{name}.csv", "text/csv", f"{key}.csv",
                "The numbers as a table (rows and columns labelled) for a spreadsheet.")
    with cols[3]:
        _button("NPY", lambda: tensor_npy(z), f"{name}.npy", "application/octet-stream", f"{key}.npy",
                "The numbers as a NumPy file: numpy.load('file.npy').")


def tensor_downloads(array: np.ndarray, dim_names: Sequence[str], *, name: str, key: str,
                     labels: Mapping[str, Sequence[str]] | None = None, value_name: str = "value") -> None:
    """Two download buttons — the whole tensor as a long CSV and as NPY; files are made when clicked."""
    array = np.asarray(array).copy()
    dims = " × ".join(f"{d} ({n})" for d, n in zip(dim_names, array.shape, strict=True))
    cols = st.columns(2)
    with cols[0]:
        _button("CSV (all)", lambda: tensor_csv(array, dim_names, labels=labels, value_name=value_name),
                f"{name}.csv", "text/csv", f"{key}.csv", f"Every value with its indices: {dims}.")
    with cols[1]:
        _button("NPY (all)", lambda: tensor_npy(array), f"{name}.npy", "application/octet-stream", f"{key}.npy",
                f"The whole array, shape {dims}, as a NumPy file.")


def unique_labels(labels: Sequence[str] | None, n: int) -> list[str]:
    """Table headers for ``labels``: ``"<index> <label>"`` so repeated tokens (e.g. "the") stay distinct."""
    return [f"{i} {label}" for i, label in enumerate(_labels(labels, n))] if labels is not None else _labels(None, n)


def numbers_popover(z: np.ndarray, row_labels: Sequence[str] | None = None,
                    col_labels: Sequence[str] | None = None, *, name: str, key: str, decimals: int = 3,
                    label: str = "Numbers") -> None:
    """A small button that opens a heatmap's matrix as a table, with a CSV download: its numeric alternative."""
    with st.popover(label, icon=":material/table:", help="The exact numbers of this chart, as a table and a CSV."):
        matrix_table(z, row_labels, col_labels, name=name, key=key, decimals=decimals)


def matrix_table(z: np.ndarray, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
                 *, name: str, key: str, decimals: int = 3) -> None:
    """A matrix as a table (rows and columns labelled, repeated tokens kept apart) with a CSV download."""
    z = np.asarray(z, dtype=float)
    frame = pd.DataFrame(np.round(z, decimals), index=unique_labels(row_labels, z.shape[0]),
                         columns=unique_labels(col_labels, z.shape[1]))
    st.dataframe(frame, width="stretch")
    _button("CSV", lambda: matrix_csv(z, row_labels, col_labels), f"{name}.csv", "text/csv", f"{key}.csv",
            "The numbers as a table (rows and columns labelled) for a spreadsheet.")
