"""Plotly heatmaps drawn from one :class:`~explorer.render.heatmap.HeatmapSpec` (single maps, rows and grids of maps),
curves, and the layer/head picker the attention views share.

Every heatmap carries its numbers: hover always shows the value, and small matrices print it in the cells, so a
student can check a cell by hand and a colour-blind reader never depends on colour alone. Attention weights
(a 0..1 scale) print as rounded percentages ("31%", "<1%"), which a class reads faster than 2.38e-07. Colours
come from the one mapping of :mod:`explorer.render.heatmap`, which the Vega-Lite charts and the exports use too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from explorer.i18n import N_, _, ngettext, num
from explorer.render import heatmap as hm
from explorer.render.fonts import width_units
from explorer.render.heatmap import NEAR_UNIFORM as NEAR_UNIFORM
from explorer.render.heatmap import nearly_uniform as nearly_uniform
from explorer.render.heatmap import percent_text as percent_text
from explorer.render.heatmap import row_spread as row_spread
from ui.common.chart_style import CATEGORICAL as CATEGORICAL
from ui.common.chart_style import LABEL_COLOURS as LABEL_COLOURS
from ui.common.chart_style import TITLE_CHARS as TITLE_CHARS
from ui.common.chart_style import chart_config as chart_config
from ui.common.chart_style import colorscale, font_size, label_colour, show, stretch_attention, style, style_layout
from ui.common.chart_style import half_title_chars as half_title_chars
from ui.common.chart_style import log_tick_values as log_tick_values
from ui.common.chart_style import move_legend as move_legend
from ui.common.chart_style import series_style as series_style
from ui.common.chart_style import title_lines as title_lines
from ui.common.figure_dict import figure, panel_look, shows_legend
from ui.common.theme import phone, projector
from ui.common.urlstate import settle_choice

DIVERGING_SCALE = hm.DIVERGING
MAX_CELLS_WITH_TEXT = 16  # print numbers in cells when both sides are at most this long...
MAX_CELLS_WITH_TEXT_PROJECTOR = 10  # ...or this long in projector mode, whose larger numbers need wider cells
LOG_TICKS = 6  # the most ticks on a log axis of a line chart
GAP_LABEL_CHARS = 3  # the longest row label that fits in the gap between two panels of a grid
RADIO_MAX = 8  # pickers with more choices than this use a drop-down instead of radio buttons
# Attention weights are coloured on one fixed 0..1 scale, so that random attention (every weight near 1/S) looks
# flat; the sidebar can stretch the colours to each map's own range instead.
ATTENTION_SCALES = {"fixed": N_("Fixed 0 to 1"), "stretch": N_("Stretch to each map")}  # shown through _()
UNIFORM_MARK = N_("≈ uniform")  # the mark on a nearly uniform panel of a grid
UNIFORM_MARK_COLUMNS = 8  # ... of up to this many columns; wider grids' panels are too narrow for more than "≈"


def attention_range(weights: np.ndarray) -> tuple[float, float]:
    """The colour range of attention ``weights``: 0 to 1, or their own min to max when the sidebar stretches."""
    return hm.attention_range(weights, stretch=stretch_attention())


def uniform_note(weights: np.ndarray) -> str:
    """"nearly uniform: max − min < 0.05 in every row" for such a map, else ""."""
    return hm.uniform_note() if nearly_uniform(weights) else ""


def plotly_scale(scale: str) -> list[list]:
    """A scale of :mod:`explorer.render.heatmap` as a Plotly colour scale (the same evenly spaced stops)."""
    stops = hm.stops(scale)
    return [[i / (len(stops) - 1), colour] for i, colour in enumerate(stops)]


def _labels(labels: Sequence[str] | None, n: int) -> list[str]:
    # Plotly merges duplicate category labels; a zero-width space per repeat keeps them apart.
    seen: dict[str, int] = {}
    out = []
    for label in map(hm.axis_label, hm.labels(labels, n)):
        seen[label] = seen.get(label, 0) + 1
        out.append(f"{label}{chr(0x200B) * (seen[label] - 1)}")
    return out


def cells_with_text() -> int:
    """The longest side of a matrix that still gets its numbers printed in the cells (shorter in projector mode)."""
    return MAX_CELLS_WITH_TEXT_PROJECTOR if projector() else MAX_CELLS_WITH_TEXT


def hover_template(name: str) -> str:
    """A heatmap cell's hover text: its row, its column and its value called ``name`` (Plotly's %{…} fields)."""
    row, column = _("row"), _("column")
    return f"{row} %{{y}}<br>{column} %{{x}}<br>{name} %{{z:.4f}}<extra></extra>"


def spec_heatmap(spec: hm.HeatmapSpec, *, numbers: bool | None = None, showscale: bool = True) -> dict[str, Any]:
    """One Plotly heatmap trace of ``spec``, as a dict: its colours, its cell text (printed when ``numbers``, or by
    default when both sides are at most :func:`cells_with_text`) and its values on hover."""
    z = spec.values
    # No text font size: Plotly's own ("auto") prints the chart's size where a cell has the room and a smaller one
    # where it has not. Only the browser knows a cell's width, and a fixed size ran "<1%<1%" together in the narrow
    # cells of a half-width column.
    trace = dict(type="heatmap", z=z, x=_labels(spec.cols, z.shape[1]), y=_labels(spec.rows, z.shape[0]),
                 zmin=spec.zmin, zmax=spec.zmax, colorscale=plotly_scale(spec.scale), showscale=showscale,
                 hovertemplate=hover_template(_(spec.hover_name)))
    if (max(z.shape) <= cells_with_text()) if numbers is None else numbers:
        trace |= dict(text=np.asarray(spec.text, dtype=object), texttemplate="%{text}")
    return trace


def spec_trace(spec: hm.HeatmapSpec, *, numbers: bool | None = None, showscale: bool = True) -> go.Heatmap:
    """:func:`spec_heatmap` as a Plotly trace object (for figures built with Plotly's own methods)."""
    return go.Heatmap(spec_heatmap(spec, numbers=numbers, showscale=showscale))


def heatmap_dict(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
                 zmin: float | None = None, zmax: float | None = None, diverging: bool = False,
                 decimals: int = 2, showscale: bool = True, hover_name: str | None = None,
                 numbers: bool | None = None, scale: str | list | None = None,
                 percent: bool | None = None) -> dict[str, Any]:
    """One heatmap trace, as a dict, with values on hover (and in the cells when the matrix is small).

    Args:
        numbers: print the values in the cells; ``None`` does so when both sides are at most cells_with_text().
        scale: a scale of :mod:`explorer.render.heatmap` instead of the diverging one or the sidebar's sequential one,
            or a Plotly colour list for colours that are not a heatmap scale (e.g. black to red for a red channel).
        percent: print the cells as rounded percentages; ``None`` does so for weights (a 0..1 scale, decimals > 0).
    """
    z = np.asarray(z, dtype=float)
    if percent is None:
        percent = not diverging and zmin == 0 and zmax == 1 and decimals > 0
    named = scale if isinstance(scale, str) else None
    spec = hm.matrix_spec(z, y, x, scale=named or colorscale(), diverging=diverging and named is None, zmin=zmin,
                          zmax=zmax, decimals=decimals, hover_name=hover_name or _("value"), percent=percent)
    trace = spec_heatmap(spec, numbers=numbers, showscale=showscale)
    return trace | {"colorscale": scale} if isinstance(scale, list) else trace


def heatmap_trace(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None,
                  **options: Any) -> go.Heatmap:
    """:func:`heatmap_dict` as a Plotly trace object (for figures built with Plotly's own methods)."""
    return go.Heatmap(heatmap_dict(z, x, y, **options))


def spec_figure(spec: hm.HeatmapSpec, *, x_title: str = "", y_title: str = "", height: int | None = None,
                numbers: bool | None = None, title_chars: int | None = None) -> go.Figure:
    """A single heatmap figure of ``spec``, rows top to bottom (matrix layout, like the attention matrix in the
    paper); ``title_chars`` wraps its title for a narrow column."""
    data = [spec_heatmap(spec, numbers=numbers)]
    ticks = dict(color=label_colour())
    side = max(260, min(720, 40 + round(2.2 * font_size()) * spec.values.shape[0]))  # rows as tall as their text
    layout = style_layout(title=spec.title, height=height or side, legend=shows_legend(data),
                          title_chars=title_chars) | dict(
        yaxis=dict(autorange="reversed", title=dict(text=y_title), type="category", tickfont=ticks),
        xaxis=dict(title=dict(text=x_title), type="category", side="bottom", tickfont=ticks),
    )
    return figure(data, layout)


def heatmap(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
            title: str = "", x_title: str = "", y_title: str = "", zmin: float | None = None,
            zmax: float | None = None, diverging: bool = False, decimals: int = 2, height: int | None = None,
            hover_name: str | None = None, numbers: bool | None = None) -> go.Figure:
    """A single heatmap figure of any matrix (see :func:`heatmap_trace` for the cell text)."""
    z = np.asarray(z, dtype=float)
    percent = not diverging and zmin == 0 and zmax == 1 and decimals > 0
    spec = hm.matrix_spec(z, y, x, scale=colorscale(), diverging=diverging, zmin=zmin, zmax=zmax, decimals=decimals,
                          title=title, hover_name=hover_name or _("value"), percent=percent)
    return spec_figure(spec, x_title=x_title, y_title=y_title, height=height, numbers=numbers)


def grid_spacing(cols: int) -> float:
    """The gap between two panels of a grid of ``cols`` columns, as a share of the figure's width."""
    return 0.02 + 0.04 / cols


def heatmap_grid(grid: Sequence[Sequence[np.ndarray]], *, col_titles: Sequence[str],
                 row_titles: Sequence[str] | None = None, x: Sequence[str] | None = None,
                 y: Sequence[str] | None = None, zmin: float = 0.0, zmax: float = 1.0, diverging: bool = False,
                 numbers: bool = False, title: str = "", cell_px: int = 170, height: int | None = None,
                 x_title: str = "", y_title: str = "", x_ticks: bool | str = "auto", y_ticks: str = "auto",
                 spacing: float | None = None, categories: bool = True) -> go.Figure:
    """A rows x columns grid of heatmaps sharing one colour scale (layers x heads, or one row of matrices).

    Token labels sit on the outer row and column by default, so a class can tell which word attends where.

    Args:
        numbers: print values in the cells of small matrices (hover always shows them).
        x_title, x_ticks: the bottom row's x-axis title; tick labels on every panel (``True``), none (``False``),
            or ``"auto"``: on the bottom row when ``x`` labels are given.
        y_title, y_ticks: the y-axis title (first column, bottom row); tick labels on ``"all"`` panels, the ``"first"``
            column only, ``"none"``, or ``"auto"`` (all with at most 4 panels and labels short enough for the gap
            between two panels, else the first column when ``y`` labels are given).
        spacing: horizontal gap between panels as a share of the width (default: :func:`grid_spacing`).
        categories: treat x and y as categories (keeps repeated token labels apart).
    """
    rows, cols = len(grid), max(len(r) for r in grid)
    fig = make_subplots(rows=rows, cols=cols, column_titles=list(col_titles),
                        row_titles=list(row_titles) if row_titles is not None else None,
                        horizontal_spacing=grid_spacing(cols) if spacing is None else spacing,
                        vertical_spacing=0.05 + 0.06 / rows)
    for r, row in enumerate(grid):
        for c, z in enumerate(row):
            trace = heatmap_trace(z, x, y, zmin=zmin, zmax=zmax, diverging=diverging, showscale=r == c == 0,
                                  numbers=None if numbers else False)
            fig.add_trace(trace, row=r + 1, col=c + 1)
    long_labels = max((width_units(str(v)) for v in y or ()), default=0) > GAP_LABEL_CHARS
    if y_ticks == "auto" and cols > 1 and (long_labels or phone()):
        y_ticks = "first"  # a longer label of the second column (any, on a phone) would be drawn over the first map
    _grid_axes(fig, rows, cols, x_ticks=x_ticks, y_ticks=y_ticks, labelled=(x is not None, y is not None),
               categories=categories, titles=(x_title, y_title))
    height = height or max(260, min(1400, 70 + 2 * font_size() + cell_px * rows))  # panel titles need the room
    style(fig, title=title, height=height)
    panel_titles(fig, titled=bool(title), row_titles=row_titles is not None)
    return fig


def _grid_axes(fig: go.Figure, rows: int, cols: int, *, x_ticks: bool | str, y_ticks: str,
               labelled: tuple[bool, bool], categories: bool, titles: tuple[str, str]) -> None:
    """Tick labels (readable size) on the panels that carry them; axis titles on the outer row and column."""
    axis_type = "category" if categories else "-"
    tick_font = dict(size=max(11, font_size() - 2), color=label_colour())
    y_all = y_ticks == "all" or (y_ticks == "auto" and cols * rows <= 4)
    fig.update_yaxes(autorange="reversed", showticklabels=y_all, type=axis_type, tickfont=tick_font,
                     automargin=True)
    if y_ticks == "first" or (y_ticks == "auto" and not y_all and labelled[1]):
        fig.update_yaxes(showticklabels=True, col=1)
    fig.update_yaxes(title=titles[1], col=1, row=rows)  # once: a title per row would overlap its neighbours
    x_all = x_ticks is True
    fig.update_xaxes(showticklabels=x_all, type=axis_type, tickfont=tick_font, automargin=True)
    if x_ticks == "auto" and labelled[0]:
        fig.update_xaxes(showticklabels=True, row=rows)
    fig.update_xaxes(title=titles[0], row=rows)


def panel_titles(fig: go.Figure, *, titled: bool, row_titles: bool) -> None:
    """Panel titles of a subplot grid (heads, layers) large and dark, clear of the chart's toolbar (top right).

    Call it after :func:`style`; ``titled``: the figure has a title of its own; ``row_titles``: it has row titles
    on the right, which need room in the margin.
    """
    font, margin = panel_look(titled=titled, row_titles=row_titles)
    fig.update_annotations(font=font)
    fig.update_layout(margin=margin)


def attention_spec(weights: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
                   title: str = "") -> hm.HeatmapSpec:
    """The spec of one attention map with the sidebar's colour scale and its fixed or stretched range."""
    return hm.attention_spec(weights, y, x, scale=colorscale(), stretch=stretch_attention(), title=title)


def attention_grid(grid: Sequence[Sequence[np.ndarray]], **options: Any) -> go.Figure:
    """:func:`heatmap_grid` of attention maps on one attention colour range, nearly uniform panels marked
    :data:`UNIFORM_MARK` in their middle."""
    zmin, zmax = attention_range(np.concatenate([np.ravel(m) for row in grid for m in row]))
    fig = heatmap_grid(grid, zmin=zmin, zmax=zmax, **options)
    cols = max(len(r) for r in grid)
    mark = _(UNIFORM_MARK) if cols <= UNIFORM_MARK_COLUMNS else "≈"  # narrow panels: the sign, which the caption says
    for r, row in enumerate(grid):
        for c, weights in enumerate(row):
            if nearly_uniform(weights):
                k = r * cols + c + 1
                axis = "" if k == 1 else str(k)
                fig.add_annotation(xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0.5, showarrow=False,
                                   text=mark, bgcolor="rgba(255,255,255,0.8)", font=dict(color="#222"))
    return fig


def heatmap_row(mats: Sequence[np.ndarray], titles: Sequence[str], x: Sequence[str] | None = None,
                y: Sequence[str] | None = None, *, numbers: bool = True, height: int | None = None,
                zmin: float | None = None, zmax: float | None = None, diverging: bool = True,
                **options) -> go.Figure:
    """Same-shaped matrices side by side on one colour scale (on a phone, one under the other, named on the right).

    A bound not given comes from the data: ±(largest magnitude) when diverging, else the data's min or max.
    ``options`` go to :func:`heatmap_grid` (axis titles, ticks, spacing).
    """
    if zmin is None or zmax is None:
        if diverging:
            bound = max(float(np.abs(m).max()) for m in mats) or 1.0
            low, high = -bound, bound
        else:
            low, high = min(float(np.min(m)) for m in mats), max(float(np.max(m)) for m in mats)
        zmin, zmax = low if zmin is None else zmin, high if zmax is None else zmax
    rows = len(y) if y is not None else np.asarray(mats[0]).shape[0]
    options = {"x_ticks": True, "y_ticks": "first", "spacing": 0.04} | options
    height = height or max(260, min(640, 70 + 28 * rows))
    if phone() and len(mats) > 1:  # a third of a phone each: their titles and axis titles ran into one another
        return heatmap_grid([[m] for m in mats], col_titles=(), row_titles=titles, x=x, y=y, zmin=zmin, zmax=zmax,
                            diverging=diverging, numbers=numbers, height=min(1400, height * len(mats)), **options)
    return heatmap_grid([list(mats)], col_titles=titles, x=x, y=y, zmin=zmin, zmax=zmax, diverging=diverging,
                        numbers=numbers, height=height, **options)


def line_chart(series: dict[str, tuple[Sequence[float], Sequence[float]]], *, title: str = "",
               x_title: str = "", y_title: str = "", height: int = 320, log_y: bool = False) -> go.Figure:
    """Curves from ``{name: (xs, ys)}``; ``log_y``: a log y axis with a few round ticks, each labelled in full."""
    data = [dict(type="scatter", x=list(xs), y=list(ys), mode="lines", name=name) for name, (xs, ys) in series.items()]
    yaxis = dict(title=dict(text=y_title), type="log" if log_y else "linear")
    positive = [y for _xs, ys in series.values() for y in ys if math.isfinite(y) and y > 0]
    if log_y and positive:
        ticks = log_tick_values(min(positive), max(positive), LOG_TICKS)
        yaxis |= dict(tickmode="array", tickvals=ticks, tickformat="~g")
    layout = style_layout(title=title, height=height, legend=shows_legend(data)) | dict(
        xaxis=dict(title=dict(text=x_title)), yaxis=yaxis,
    )
    return figure(data, layout)


def side_by_side(mats: Sequence[np.ndarray], titles: Sequence[str], rows: Sequence[str], cols: Sequence[str], *,
                 key: str, numbers: bool = True) -> None:
    """Draw several same-shaped matrices in one figure on one diverging colour scale (e.g. Q, K and V).

    ``numbers=False`` keeps the cells free of printed values (hover still shows them).
    """
    fig = heatmap_row(mats, titles, cols, rows, numbers=numbers)
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10))
    show(fig, key=key)


