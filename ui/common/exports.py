"""Exports any page can reuse: a heatmap as PNG or SVG (:mod:`explorer.render.heatmap_image`), tensors as CSV or NPY.

The ``*_png``/``*_svg``/``*_csv``/``*_npy`` functions are pure (numbers in, file contents out);
:func:`matrix_downloads` and :func:`tensor_downloads` draw Streamlit download buttons whose files are only
made when clicked. Heatmap images are drawn from the same :class:`~explorer.render.heatmap.HeatmapSpec` and colour
mapping as the charts on screen: the same colours, the same cell text ("31%" for attention), grey NaN cells.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache

import numpy as np
import pandas as pd
import streamlit as st

from explorer.i18n import _
from explorer.render import heatmap as hm
from explorer.render.heatmap_image import spec_png, spec_svg
from ui.common import tables

NAN_RGB = hm.NAN_RGB  # colour of NaN cells


@lru_cache(maxsize=16)
def colormap(name: str = "Viridis", n: int = 256) -> np.ndarray:
    """``(n, 3)`` uint8 lookup table of a colour scale of :mod:`explorer.render.heatmap` (e.g. "Viridis", "RdBu_r")."""
    return hm.colours(np.linspace(0.0, 1.0, n), name, 0.0, 1.0)


def _spec(z: np.ndarray, row_labels: Sequence[str] | None, col_labels: Sequence[str] | None, *, title: str,
          colorscale: str, diverging: bool, zmin: float | None, zmax: float | None,
          decimals: int) -> hm.HeatmapSpec:
    return hm.matrix_spec(z, row_labels, col_labels, scale=colorscale, diverging=diverging, zmin=zmin, zmax=zmax,
                          decimals=decimals, title=title)


def matrix_png(z: np.ndarray, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None, *,
               title: str = "", colorscale: str = "Viridis", diverging: bool = False, zmin: float | None = None,
               zmax: float | None = None, decimals: int = 2, cell_px: int | None = None) -> bytes:
    """A heatmap of a 2-D matrix as PNG bytes (rows top to bottom, labels, colour bar, values in small cells)."""
    spec = _spec(z, row_labels, col_labels, title=title, colorscale=colorscale, diverging=diverging, zmin=zmin,
                 zmax=zmax, decimals=decimals)
    return spec_png(spec, cell_px=cell_px)


def matrix_csv(z: np.ndarray, row_labels: Sequence[str] | None = None,
               col_labels: Sequence[str] | None = None) -> str:
    """A 2-D matrix as CSV: a header of column labels, then one labelled row per matrix row (full precision)."""
    z = np.asarray(z)
    if z.ndim != 2:
        raise ValueError(f"matrix_csv needs a 2-D matrix, got shape {z.shape}.")
    rows, cols = hm.labels(row_labels, z.shape[0]), hm.labels(col_labels, z.shape[1])
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


def spec_downloads(spec: hm.HeatmapSpec, *, name: str, key: str) -> None:
    """Four download buttons in a row — PNG, SVG, CSV, NPY of one heatmap; files are made when clicked. The
    pictures have the colours and cell text of the chart on screen, which is drawn from the same spec."""
    z = spec.values.copy()
    cols = st.columns(4)
    with cols[0]:
        _button("PNG", lambda: spec_png(spec), f"{name}.png", "image/png", f"{key}.png",
                _("The heatmap as a picture, with the values in the cells when it is small."))
    with cols[1]:
        _button("SVG", lambda: spec_svg(spec), f"{name}.svg", "image/svg+xml", f"{key}.svg",
                _("The heatmap as a vector drawing; hover a cell in a browser to read its value."))
    with cols[2]:
        _button("CSV", lambda: matrix_csv(z, spec.rows, spec.cols), f"{name}.csv", "text/csv", f"{key}.csv",
                _("The numbers as a table (rows and columns labelled) for a spreadsheet."))
    with cols[3]:
        _button("NPY", lambda: tensor_npy(z), f"{name}.npy", "application/octet-stream", f"{key}.npy",
                _("The numbers as a NumPy file: numpy.load('file.npy')."))


def picture_download(spec: hm.HeatmapSpec, *, name: str, key: str, image_format: str) -> None:
    """One download button: the heatmap of ``spec`` as ``image_format`` ("png" or "svg"), made when clicked."""
    svg = image_format == "svg"
    label = _("Picture ({format})").format(format=image_format.upper())
    _button(label, lambda: spec_svg(spec) if svg else spec_png(spec),
            f"{name}.{image_format}", "image/svg+xml" if svg else "image/png", f"{key}.picture",
            _("This matrix as a heatmap picture with the chart's colours and numbers (PNG or SVG: *Chart downloads* "
              "in the sidebar)."))


def matrix_downloads(z: np.ndarray, row_labels: Sequence[str] | None = None,
                     col_labels: Sequence[str] | None = None, *, name: str, key: str, title: str = "",
                     colorscale: str = "Viridis", diverging: bool = False, zmin: float | None = None,
                     zmax: float | None = None, decimals: int = 2) -> None:
    """:func:`spec_downloads` of any matrix (see :func:`explorer.render.heatmap.matrix_spec`)."""
    spec = _spec(np.asarray(z, dtype=float).copy(), row_labels, col_labels, title=title, colorscale=colorscale,
                 diverging=diverging, zmin=zmin, zmax=zmax, decimals=decimals)
    spec_downloads(spec, name=name, key=key)


def tensor_downloads(array: np.ndarray, dim_names: Sequence[str], *, name: str, key: str,
                     labels: Mapping[str, Sequence[str]] | None = None, value_name: str | None = None) -> None:
    """Two download buttons — the whole tensor as a long CSV and as NPY; files are made when clicked. The CSV's
    value column is headed ``value_name`` (by default "value" in the session's language)."""
    array = np.asarray(array).copy()
    value_name = value_name or _("value")
    dims = " × ".join(f"{d} ({n})" for d, n in zip(dim_names, array.shape, strict=True))
    cols = st.columns(2)
    with cols[0]:
        _button(_("CSV (all)"), lambda: tensor_csv(array, dim_names, labels=labels, value_name=value_name),
                f"{name}.csv", "text/csv", f"{key}.csv", _("Every value with its indices: {dims}.").format(dims=dims))
    with cols[1]:
        _button(_("NPY (all)"), lambda: tensor_npy(array), f"{name}.npy", "application/octet-stream", f"{key}.npy",
                _("The whole array, shape {dims}, as a NumPy file.").format(dims=dims))


def unique_labels(labels: Sequence[str] | None, n: int) -> list[str]:
    """Table headers for ``labels``: ``"<index> <label>"`` so repeated tokens (e.g. "the") stay distinct."""
    if labels is None:
        return list(hm.labels(None, n))
    return [f"{i} {label}" for i, label in enumerate(hm.labels(labels, n))]


def numbers_popover(z: np.ndarray, row_labels: Sequence[str] | None = None,
                    col_labels: Sequence[str] | None = None, *, name: str, key: str, decimals: int = 3,
                    label: str | None = None) -> None:
    """A small button that opens a heatmap's matrix as a table, with a CSV download: its numeric alternative."""
    with st.popover(label or _("Numbers"), icon=":material/table:",
                    help=_("The exact numbers of this chart, as a table and a CSV.")):
        matrix_table(z, row_labels, col_labels, name=name, key=key, decimals=decimals)


def matrix_table(z: np.ndarray, row_labels: Sequence[str] | None = None, col_labels: Sequence[str] | None = None,
                 *, name: str, key: str, decimals: int = 3) -> None:
    """A matrix as a table (rows and columns labelled, repeated tokens kept apart) with a CSV download."""
    z = np.asarray(z, dtype=float)
    frame = pd.DataFrame(np.round(z, decimals), index=unique_labels(row_labels, z.shape[0]),
                         columns=unique_labels(col_labels, z.shape[1]))
    tables.dataframe(frame, width="stretch")
    _button("CSV", lambda: matrix_csv(z, row_labels, col_labels), f"{name}.csv", "text/csv", f"{key}.csv",
            _("The numbers as a table (rows and columns labelled) for a spreadsheet."))
