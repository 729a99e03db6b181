"""Vega-Lite heatmaps drawn from :class:`~explorer.render.heatmap.HeatmapSpec`: one map, or several side by side.

The browser paints a Vega-Lite heatmap with its cell text several times faster than a Plotly one, which matters
where a page shows many (the Attention Lab's step-by-step view). Colours are the spec's scale stops blended in
RGB, the blending of :func:`explorer.render.heatmap.colours`, so the exports match; NaN cells are grey. Rows and columns
are drawn on number lines (cell ``i`` spans ``i`` to ``i + 1``), so repeated tokens stay separate cells and lines
between cells (e.g. the heads' blocks) can be drawn at exact places; the axes carry the labels.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import streamlit as st

from explorer.i18n import _
from explorer.render import heatmap as hm
from ui.common.chart_style import font_size, label_colour, vega_locale

Chart = tuple[pa.Table, dict[str, Any]]  # (data, Vega-Lite spec) for st.vega_lite_chart
MAX_TEXT_CELLS = 16  # print the cell text when both sides are at most this long...
MAX_TEXT_CELLS_PROJECTOR = 10  # ...or this long in projector mode
MAX_TICK_LABELS = 40  # label every row and column up to this many


def _frame(spec: hm.HeatmapSpec, panel: int = 0) -> pa.Table:
    """One row per cell: position, labels, value (null when NaN), its place in the colour range, text and the ink
    that reads on its colour.

    Built as an Arrow table, the form Streamlit sends a chart's data in: a page of many maps (the Attention Lab's
    step-by-step view) would otherwise spend most of its rerun building pandas frames and converting them.
    """
    z = spec.values
    r, c = (a.ravel() for a in np.indices(z.shape))
    values = z.ravel().astype(float)
    finite = np.isfinite(values)
    place = np.clip((np.where(finite, values, spec.zmin) - spec.zmin) / (spec.zmax - spec.zmin), 0.0, 1.0)
    ink = np.where(hm.dark_ink(spec.colours().reshape(-1, 3)), "black", "white")
    return pa.table({"p": np.full(values.size, panel), "r": r, "c": c,
                     "row": pa.array(np.asarray(spec.rows)[r].tolist()),
                     "col": pa.array(np.asarray(spec.cols)[c].tolist()),
                     "v": pa.array(values, mask=~finite), "n": pa.array(place, mask=~finite),
                     "t": pa.array(spec.text.ravel().astype(str).tolist(), pa.string()),
                     "ink": pa.array(ink.tolist(), pa.string())})


def _axis(labels: Sequence[str], title: str, room_px: int = 480, *, rows: bool = False) -> dict[str, Any]:
    """Ticks at the cells' middles, labelled with ``labels`` (all of them, or none when there are too many for
    ``room_px`` pixels).

    Columns (``rows=False``) and rows decide apart: column labels turn upright-to-sideways when they do not fit
    side by side across ``room_px``; row labels stack one under the other, so their length never matters and they
    are never turned (``room_px`` is then the chart's height).
    """
    size = max(11, font_size() - 2)
    labels = [hm.axis_label(label) for label in labels]
    if len(labels) > MAX_TICK_LABELS or room_px / max(len(labels), 1) < size + 2:
        # too many, or too narrow to stand side by side even upright: hover names each cell
        return {"title": title or None, "labels": False, "ticks": False, "grid": False}
    upright = rows or _fit_across(labels, room_px)
    # Vega thins explicit tick values down to the tick count, which it otherwise derives from the chart's size.
    return {"title": title or None, "values": [i + 0.5 for i in range(len(labels))], "tickCount": len(labels),
            "grid": False, "labelExpr": f"{json.dumps(list(labels))}[floor(datum.value)]",
            "labelFontSize": size, "labelColor": label_colour(), "labelOverlap": False,
            "labelAngle": 0 if upright else -90, "domain": False, "ticks": False}


def _fit_across(labels: Sequence[str], room_px: int = 480) -> bool:
    """Whether the labels fit side by side, upright, along an axis of about ``room_px`` pixels."""
    return len(labels) * (max(map(len, labels), default=1) + 1) * 0.6 * max(11, font_size() - 2) <= room_px


def _texts(spec: hm.HeatmapSpec, projector: bool) -> bool:
    return max(spec.values.shape) <= (MAX_TEXT_CELLS_PROJECTOR if projector else MAX_TEXT_CELLS)


# Each cell spans c..c+1 and r..r+1; its text sits at the middle.
CELL_EDGES = [{"calculate": "datum.c + 1", "as": "c1"}, {"calculate": "datum.r + 1", "as": "r1"},
              {"calculate": "datum.c + 0.5", "as": "cm"}, {"calculate": "datum.r + 0.5", "as": "rm"}]


def _layers(spec: hm.HeatmapSpec, *, x_title: str, y_title: str, numbers: bool, panel: int | None = None,
            text_size: int | None = None, width: int = 480, height: int = 480) -> list[dict[str, Any]]:
    """The cells (colour, tooltip) and, when ``numbers``, their text; ``panel``: draw only that panel's cells."""
    rows, cols = spec.values.shape
    transform = ([{"filter": f"datum.p == {panel}"}] if panel is not None else []) + CELL_EDGES
    x = {"field": "c", "type": "quantitative", "scale": {"domain": [0, cols], "nice": False, "zero": False},
         "axis": _axis(spec.cols, x_title, width)}
    y = {"field": "r", "type": "quantitative", "scale": {"domain": [rows, 0], "nice": False, "zero": False},
         "axis": _axis(spec.rows, y_title, height, rows=True)}
    # Colour by the value's place in the spec's range ("n", 0..1, computed here): the chart's spec then stays the
    # same when only the numbers change, and the browser updates the chart's data instead of building it anew.
    # Without numbers in the cells, a colour bar labelled with the values (read back from "n") keys the colours.
    value = f"{spec.zmin!r} + datum.value * {spec.zmax - spec.zmin!r}"
    # The bar is shorter than the map, so its end labels stay inside the chart (Vega's default 200 pixels ran past a
    # 180-pixel map and cut its lowest value in half).
    legend = None if numbers else {"title": _(spec.hover_name), "labelColor": label_colour(),
                                   "labelExpr": f"format({value}, '.2f')", "gradientLength": max(60, height - 30)}
    colour = {"field": "n", "type": "quantitative", "title": _(spec.hover_name), "legend": legend,
              "condition": {"test": "!isValid(datum.n)", "value": hm.NAN_HEX},
              "scale": {"domain": [0, 1], "range": list(hm.stops(spec.scale)), "interpolate": "rgb", "clamp": True}}
    tooltip = [{"field": "row", "title": _("row")}, {"field": "col", "title": _("column")},
               {"field": "t" if np.isnan(spec.values).any() else "v", "title": _(spec.hover_name),
                **({} if np.isnan(spec.values).any() else {"type": "quantitative", "format": ".4f"})}]
    cells = {"transform": transform, "mark": {"type": "rect", "invalid": None},
             "encoding": {"x": x, "x2": {"field": "c1"}, "y": y, "y2": {"field": "r1"}, "color": colour,
                          "tooltip": tooltip}}
    layers = [cells]
    if numbers:
        layers.append({"transform": transform, "mark": {"type": "text", "fontSize": text_size or _fitted_size(spec)},
                       "encoding": {"x": {"field": "cm", "type": "quantitative"},
                                    "y": {"field": "rm", "type": "quantitative"}, "text": {"field": "t"},
                                    "color": {"field": "ink", "type": "nominal", "scale": None},
                                    "tooltip": tooltip}})
    return layers


def _fitted_size(spec: hm.HeatmapSpec) -> dict[str, str]:
    """The cell text's size as a Vega expression of the chart's width, which only the browser knows: the usual size
    where a cell has room for its longest text, smaller where it has not, none below 8 pixels (a narrow column or a
    phone ran the numbers of sixteen columns into one another)."""
    longest = max((len(str(t)) for t in spec.text.ravel()), default=1)
    fits = f"(width / {spec.values.shape[1]} - 4) / {0.6 * longest:.2f}"
    return {"expr": f"{fits} >= 8 ? min({font_size() - 1}, floor({fits})) : 0"}


def vega_heatmap(spec: hm.HeatmapSpec, *, height: int, x_title: str = "", y_title: str = "",
                 projector: bool = False, extra: Sequence[dict[str, Any]] = ()) -> Chart:
    """One heatmap as (data, Vega-Lite spec), as wide as its container and ``height`` pixels high.

    ``extra`` layers are drawn on top, on the same axes (e.g. rules between column blocks).
    """
    layers = _layers(spec, x_title=x_title, y_title=y_title, numbers=_texts(spec, projector), height=height)
    chart = {"width": "container", "height": height, "layer": layers + list(extra)}
    if spec.title:
        chart["title"] = {"text": spec.title, "anchor": "start", "fontSize": font_size() + 1,
                          "color": label_colour()}
    return _frame(spec), chart


def text_fits(spec: hm.HeatmapSpec, width: int, size: int) -> bool:
    """Whether the longest cell text of ``spec`` fits across a cell when the map is ``width`` pixels wide."""
    longest = max((len(str(t)) for t in spec.text.ravel()), default=1)
    return width / spec.values.shape[1] >= 0.6 * size * longest + 6


def vega_row(specs: Sequence[hm.HeatmapSpec], titles: Sequence[str], *, height: int, width: int,
             projector: bool = False, stacked: bool = False) -> Chart:
    """Several titled heatmaps, each ``width`` pixels wide, side by side (row labels on the first only) or
    ``stacked`` one above the other; each keeps its own colour range (one colour bar when they share it)."""
    data = pa.concat_tables([_frame(s, k) for k, s in enumerate(specs)])
    size = font_size() - (1 if stacked else 3)  # side by side, the cells are narrower
    panels = []
    for k, (spec, title) in enumerate(zip(specs, titles, strict=True)):
        numbers = _texts(spec, projector) and text_fits(spec, width, size)
        layers = _layers(spec, x_title="", y_title="", numbers=numbers, panel=k, text_size=size, width=width,
                         height=height)
        if k and not stacked:
            layers[0]["encoding"]["y"]["axis"] = {"labels": False, "ticks": False, "title": None, "domain": False}
        panels.append({"width": width, "height": height,
                       "title": {"text": title, "fontSize": font_size(), "color": label_colour()},
                       "layer": layers})
    shared = len({(s.scale, s.zmin, s.zmax) for s in specs}) == 1  # one colour bar serves them all
    return data, {"vconcat" if stacked else "hconcat": panels, "spacing": 28 if stacked else 12,
                  "autosize": {"type": "pad"}, "resolve": {"scale": {"color": "shared" if shared else "independent"}}}


def show_vega(chart: Chart, *, key: str, stretch: bool = True) -> None:
    """Draw a chart of this module (full width when ``stretch``)."""
    data, spec = chart
    st.vega_lite_chart(data, vega_locale(spec), width="stretch" if stretch else "content", key=key)
