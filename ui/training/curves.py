"""Live Training page: the training curves (loss, metric, pattern score) as Vega-Lite charts.

The curves are redrawn several times a second, so they are cheap on both ends: a plain Vega-Lite spec (a dict;
building and validating Altair objects cost ~100 ms per chart) with a small long-format table, and a chart
type that the browser updates in place (a redrawn plotly chart is mounted afresh every time: measured 1 chart
node in 5 s of redraws against 20). The attention heatmaps and head scores are Vega-Lite charts too
(``ui.training.heatmaps``); only the ViT's attention over the picture is plotly. Legends sit above the plot,
without a fill of their own, so they read on the light and the dark theme alike; the loss chart names its
two line styles in its title, so all three charts keep the same height.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from explorer.live import thin_series
from explorer.run_frame import RunFrame
from ui.common.charts import font_size, label_colour, title_lines
from ui.training.charts import LANE_COLOURS, METRIC_TITLES, pattern_title

MAX_CURVE_POINTS = 300  # curves are thinned to this many points per lane
CURVE_HEIGHT = 300  # pixels of a curve chart (title and axes included)
MARKER_COLOUR = "#6B7280"  # the dotted line at the step the heatmaps show
TARGET_COLOUR = "#009E73"  # Okabe-Ito bluish green: the metric's target
Chart = tuple[pd.DataFrame, dict[str, Any]]  # (data, Vega-Lite spec) for st.vega_lite_chart
WAITING = (  # shown in place of each chart (loss, metric, pattern score) until it has a point to draw
    "📉 The loss curve starts with the first training step.",
    "🎯 The held-out metric appears after the first evaluation.",
    "🔍 The pattern score appears with the first attention snapshot.",
)


def _lanes(run: RunFrame) -> list[str]:
    return [label.split(" · ")[0] for label in run.labels]


def _colour(run: RunFrame) -> dict[str, Any]:
    lanes = _lanes(run)
    legend = {"title": None, "orient": "top", "direction": "horizontal"} if len(lanes) > 1 else None
    return {"field": "run", "type": "nominal", "legend": legend,
            "scale": {"domain": lanes, "range": list(LANE_COLOURS[: len(lanes)])}}


def _x(run: RunFrame) -> dict[str, Any]:
    return {"field": "step", "type": "quantitative", "title": "step",
            "scale": {"domain": [0, run.total_steps], "nice": False}}


def _spec(title: str, layers: list[dict[str, Any]], marker: int | None) -> dict[str, Any]:
    if marker is not None:
        layers.append({"data": {"values": [{"step": marker}]},
                       "mark": {"type": "rule", "color": MARKER_COLOUR, "strokeDash": [4, 4], "strokeWidth": 2},
                       "encoding": {"x": {"field": "step", "type": "quantitative"}}})
    size = font_size()
    return {
        "title": {"text": title_lines(title), "anchor": "start", "fontSize": size + 2, "color": label_colour(),
                  "limit": 0},  # whole words on as many lines as needed, never "held-out (…"
        "layer": layers,
        "config": {"axis": {"labelFontSize": size - 1, "titleFontSize": size},
                   "legend": {"labelFontSize": size - 1, "symbolStrokeWidth": 3}},
    }


def loss_chart(run: RunFrame, marker: int | None) -> Chart:
    """Training loss (thin, thinned to a few hundred points) and held-out loss (dashed, dots), log scale."""
    rows = []
    for lane, feed in zip(_lanes(run), run.lanes, strict=True):
        history = [r for r in feed.history if math.isfinite(r["loss"]) and r["loss"] > 0]
        xs, ys = thin_series([r["step"] for r in history], [r["loss"] for r in history], MAX_CURVE_POINTS)
        rows += [(x, y, "train", lane) for x, y in zip(xs, ys, strict=True)]
        rows += [(r["step"], r["eval_loss"], "held-out", lane) for r in feed.history
                 if "eval_loss" in r and math.isfinite(r["eval_loss"]) and r["eval_loss"] > 0]
    data = pd.DataFrame(rows, columns=["step", "loss", "curve", "run"])
    encoding = {
        "x": _x(run), "color": _colour(run), "detail": {"field": "run", "type": "nominal"},
        "y": {"field": "loss", "type": "quantitative", "title": None, "scale": _log_domain(data["loss"]),
              "axis": {"format": "~g"}},
        "strokeDash": {"field": "curve", "type": "nominal", "title": None, "legend": None,
                       "scale": {"domain": ["train", "held-out"], "range": [[1, 0], [6, 3]]}},
    }
    marks = {"train": {"type": "line", "strokeWidth": 1.5, "opacity": 0.7},
             "held-out": {"type": "line", "strokeWidth": 2.5, "point": True}}
    # A layer without rows would make Vega warn of an infinite extent on the log scale: leave it out.
    layers = [{"transform": [{"filter": f"datum.curve == '{curve}'"}], "encoding": encoding, "mark": mark}
              for curve, mark in marks.items() if (data["curve"] == curve).any()]
    # The title names the two line styles, so no legend takes height from this chart alone.
    return data, _spec("Loss · train (thin) · held-out (dots)", layers, marker)


def _log_domain(values: pd.Series) -> dict[str, Any]:
    """A log scale over ``values`` with its domain given: the browser first draws a chart with no rows, and a
    domain left to Vega would then be infinite (and warned about) on every redraw."""
    lo, hi = float(values.min()), float(values.max())
    return {"type": "log", "domain": [lo / 1.15, hi * 1.15], "nice": False}


def _linear_domain(values: list[float]) -> dict[str, Any]:
    """A linear scale around ``values`` (5% margin), its domain given for the reason of :func:`_log_domain`."""
    lo, hi = min(values), max(values)
    pad = 0.05 * (hi - lo) or 0.05 * abs(hi) or 0.05
    return {"domain": [lo - pad, hi + pad], "nice": False}


def metric_chart(run: RunFrame, marker: int | None) -> Chart:
    """The task's metric on held-out data for every lane, with the target as a dashed green line."""
    task = run.task
    rows = [(r["step"], r[task.metric_name], lane)
            for lane, feed in zip(_lanes(run), run.lanes, strict=True)
            for r in feed.history if task.metric_name in r and math.isfinite(r[task.metric_name])]
    data = pd.DataFrame(rows, columns=["step", "value", "run"])
    percent = task.metric_name == "accuracy"
    y = {"field": "value", "type": "quantitative", "title": None,
         "axis": {"format": "%" if percent else "~g"}, "scale": {"domain": [0, 1]} if percent
         else _linear_domain([*data["value"], task.metric_target])}
    layers = [
        {"mark": {"type": "line", "strokeWidth": 2.5, "point": True},
         "encoding": {"x": _x(run), "y": y, "color": _colour(run)}},
        {"data": {"values": [{"value": task.metric_target}]},
         "mark": {"type": "rule", "color": TARGET_COLOUR, "strokeDash": [6, 3], "strokeWidth": 1.5},
         "encoding": {"y": {"field": "value", "type": "quantitative"}}},
    ]
    target = f"{100 * task.metric_target:g}%" if percent else f"{task.metric_target:g}"
    name = METRIC_TITLES.get(task.metric_name, task.metric_name)
    return data, _spec(f"{name} (held-out) · target {target}", layers, marker)


def pattern_chart(run: RunFrame, marker: int | None) -> Chart:
    """For the task's pattern(s), the score of the best-matching head at every snapshot (1 = perfect)."""
    rows = [(s.step, float(s.scores[key].max()), lane, pattern_title(key))
            for lane, feed in zip(_lanes(run), run.lanes, strict=True)
            for s in feed.snapshots for key in run.task.pattern_names if key in s.scores]
    data = pd.DataFrame(rows, columns=["step", "score", "run", "pattern"])
    layers = [{"mark": {"type": "line", "strokeWidth": 2.5, "point": True},
               "encoding": {"x": _x(run), "color": _colour(run), "detail": {"field": "pattern", "type": "nominal"},
                            "y": {"field": "score", "type": "quantitative", "title": None,
                                  "scale": {"domain": [0, 1]}}}}]
    names = ", ".join(pattern_title(k) for k in run.task.pattern_names)
    return data, _spec(f"Best head's {names} score", layers, marker)
