"""Live Training page: attention heatmaps (every layer x head) and per-head pattern scores as Vega-Lite charts.

Like the curves, they are redrawn while training, and the browser updates a Vega-Lite chart in place where a
plotly chart would be mounted afresh (and stay blank on a slow machine while it renders). Rows and columns are
indexed by position, with the tokens as axis labels, so repeated tokens (two 5s) stay separate cells.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import streamlit as st

from transformer_core.live import LiveRun
from transformer_core.training import Snapshot
from ui import state
from ui.charts import colorscale, font_size
from ui.training_charts import kind_title, pattern_title

Chart = tuple[pd.DataFrame, dict[str, Any]]  # (data, Vega-Lite spec) for st.vega_lite_chart
MAIN_WIDTH_PX = 900  # room for the heatmaps in the wide layout (both configurations together when comparing)
PROJECTOR_WIDTH_PX = 1250  # ... and in projector mode, which hides the sidebar and widens the page
MAX_CELL_PX = 200  # largest heatmap side
MAX_TICK_LABELS = 24  # token labels on the axes up to this many tokens
WEIGHT_SCALE = 1000  # weights travel as whole thousandths (int16), the precision the tooltip shows


def _scheme() -> str:
    return colorscale().lower()  # Vega has the same sequential schemes: viridis, cividis, plasma, blues, greys


def _axis(labels: Sequence[str] | None, n: int, title: str, show: bool) -> dict[str, Any]:
    if not show or n > MAX_TICK_LABELS:
        return {"title": title, "labels": False, "ticks": False}
    texts = list(labels) if labels is not None and len(labels) == n else [str(i) for i in range(n)]
    return {"title": title, "labelExpr": f"{json.dumps(texts)}[datum.value]", "labelAngle": 0}


def attention_title(run: LiveRun, lane: int, snap: Snapshot, kind: str) -> str:
    """The heading above a lane's heatmaps (page text, so it is also read out and findable)."""
    title = f"**{kind_title(kind, run.task.family)} · step {snap.step}**"
    return title + (f"  \n{run.labels[lane]}" if len(run.trainers) > 1 else "")


def attention_chart(run: LiveRun, lane: int, snap: Snapshot, kind: str) -> Chart:
    """Every layer (rows) x head (columns) of one kind of attention at one snapshot, on one 0..1 colour scale."""
    maps = snap.attention[kind].astype(np.float32)  # (L, H, T, S)
    layers, heads, t, s = maps.shape
    rows, cols = run.task.attention_example().get("labels", {}).get(kind, (None, None))
    layer, head, q, k = np.meshgrid(np.arange(layers), np.arange(heads), np.arange(t), np.arange(s), indexing="ij")
    # Small integer columns: a snapshot is sent many times a second while training, and a slow browser falls
    # behind on big frames. Vega-Lite turns them back into weights and token labels (see ``transform``).
    data = pd.DataFrame({"layer": (layer.ravel() + 1).astype(np.int16), "head": (head.ravel() + 1).astype(np.int16),
                         "q": q.ravel().astype(np.int16), "k": k.ravel().astype(np.int16),
                         "w": np.rint(maps.ravel() * WEIGHT_SCALE).astype(np.int16)})
    transform: list[dict[str, str]] = [{"calculate": f"datum.w / {WEIGHT_SCALE}", "as": "weight"}]
    labelled = rows is not None and cols is not None and len(rows) == t and len(cols) == s
    if labelled:
        transform += [{"calculate": f"{json.dumps(list(rows))}[datum.q]", "as": "query"},
                      {"calculate": f"{json.dumps(list(cols))}[datum.k]", "as": "key"}]
    lanes = len(run.trainers)
    width = (PROJECTOR_WIDTH_PX if st.session_state.get(state.PRESENTATION) else MAIN_WIDTH_PX) // lanes
    cell = int(min(MAX_CELL_PX, (width - 60) / heads - 12))
    cell_h = int(cell * min(1.5, t / s))
    small = heads * layers <= 4 or cell >= 140
    tooltip = [{"field": f, "type": "nominal" if f in ("query", "key") else "quantitative"}
               for f in ("layer", "head", "query", "key", "weight") if labelled or f not in ("query", "key")]
    spec = {
        "transform": transform,
        "facet": {"row": {"field": "layer", "type": "ordinal", "title": None, "header": {
                      "labelExpr": "'layer ' + datum.value", "labelFontSize": font_size()}},
                  "column": {"field": "head", "type": "ordinal", "title": None, "header": {
                      "labelExpr": "'head ' + datum.value", "labelFontSize": font_size()}}},
        "spacing": 8,
        "spec": {
            "width": cell, "height": cell_h, "mark": {"type": "rect"},
            "encoding": {
                "x": {"field": "k", "type": "ordinal", "axis": _axis(cols, s, "", small)},
                "y": {"field": "q", "type": "ordinal", "axis": _axis(rows, t, "", small)},
                "color": {"field": "weight", "type": "quantitative", "title": "weight",
                          "scale": {"scheme": _scheme(), "domain": [0, 1]}},
                "tooltip": tooltip,
            },
        },
    }
    return data, spec


SCORE_ROW_PX = 36  # height of one layer's row in the scores chart


def scores_height(snap: Snapshot) -> int:
    """Pixels the scores chart needs (rows, title and axis)."""
    return SCORE_ROW_PX * next(iter(snap.scores.values())).shape[0] + 90


def scores_of_kind(snap: Snapshot, kind: str) -> str | None:
    """The first pattern key of ``snap`` scored on attention ``kind`` (e.g. "cross:anti_diagonal"), or None."""
    return next((key for key in snap.scores if key.split(":")[0] == kind), None)


def scores_chart(snap: Snapshot, key: str, kind_name: str) -> Chart:
    """Each head's score for pattern ``key``: the share of its attention (``kind_name``) that follows it."""
    z = snap.scores[key]
    layers, heads = z.shape
    layer, head = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    data = pd.DataFrame({"layer": [f"layer {i + 1}" for i in layer.ravel()],
                         "head": [f"head {j + 1}" for j in head.ravel()], "score": np.round(z.ravel(), 2)})
    encoding = {"x": {"field": "head", "type": "ordinal", "title": None, "axis": {"labelAngle": 0}},
                "y": {"field": "layer", "type": "ordinal", "title": None}}
    # Ink that stays readable on the cell: the Viridis family is light at 1, Blues and Greys are dark there.
    light_high = ("white", "black") if _scheme() in ("blues", "greys") else ("black", "white")
    spec = {
        "title": {"text": f"How {pattern_title(key)} is each head? · {kind_name} · step {snap.step}", "anchor": "start",
                  "fontSize": font_size() + 1},
        "height": SCORE_ROW_PX * layers,
        "layer": [
            {"mark": "rect", "encoding": {**encoding, "color": {
                "field": "score", "type": "quantitative", "scale": {"scheme": _scheme(), "domain": [0, 1]}}}},
            {"mark": {"type": "text", "fontSize": font_size()}, "encoding": {
                **encoding, "text": {"field": "score", "type": "quantitative", "format": ".2f"},
                "color": {"condition": {"test": "datum.score > 0.6", "value": light_high[0]},
                          "value": light_high[1]}}},
        ],
    }
    return data, spec
