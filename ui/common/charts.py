"""Plotly chart builders shared by the pages (heatmaps, rows and grids of heatmaps, curves), their colours, the
modebar config, and the layer/head picker the attention views share.

Every heatmap carries its numbers: hover always shows the value, and small matrices print it in the cells, so a
student can check a cell by hand and a colour-blind reader never depends on colour alone. Attention weights
(a 0..1 scale) print as rounded percentages ("31%", "<1%"), which a class reads faster than 2.38e-07.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ui.common import state
from ui.common.urlstate import settle_choice

# Perceptually uniform, colour-blind-safe sequential scales first; the default is Viridis.
DIVERGING_SCALE = "RdBu_r"  # blue = negative, red = positive; readable with the common colour deficiencies
MAX_CELLS_WITH_TEXT = 16  # print numbers in cells when both sides are at most this long...
MAX_CELLS_WITH_TEXT_PROJECTOR = 10  # ...or this long in projector mode, whose larger numbers need wider cells
# Okabe-Ito's colour-blind-safe categorical colours, black replaced by its grey (black vanishes on a dark theme).
CATEGORICAL = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999")
DASHES = ("solid", "dash", "dot")  # the 9th to 16th series reuse the colours dashed, the 17th to 24th dotted
RADIO_MAX = 8  # pickers with more choices than this use a drop-down instead of radio buttons
LABEL_COLOURS = {"light": "#1F2933", "dark": "#E6EAF0"}  # panel titles: the themes' text colours, not grey
TITLE_CHARS = {False: 44, True: 26}  # characters per title line, normally and in projector mode
# Attention weights are coloured on one fixed 0..1 scale, so that random attention (every weight near 1/S) looks
# flat; the sidebar can stretch the colours to each map's own range instead.
ATTENTION_SCALES = {"fixed": "Fixed 0 to 1", "stretch": "Stretch to each map"}
NEAR_UNIFORM = 0.05  # a map is "nearly uniform" when in every row the weights lie closer together than this
UNIFORM_MARK = "≈ uniform"  # the mark on a nearly uniform panel of a grid


def colorscale() -> str:
    """The sequential colour scale the user chose in the sidebar."""
    return st.session_state.get(state.COLORSCALE, state.SEQUENTIAL_SCALES[0])


def projector() -> bool:
    """Whether projector mode is on."""
    return bool(st.session_state.get(state.PRESENTATION, False))


def stretch_attention() -> bool:
    """Whether the sidebar asks to stretch attention colours to each map's range (default: fixed 0 to 1)."""
    return st.session_state.get(state.ATTENTION_SCALE, "fixed") == "stretch"


def attention_range(weights: np.ndarray) -> tuple[float, float]:
    """The colour range of attention ``weights``: 0 to 1, or their own min to max when stretched."""
    if not stretch_attention():
        return 0.0, 1.0
    w = np.asarray(weights, dtype=float)
    low, high = (float(np.nanmin(w)), float(np.nanmax(w))) if w.size else (0.0, 1.0)
    return low, max(high, low + 1e-9)


def row_spread(weights: np.ndarray) -> float:
    """The largest ``max − min`` of one row of attention weights ``(..., S)``, over the keys the row may see.

    Masked keys (weight exactly 0) are left out, and so are rows that see a single key (a causal mask's first
    row has nothing to spread). Only when no row sees two keys (one-hot attention) do the zeros count.
    """
    w = np.asarray(weights, dtype=float)
    w = w.reshape(-1, w.shape[-1]) if w.ndim else w.reshape(1, 1)
    seen = w > 0
    several = seen.sum(axis=1) >= 2
    if not several.any():
        return float((w.max(axis=1) - w.min(axis=1)).max()) if w.size else 0.0
    spans = np.where(seen, w, -np.inf).max(axis=1) - np.where(seen, w, np.inf).min(axis=1)
    return float(spans[several].max())


def nearly_uniform(weights: np.ndarray) -> bool:
    """Whether every row of ``weights`` spreads its attention almost evenly (see :data:`NEAR_UNIFORM`)."""
    return row_spread(weights) < NEAR_UNIFORM


def uniform_note(weights: np.ndarray) -> str:
    """"nearly uniform: max − min < 0.05 in every row" for such a map, else ""."""
    return f"nearly uniform: max − min < {NEAR_UNIFORM:g} in every row" if nearly_uniform(weights) else ""


