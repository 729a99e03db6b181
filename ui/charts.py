"""Plotly chart builders shared by the pages (heatmaps, grids of heatmaps, curves).

Every heatmap carries its numbers: hover always shows the value, and small matrices print it in the cells, so a
student can check a cell by hand and a colour-blind reader never depends on colour alone.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from ui import state

# Perceptually uniform, colour-blind-safe sequential scales first; the default is Viridis.
SEQUENTIAL_SCALES = ("Viridis", "Cividis", "Plasma", "Blues", "Greys")
DIVERGING_SCALE = "RdBu_r"  # blue = negative, red = positive; readable with the common colour deficiencies
MAX_CELLS_WITH_TEXT = 16  # print numbers in cells when both sides are at most this long


def colorscale() -> str:
    """The sequential colour scale the user chose in the sidebar."""
    return st.session_state.get(state.COLORSCALE, SEQUENTIAL_SCALES[0])


def font_size() -> int:
    """Base chart font size; larger in projector mode."""
    return 18 if st.session_state.get(state.PRESENTATION, False) else 13


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


def _text(z: np.ndarray, decimals: int) -> np.ndarray | None:
    if max(z.shape) > MAX_CELLS_WITH_TEXT:
        return None
    return np.vectorize(lambda v: f"{v:.{decimals}f}")(z)


def heatmap_trace(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
                  zmin: float | None = None, zmax: float | None = None, diverging: bool = False,
                  decimals: int = 2, showscale: bool = True, hover_name: str = "value") -> go.Heatmap:
    """One heatmap trace with values on hover (and in the cells when the matrix is small)."""
    z = np.asarray(z, dtype=float)
    text = _text(z, decimals)
    if diverging and zmin is None and zmax is None:
        bound = float(np.nanmax(np.abs(z))) if z.size else 1.0
        zmin, zmax = -bound, bound
    return go.Heatmap(
        z=z, x=_labels(x, z.shape[1]), y=_labels(y, z.shape[0]), zmin=zmin, zmax=zmax,
        colorscale=DIVERGING_SCALE if diverging else colorscale(), showscale=showscale,
        text=text, texttemplate="%{text}" if text is not None else None,
        hovertemplate=f"row %{{y}}<br>column %{{x}}<br>{hover_name} %{{z:.4f}}<extra></extra>",
    )


def heatmap(z: np.ndarray, x: Sequence[str] | None = None, y: Sequence[str] | None = None, *,
            title: str = "", x_title: str = "", y_title: str = "", zmin: float | None = None,
            zmax: float | None = None, diverging: bool = False, decimals: int = 2, height: int | None = None,
            hover_name: str = "value") -> go.Figure:
    """A single heatmap figure, rows top to bottom (matrix layout, like the attention matrix in the paper)."""
    z = np.asarray(z, dtype=float)
    fig = go.Figure(heatmap_trace(z, x, y, zmin=zmin, zmax=zmax, diverging=diverging, decimals=decimals,
                                  hover_name=hover_name))
    fig.update_yaxes(autorange="reversed", title=y_title, type="category")
    fig.update_xaxes(title=x_title, type="category", side="bottom")
    side = max(260, min(640, 40 + 28 * z.shape[0]))
    return style(fig, title=title, height=height or side)


def heatmap_grid(grid: Sequence[Sequence[np.ndarray]], *, row_titles: Sequence[str], col_titles: Sequence[str],
                 x: Sequence[str] | None = None, y: Sequence[str] | None = None, zmin: float = 0.0,
                 zmax: float = 1.0, title: str = "", cell_px: int = 170) -> go.Figure:
    """A rows x columns grid of small heatmaps sharing one colour scale (e.g. layers x heads)."""
    rows, cols = len(grid), max(len(r) for r in grid)
    fig = make_subplots(rows=rows, cols=cols, column_titles=list(col_titles), row_titles=list(row_titles),
                        horizontal_spacing=0.02 + 0.04 / cols, vertical_spacing=0.04 + 0.06 / rows)
    for r, row in enumerate(grid):
        for c, z in enumerate(row):
            trace = heatmap_trace(z, x, y, zmin=zmin, zmax=zmax, showscale=(r == 0 and c == 0))
            trace.update(text=None, texttemplate=None)
            fig.add_trace(trace, row=r + 1, col=c + 1)
    fig.update_yaxes(autorange="reversed", showticklabels=cols * rows <= 4, type="category")
    fig.update_xaxes(showticklabels=False, type="category")
    height = max(260, min(1400, 70 + cell_px * rows))
    return style(fig, title=title, height=height)


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
    fig.update_layout(
        title=dict(text=title, x=0.0, xanchor="left") if title else None,
        height=height, margin=dict(l=10, r=10, t=50 if title else 20, b=10),
        font=dict(size=font_size()),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
    )
    return fig


def image_format() -> str:
    """What the camera button above a chart saves: "png" or "svg" (the sidebar's *Chart downloads*)."""
    return "svg" if st.session_state.get(state.IMAGE_FORMAT) == "SVG" else "png"


def show(fig: go.Figure, *, key: str | None = None) -> None:
    """Draw a figure full-width with a modebar whose camera button saves it as PNG or SVG (see image_format)."""
    config = {"displaylogo": False, "toImageButtonOptions": {"format": image_format(), "scale": 2}}
    st.plotly_chart(fig, width="stretch", config=config, key=key)
