"""Attention Lab charts: the step-by-step walkthrough, one head, the layers x heads grid and the token lines view.

Every heatmap shows its values on hover, prints them in the cells when the matrix is small, and has a table or a
download next to it, so nothing depends on reading colours.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from explorer.i18n import _, num
from explorer.render import heatmap as hm
from ui.attention.lab_run import LabRun
from ui.common import charts, exports, tables
from ui.common.chart_style import label_colour, strong_colour
from ui.common.theme import projector
from ui.common.vega_heatmap import show_vega, text_fits, vega_heatmap, vega_row

LINE_BINS = 8  # opacity/width levels of the lines view (one plotly trace per level)
MIN_LINE_WEIGHT = 0.02  # lighter lines are not drawn
GRID_LONG_TITLES = 8  # the grid's columns are titled "Head 1" up to this many heads, "H1" beyond


def numbers_table(z: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, decimals: int = 3) -> None:
    """The numeric alternative of a heatmap: the same matrix as a table."""
    frame = pd.DataFrame(np.round(np.asarray(z, dtype=float), decimals), index=exports.unique_labels(rows, len(rows)),
                         columns=exports.unique_labels(cols, len(cols)))
    tables.dataframe(frame, width="stretch")


def _height(rows: int) -> int:
    """Pixels of a step's heatmap: rows as tall as their printed numbers, within 180 to 560."""
    return max(180, min(560, round(2.2 * charts.font_size()) * rows))


def matrix(z: np.ndarray, rows: Sequence[str], cols: Sequence[str], *, key: str, diverging: bool = True,
           zmin: float | None = None, zmax: float | None = None, hover: str = "value",
           extra: Sequence[dict] = ()) -> None:
    """Draw one matrix as a Vega-Lite heatmap (values in the cells when small, on hover always); weights (not
    diverging, 0..1) print as percentages. ``extra`` layers are drawn on top."""
    z = np.asarray(z, dtype=float)
    if not diverging and hover == "weight":
        spec = hm.attention_spec(z, rows, cols, scale=charts.colorscale(), stretch=charts.stretch_attention())
    else:
        spec = hm.matrix_spec(z, rows, cols, scale=charts.colorscale(), diverging=diverging, zmin=zmin, zmax=zmax,
                              hover_name=hover)
    show_vega(vega_heatmap(spec, height=_height(len(rows)), projector=projector(), extra=extra), key=key)


def masked_matrix(scaled: np.ndarray, mask: np.ndarray | None, tokens: Sequence[str], *, key: str) -> None:
    """Scaled scores with the forbidden cells shown as -∞ (grey cells, "-∞" printed and on hover)."""
    allowed = np.ones_like(scaled, dtype=bool) if mask is None else mask
    z = np.where(allowed, scaled, np.nan)
    text = np.where(allowed, hm.cell_texts(scaled), "-∞").astype(object)
    spec = hm.matrix_spec(z, tokens, tokens, diverging=True, hover_name=_("score"), text=text)
    show_vega(vega_heatmap(spec, height=_height(len(tokens)), projector=projector()), key=key)


STEP_CHART_PX = 520  # about the width of a step's right-hand column, in the wide layout and in projector mode


def matrix_row(mats: Sequence[np.ndarray], titles: Sequence[str], rows: Sequence[str], cols: Sequence[str], *,
               key: str) -> None:
    """Same-shaped matrices on one diverging colour range (e.g. Q, K and V): one above the other, each as wide as
    the column, when only so their numbers fit in the cells; else side by side."""
    bound = max(float(np.abs(m).max()) for m in mats) or 1.0
    specs = [hm.matrix_spec(m, rows, cols, diverging=True, zmin=-bound, zmax=bound) for m in mats]
    across = (STEP_CHART_PX - 60) // len(mats) - 12
    size = charts.font_size()
    stacked = not text_fits(specs[0], across, size - 3) and text_fits(specs[0], STEP_CHART_PX - 60, size - 1)
    chart = vega_row(specs, titles, height=_height(len(rows)), width=STEP_CHART_PX - 60 if stacked else across,
                     projector=projector(), stacked=stacked)
    show_vega(chart, key=key, stretch=False)