def font_size() -> int:
    """Base chart font size; larger in projector mode."""
    return 18 if projector() else 13


def label_colour() -> str:
    """A dark label colour on the light theme and a light one on the dark theme (readable from the back)."""
    theme = getattr(getattr(st, "context", None), "theme", None)
    return LABEL_COLOURS["dark" if getattr(theme, "type", None) == "dark" else "light"]


def title_lines(title: str, width: int | None = None) -> list[str]:
    """A chart title broken between words into lines of at most ``width`` characters (never cut short).

    The default width is narrower in projector mode, where the font is larger.
    """
    lines = textwrap.wrap(title, width or TITLE_CHARS[projector()], break_long_words=False, break_on_hyphens=False)
    return lines or [""]


def _labels(labels: Sequence[str] | None, n: int) -> list[str]:
    if labels is None or len(labels) != n:
        return [str(i) for i in range(n)]
    # Plotly merges duplicate category labels; a zero-width space per repeat keeps them apart.
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(f"{label}{chr(0x200B) * (seen[label] - 1)}")
    return out


def percent_text(value: float) -> str:
    """A weight in 0..1 as a rounded percentage: "31%", "<1%" for a tiny non-zero weight, "0%" for none."""
    if not np.isfinite(value):
        return ""
    if 0 < value < 0.005:
        return "<1%"
    return f"{100 * value:.0f}%"


def _cell_text(z: np.ndarray, decimals: int, percent: bool = False) -> np.ndarray:
    if percent:
        return np.vectorize(percent_text, otypes=[str])(z)
    return np.vectorize(lambda v: f"{v:.{decimals}f}", otypes=[str])(z)


def cells_with_text() -> int:
    """The longest side of a matrix that still gets its numbers printed in the cells (shorter in projector mode)."""
    return MAX_CELLS_WITH_TEXT_PROJECTOR if projector() else MAX_CELLS_WITH_TEXT


def _text(z: np.ndarray, decimals: int, percent: bool = False) -> np.ndarray | None:
    if max(z.shape) > cells_with_text():
        return None
    return _cell_text(z, decimals, percent)