def layer_head_picker(layers: int, heads: int, *, keys: tuple[str, str], helps: tuple[str, str],
                      columns: Sequence | None = None, radio_max: int = RADIO_MAX,
                      head_names: Callable[[int], str] | None = None) -> tuple[int, int]:
    """Which layer and head a view shows, as radio buttons (a drop-down beyond ``radio_max``); returns 0-based.

    Args:
        keys: session-state keys of the layer and the head choice (1-based values, kept in the URL).
        helps: help texts of the two widgets.
        columns: the two containers to draw the widgets in (default: two new columns).
        radio_max: the most choices shown as radio buttons; 0 always uses drop-downs (compact, e.g. in a row of
            buttons).
        head_names: how each head (1-based) is written in the head widget (default: its number).
    """

    picked = []
    labels = (_("Layer"), _("Head"))
    rules = (ngettext("the model has {n} layer", "the model has {n} layers", layers).format(n=num(layers)),
             ngettext("the model has {n} head", "the model has {n} heads", heads).format(n=num(heads)))
    for i, (column, label, n, key, text, why) in enumerate(zip(columns or st.columns(2), labels, (layers, heads),
                                                               keys, helps, rules, strict=True)):
        options = list(range(1, n + 1))
        settle_choice(key, options, why=why)
        names = head_names if i == 1 and head_names is not None else str
        with column:
            if n <= radio_max:
                value = st.radio(label, options, key=key, horizontal=True, help=text, format_func=names)
            else:
                value = st.selectbox(label, options, key=key, help=text, format_func=names)
        picked.append(value - 1)
    return picked[0], picked[1]