def head_blocks(n_heads: int, head_dim: int, selected: int) -> list[dict]:
    """Vega-Lite layers: lines between the heads' column blocks and a red box around the selected head."""
    lines = {"data": {"values": [{"x": h * head_dim} for h in range(1, n_heads)]}, "mark": {"type": "rule",
             "color": "black", "strokeWidth": 2}, "encoding": {"x": {"field": "x", "type": "quantitative"}}}
    box = {"data": {"values": [{"x": selected * head_dim, "x2": (selected + 1) * head_dim}]},
           "mark": {"type": "rect", "fill": None, "stroke": "#d62728", "strokeWidth": 3},
           "encoding": {"x": {"field": "x", "type": "quantitative"}, "x2": {"field": "x2"}}}
    return [lines, box] if n_heads > 1 else [box]


def dot_example(q_row: np.ndarray, k_row: np.ndarray, *, max_terms: int = 6) -> str:
    """'0.12×0.30 + (-0.50)×0.10 + … = 0.41': one cell of Q Kᵀ written out."""
    def fixed(v: float) -> str:
        return f"({num(v, 2)})" if v < 0 else num(v, 2)

    terms = [f"{fixed(a)}×{fixed(b)}" for a, b in zip(q_row[:max_terms], k_row[:max_terms], strict=True)]
    more = " + …" if len(q_row) > max_terms else ""
    return " + ".join(terms) + more + f" = {num(float(q_row @ k_row), 3)}"


def softmax_example(row: np.ndarray, allowed: np.ndarray, *, max_terms: int = 4) -> str:
    """'exp(0.51) / (exp(0.51) + exp(-0.03) + …) = 0.240': one softmax weight written out for the first allowed key.

    Plain text rather than LaTeX: a fraction with a long denominator shrinks to an unreadable size in a caption.
    """
    vals = row[allowed]
    if vals.size == 0:
        return _("every key is masked, so this row is all zeros")
    j = int(np.flatnonzero(allowed)[0])
    shown = " + ".join(f"exp({num(v, 2)})" for v in vals[:max_terms]) + (" + …" if vals.size > max_terms else "")
    top = np.exp(row[j] - vals.max())
    weight = top / np.exp(vals - vals.max()).sum()
    return f"exp({num(row[j], 2)}) / ({shown}) = {num(weight, 3)}"


GRID_PANEL_PX = 900  # about the width the grid's panels share, and the most rows the page gives it (1400 px)
GRID_MAX_PX = 1330
# The grid's plot area, where the panels and their gaps lie, in the narrowest column it is drawn in: 1024 pixels with
# the sidebar open, and on a projector with the sidebar closed. Key labels are spaced for it: the browser alone knows
# the width, and labels spaced for a wide page ran into one another there ("thethethe").
GRID_LABEL_PX = {False: 520, True: 820}