def series_style(i: int) -> tuple[str, str]:
    """Colour and line dash of the ``i``-th series (0-based): Okabe-Ito colours, then the same colours dashed."""
    return CATEGORICAL[i % len(CATEGORICAL)], DASHES[(i // len(CATEGORICAL)) % len(DASHES)]


def heatmap_trace(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
                  zmin: float | None = None, zmax: float | None = None, diverging: bool = False,
                  decimals: int = 2, showscale: bool = True, hover_name: str = "value",
                  numbers: bool | None = None, scale: str | list | None = None,
                  percent: bool | None = None) -> go.Heatmap:
    """One heatmap trace with values on hover (and in the cells when the matrix is small).

    Args:
        numbers: print the values in the cells; ``None`` does so when both sides are at most cells_with_text().
        scale: a colour scale instead of the diverging one or the sidebar's sequential one.
        percent: print the cells as rounded percentages; ``None`` does so for weights (a 0..1 scale, decimals > 0).
    """
    z = np.asarray(z, dtype=float)
    if percent is None:
        percent = not diverging and zmin == 0 and zmax == 1 and decimals > 0
    text = _text(z, decimals, percent) if numbers is None else (_cell_text(z, decimals, percent) if numbers else None)
    if diverging and zmin is None and zmax is None:
        bound = float(np.nanmax(np.abs(z))) if z.size else 1.0
        zmin, zmax = -bound, bound
    return go.Heatmap(
        z=z, x=_labels(x, z.shape[1]), y=_labels(y, z.shape[0]), zmin=zmin, zmax=zmax,
        colorscale=scale or (DIVERGING_SCALE if diverging else colorscale()), showscale=showscale,
        text=text, texttemplate="%{text}" if text is not None else None, textfont=dict(size=font_size()),
        hovertemplate=f"row %{{y}}<br>column %{{x}}<br>{hover_name} %{{z:.4f}}<extra></extra>",
    )


def heatmap(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
            title: str = "", x_title: str = "", y_title: str = "", zmin: float | None = None,
            zmax: float | None = None, diverging: bool = False, decimals: int = 2, height: int | None = None,
            hover_name: str = "value", numbers: bool | None = None) -> go.Figure:
    """A single heatmap figure, rows top to bottom (matrix layout, like the attention matrix in the paper)."""
    z = np.asarray(z, dtype=float)
    fig = go.Figure(heatmap_trace(z, x, y, zmin=zmin, zmax=zmax, diverging=diverging, decimals=decimals,
                                  hover_name=hover_name, numbers=numbers))
    ticks = dict(color=label_colour())
    fig.update_yaxes(autorange="reversed", title=y_title, type="category", tickfont=ticks)
    fig.update_xaxes(title=x_title, type="category", side="bottom", tickfont=ticks)
    side = max(260, min(720, 40 + round(2.2 * font_size()) * z.shape[0]))  # rows as tall as the cell text needs
    return style(fig, title=title, height=height or side)


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
            column only, ``"none"``, or ``"auto"`` (all with at most 4 panels, else the first column when ``y``
            labels are given).
        spacing: horizontal gap between panels as a share of the width (default: narrower with more columns).
        categories: treat x and y as categories (keeps repeated token labels apart).
    """
    rows, cols = len(grid), max(len(r) for r in grid)
    fig = make_subplots(rows=rows, cols=cols, column_titles=list(col_titles),
                        row_titles=list(row_titles) if row_titles is not None else None,
                        horizontal_spacing=0.02 + 0.04 / cols if spacing is None else spacing,
                        vertical_spacing=0.05 + 0.06 / rows)
    for r, row in enumerate(grid):
        for c, z in enumerate(row):
            trace = heatmap_trace(z, x, y, zmin=zmin, zmax=zmax, diverging=diverging, showscale=r == c == 0,
                                  numbers=None if numbers else False)
            fig.add_trace(trace, row=r + 1, col=c + 1)
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
    size = font_size() + 1
    fig.update_annotations(font=dict(size=size, color=label_colour()))
    top = (48 if titled else 38) + size + 12  # the toolbar takes the top ~35 px; the panel titles sit below it
    fig.update_layout(margin=dict(t=top, r=10 + (size + 12 if row_titles else 0)))


def attention_heatmap(weights: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
                      title: str = "", **options: Any) -> go.Figure:
    """One attention map on the attention colour range (:func:`attention_range`); the title flags a nearly
    uniform map. ``options`` go to :func:`heatmap`."""
    zmin, zmax = attention_range(weights)
    note = uniform_note(weights)
    title = f"{title} — {note}" if title and note else title or note
    return heatmap(weights, x, y, title=title, zmin=zmin, zmax=zmax, hover_name="weight", **options)


def attention_grid(grid: Sequence[Sequence[np.ndarray]], **options: Any) -> go.Figure:
    """:func:`heatmap_grid` of attention maps on one attention colour range, nearly uniform panels marked
    :data:`UNIFORM_MARK` in their middle."""
    zmin, zmax = attention_range(np.concatenate([np.ravel(m) for row in grid for m in row]))
    fig = heatmap_grid(grid, zmin=zmin, zmax=zmax, **options)
    cols = max(len(r) for r in grid)
    for r, row in enumerate(grid):
        for c, weights in enumerate(row):
            if nearly_uniform(weights):
                k = r * cols + c + 1
                axis = "" if k == 1 else str(k)
                fig.add_annotation(xref=f"x{axis} domain", yref=f"y{axis} domain", x=0.5, y=0.5, showarrow=False,
                                   text=UNIFORM_MARK, bgcolor="rgba(255,255,255,0.8)", font=dict(color="#222"))
    return fig


def heatmap_row(mats: Sequence[np.ndarray], titles: Sequence[str], x: Sequence[str] | None = None,
                y: Sequence[str] | None = None, *, numbers: bool = True, height: int | None = None,
                zmin: float | None = None, zmax: float | None = None, diverging: bool = True,
                **options) -> go.Figure:
    """Same-shaped matrices side by side on one colour scale.

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
    return heatmap_grid([list(mats)], col_titles=titles, x=x, y=y, zmin=zmin, zmax=zmax, diverging=diverging,
                        numbers=numbers, height=height or max(260, min(640, 70 + 28 * rows)), **options)


def line_chart(series: dict[str, tuple[Sequence[float], Sequence[float]]], *, title: str = "",
               x_title: str = "", y_title: str = "", height: int = 320, log_y: bool = False) -> go.Figure:
    """Curves from ``{name: (xs, ys)}``."""
    fig = go.Figure()
    for name, (xs, ys) in series.items():
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines", name=name))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title=y_title, type="log" if log_y else "linear")
    return style(fig, title=title, height=height)


def style(fig: go.Figure, *, title: str = "", height: int = 360) -> go.Figure:
    """Common layout: readable fonts (larger in projector mode) and tight margins.

    No plotly template is set: Streamlit's chart theme then follows the app's light or dark theme, and figures
    build several times faster (a named template costs ~40 ms per figure).
    """
    shown = sum(getattr(trace, "showlegend", False) is not False for trace in fig.data)  # images have no legend
    legend = shown > 1 and fig.layout.showlegend is not False
    top = _top_margin(titled=bool(title), legend=legend)
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left", yref="container", y=1.0, yanchor="top", pad=dict(t=10))
        if title else None,
        height=height, margin=dict(l=10, r=10, t=top, b=10),
        font=dict(size=font_size()),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    return fig


def _top_margin(*, titled: bool, legend: bool) -> int:
    """The title sits at the very top; a legend above the plot gets its own line under it instead of covering it."""
    return (16 + 2 * font_size() if titled else 20) + (2 * font_size() if legend else 0)


LEGEND_PLACES = {
    "below": dict(orientation="h", yanchor="top", y=-0.28, x=0, xanchor="left"),
    "right": dict(orientation="v", x=1.02, xanchor="left", y=1.0, yanchor="top"),
}


def move_legend(fig: go.Figure, where: str) -> go.Figure:
    """Put the legend ``"below"`` the plot or to its ``"right"``; the top margin then holds only the title."""
    fig.update_layout(legend=LEGEND_PLACES[where],
                      margin=dict(t=_top_margin(titled=bool(fig.layout.title.text), legend=False)))
    if where == "below":
        fig.update_layout(margin=dict(b=20))
    return fig


def image_format() -> str:
    """What the camera button above a chart saves: "png" or "svg" (the sidebar's *Chart downloads*)."""
    return "svg" if st.session_state.get(state.IMAGE_FORMAT) == "SVG" else "png"


def chart_config() -> dict[str, Any]:
    """Plotly's modebar: no logo, and a camera button that saves PNG or SVG (see image_format)."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": image_format(), "scale": 2}}


def show(fig: go.Figure, *, key: str | None = None) -> None:
    """Draw a figure full-width with the modebar of :func:`chart_config`."""
    st.plotly_chart(fig, width="stretch", config=chart_config(), key=key)


def side_by_side(mats: Sequence[np.ndarray], titles: Sequence[str], rows: Sequence[str], cols: Sequence[str], *,
                 key: str, numbers: bool = True) -> None:
    """Draw several same-shaped matrices in one figure on one diverging colour scale (e.g. Q, K and V).

    ``numbers=False`` keeps the cells free of printed values (hover still shows them).
    """
    fig = heatmap_row(mats, titles, cols, rows, numbers=numbers)
    fig.update_layout(margin=dict(l=10, r=10, t=30, b=10))
    show(fig, key=key)


def layer_head_picker(layers: int, heads: int, *, keys: tuple[str, str], helps: tuple[str, str],
                      columns: Sequence | None = None, radio_max: int = RADIO_MAX) -> tuple[int, int]:
    """Which layer and head a view shows, as radio buttons (a drop-down beyond ``radio_max``); returns 0-based.

    Args:
        keys: session-state keys of the layer and the head choice (1-based values, kept in the URL).
        helps: help texts of the two widgets.
        columns: the two containers to draw the widgets in (default: two new columns).
        radio_max: the most choices shown as radio buttons; 0 always uses drop-downs (compact, e.g. in a row of
            buttons).
    """

    picked = []
    for column, label, n, key, text in zip(columns or st.columns(2), ("Layer", "Head"), (layers, heads), keys, helps,
                                           strict=True):
        options = list(range(1, n + 1))
        settle_choice(key, options, why=f"the model has {n} {label.lower()}{'s' if n != 1 else ''}")
        with column:
            if n <= radio_max:
                value = st.radio(label, options, key=key, horizontal=True, help=text)
            else:
                value = st.selectbox(label, options, key=key, help=text)
        picked.append(value - 1)
    return picked[0], picked[1]
