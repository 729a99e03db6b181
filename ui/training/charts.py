"""Live Training page: shared chart vocabulary, and the plotly figure of the ViT's CLS attention on its picture.

The figure is built once per layout (``figure``) and kept in session state; a redraw only swaps the data of
its traces, which costs a few milliseconds instead of rebuilding the subplots.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from plotly.subplots import make_subplots

from explorer.i18n import N_, _, language
from explorer.runs.frame import RunFrame
from explorer.runs.live import LiveRun
from transformer_core.families import family as model_family
from transformer_core.patterns import PATTERN_TITLES
from transformer_core.training import Snapshot
from ui.common.charts import colorscale, font_size, label_colour, panel_titles, plotly_scale, style
from ui.training.task_labels import attention_name, known

FIGS = "live.figs"  # dict: figure key -> plotly figure reused across redraws
LANE_COLOURS = ("#0072B2", "#D55E00")  # Okabe-Ito blue and vermillion: configuration A and B
METRIC_TITLES = {"accuracy": N_("Accuracy"), "r2": N_("R²"), "val_loss": N_("Validation loss")}
METRIC_NAMES = {"accuracy": N_("accuracy"), "r2": N_("R²"), "val_loss": N_("validation loss")}  # inside a sentence


def metric_title(name: str) -> str:
    """The heading of metric ``name`` ("Accuracy") in the page's language."""
    return _(METRIC_TITLES[name]) if name in METRIC_TITLES else name


def metric_name(name: str) -> str:
    """Metric ``name`` as a sentence names it ("accuracy") in the page's language."""
    return _(METRIC_NAMES[name]) if name in METRIC_NAMES else name


def kind_title(kind: str, family: str) -> str:
    """Heading of one kind of attention for the task's model family (the family's own name for it)."""
    return known(model_family(family).attention_title(kind))


def short_kind_title(kind: str, family: str) -> str:
    """:func:`kind_title` without its note in brackets, e.g. "Cross-attention" (Chinese brackets too)."""
    return kind_title(kind, family).split(" (")[0].split("（")[0]


def kind_name(kind: str, family: str) -> str:
    """Attention ``kind`` as a sentence names it ("cross-attention (decoder reads the encoder)")."""
    return attention_name(model_family(family).attention_title(kind))


def pattern_title(key: str) -> str:
    """The readable name of a pattern key, e.g. "cross:anti_diagonal" -> "anti-diagonal"."""
    name = key.split(":")[-1]
    return known(PATTERN_TITLES.get(name, name.replace("_", " ")))


def short_label(run: RunFrame | LiveRun, lane: int) -> str:
    """ " · A" / " · B" in compare mode, "" otherwise (of a run or of its frame)."""
    return f" · {run.labels[lane].split(' · ')[0]}" if len(run.labels) > 1 else ""


def figure(key: tuple, build: Callable[[], go.Figure]) -> go.Figure:
    """The figure stored under ``key`` (and the current colours and font size), built on first use."""
    figs = st.session_state.setdefault(FIGS, {})
    full = (*key, colorscale(), font_size(), label_colour(), language())
    if full not in figs:
        figs[full] = build()
    return figs[full]


def vit_attention_figure(run: RunFrame, lane: int, snap: Snapshot) -> go.Figure:
    """Where the CLS token looks, for every layer (rows) x head (columns), drawn over the example picture."""
    maps = snap.attention["encoder"].astype(np.float32)  # (L, H, 1+P, 1+P)
    return _cls_overlay(lane, run.task.attention_example()["image"], maps)


def _cls_overlay(lane: int, image: np.ndarray, maps: np.ndarray) -> go.Figure:
    """The CLS token's attention over the patches (row 0, columns 1..N) laid over the picture."""
    layers, heads, n = maps.shape[0], maps.shape[1], maps.shape[-1] - 1
    grid = int(round(n**0.5))
    patch = image.shape[0] / grid
    cls = maps[:, :, 0, 1:].reshape(layers, heads, grid, grid)  # (L, H, g, g), patches row-major

    def build() -> go.Figure:
        fig = make_subplots(
            rows=layers,
            cols=heads,
            column_titles=[_("head {n}").format(n=j + 1) for j in range(heads)],
            row_titles=[_("layer {n}").format(n=i + 1) for i in range(layers)],
            horizontal_spacing=0.02,
            vertical_spacing=0.04,
        )
        for i in range(layers):
            for j in range(heads):
                fig.add_trace(go.Image(z=image, hoverinfo="skip"), row=i + 1, col=j + 1)
                fig.add_trace(
                    go.Heatmap(
                        z=cls[i, j],
                        x0=patch / 2 - 0.5,
                        dx=patch,
                        y0=patch / 2 - 0.5,
                        dy=patch,
                        colorscale=plotly_scale(colorscale()),
                        opacity=0.55,
                        zmin=0,
                        showscale=False,
                        hovertemplate=_("patch row %{y:.0f}, col %{x:.0f}<br>attention %{z:.3f}") + "<extra></extra>",
                    ),
                    row=i + 1,
                    col=j + 1,
                )
        fig.update_xaxes(visible=False)  # image traces keep pixels square and rows top-down by themselves
        fig.update_yaxes(visible=False)
        style(fig, height=max(260, 60 + 170 * layers))
        panel_titles(fig, titled=False, row_titles=True)
        return fig

    fig = figure(("cls", lane, maps.shape, image.shape), build)
    top = float(cls.max()) or 1.0
    for k in range(layers * heads):
        fig.data[2 * k + 1].update(z=np.round(cls[k // heads, k % heads], 4), zmax=top)
    return fig