def grid_label_step(run: LabRun) -> tuple[int, int, int]:
    """(panel height in pixels, k_x, k_y): the grid labels every k-th key along the bottom and every k-th query
    down the side; every one (k = 1) whenever a panel leaves one label's height per token. Rows grow, up to the
    page's height, to make room for the query labels; the panels' width is the page's."""
    cell = max(56, min(220, GRID_PANEL_PX // max(run.n_heads, 1)))  # about square maps: a row as high as a column
    need = len(run.tokens) * (max(11, charts.font_size() - 2) + 3)  # one label per token, a little apart
    cell = max(cell, min(need, GRID_MAX_PX // max(len(run.steps), 1)))  # taller rows when the page allows
    heads = max(run.n_heads, 1)
    width = GRID_LABEL_PX[projector()] * (1 - charts.grid_spacing(heads) * (heads - 1)) / heads  # one panel's
    return cell, max(1, math.ceil(need / max(width, 1))), max(1, math.ceil(need / cell))


def _head_titles(run: LabRun, head: str) -> list[str]:
    """The grid's column titles: ``Head 3`` or ``H3``, with the K/V head it reads when heads share them."""
    if not 0 < run.kv_heads < run.n_heads:
        return [head.format(n=h + 1) for h in range(run.n_heads)]
    return [f"H{h + 1} · KV{h // (run.n_heads // run.kv_heads) + 1}" for h in range(run.n_heads)]


def grid_figure(run: LabRun) -> go.Figure:
    """Layers x heads grid of every attention map (like BertViz's model view), on one attention colour scale,
    every token labelled where the panels leave room (see :func:`grid_label_step`)."""
    weights = run.weights()  # (L, H, T, S)
    head = "H{n}" if run.n_heads > GRID_LONG_TITLES else _("Head {n}")  # "Head 10" is wider than a column of 16
    cell, x_step, y_step = grid_label_step(run)
    fig = charts.attention_grid(
        [list(layer) for layer in weights], row_titles=[_("Layer {n}").format(n=i + 1) for i in range(len(weights))],
        col_titles=_head_titles(run, head), x=run.tokens, y=run.tokens, cell_px=cell)
    fig.update_traces(hovertemplate=_("query %{y}<br>key %{x}<br>weight %{z:.3f}") + "<extra></extra>")
    fig.update_xaxes(tickmode="linear", tick0=0, dtick=x_step)  # Plotly would thin them on its own, unsaid
    fig.update_yaxes(tickmode="linear", tick0=0, dtick=y_step)
    return fig


def _line_segments(weights: np.ndarray, lo: float, hi: float, focus: int | None) -> tuple[list, list]:
    xs, ys = [], []
    for i, j in zip(*np.nonzero((weights >= lo) & (weights < hi)), strict=True):
        if focus is not None and i != focus:
            continue
        xs += [0.0, 1.0, None]
        ys += [int(i), int(j), None]
    return xs, ys


def lines_figure(heads: dict[int, np.ndarray], tokens: Sequence[str], *, focus: int | None = None) -> go.Figure:
    """Queries on the left, keys on the right, one line per pair; thicker and darker = more attention.

    Args:
        heads: head index (0-based) -> weights ``(T, S)``; several heads are drawn in different colours (Okabe-Ito;
            heads 9 to 16 reuse them dashed).
        focus: draw only the lines of this query position.
    """
    fig = go.Figure()
    edges = np.linspace(MIN_LINE_WEIGHT, 1.0, LINE_BINS + 1)
    edges[-1] = 1.0 + 1e-6
    for h, w in heads.items():
        colour, dash = charts.series_style(h)
        if len(heads) == 1:  # one head: the theme's strong colour, whichever head it is
            colour, dash = strong_colour(), "solid"
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            xs, ys = _line_segments(w, lo, hi, focus)
            if xs:
                mid = (lo + min(hi, 1.0)) / 2
                fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", hoverinfo="skip", showlegend=False,
                                         line=dict(color=colour, width=1 + 7 * mid, dash=dash),
                                         opacity=line_opacity(mid)))
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="lines", name=_("head {n}").format(n=h + 1),
                                 line=dict(color=colour, width=4, dash=dash)))
    _token_columns(fig, heads, tokens)
    n = len(tokens)
    fig.update_xaxes(visible=False, range=[-0.3, 1.3])
    fig.update_yaxes(visible=False, range=[n - 0.5, -1.4])  # reversed: first token on top
    charts.style(fig, height=max(260, 60 + 30 * n))
    if len(heads) > len(charts.CATEGORICAL):  # a legend of two rows goes below, clear of the chart's toolbar
        fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.02, x=0))
    return fig


def line_opacity(weight: float) -> float:
    """How opaque a line of attention ``weight`` is drawn: never fainter than 0.45, so that the lines of an evenly
    spread head (every weight near 1/T) still read on a white page; heavier weights stay darker."""
    return 0.45 + 0.55 * math.sqrt(weight)


def _token_columns(fig: go.Figure, heads: dict[int, np.ndarray], tokens: Sequence[str]) -> None:
    mean = np.mean(list(heads.values()), axis=0)  # (T, S)
    hover_left = [_top_keys(mean[i], tokens) for i in range(len(tokens))]
    hover_right = [_("{share} of all attention (column sum)").format(share=num(mean[:, j].sum(), 2))
                   for j in range(len(tokens))]
    for x, pos, hover in ((0.0, "middle left", hover_left), (1.0, "middle right", hover_right)):
        fig.add_trace(go.Scatter(
            x=[x] * len(tokens), y=list(range(len(tokens))), mode="markers+text",
            text=[hm.axis_label(t) for t in tokens],
            textposition=pos, marker=dict(size=9, color=label_colour()), hovertext=hover, hoverinfo="text",
            textfont=dict(color=label_colour(), size=charts.font_size()),
            showlegend=False, cliponaxis=False,
        ))
    for x, name in ((0.0, _("query")), (1.0, _("key"))):
        fig.add_annotation(x=x, y=-0.9, text=f"<b>{name}</b>", showarrow=False, yref="y", xref="x",
                           font=dict(color=label_colour()))


def _top_keys(row: np.ndarray, tokens: Sequence[str], k: int = 3) -> str:
    order = np.argsort(row)[::-1][:k]
    keys = ", ".join(f"{tokens[j]} ({num(row[j], 2)})" for j in order)
    return _("attends to {keys}").format(keys=keys)
