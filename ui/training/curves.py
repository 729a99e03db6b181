"""Live Training page: the training curves (loss, metric, pattern score) as Vega-Lite charts.

The curves are redrawn several times a second, so they are cheap on both ends: a plain Vega-Lite spec (a dict;
building and validating Altair objects cost ~100 ms per chart) with a small long-format table, and a chart
type that the browser updates in place (a redrawn plotly chart is mounted afresh every time: measured 1 chart
node in 5 s of redraws against 20). The head scores are Vega-Lite charts too, and so are the attention heatmaps
once paused (``ui.training.heatmaps``; while training they are a picture); only the ViT's attention over the
picture is plotly. Legends sit above the plot,
without a fill of their own, so they read on the light and the dark theme alike; the loss chart names its
two line styles in its title, so all three charts keep the same height.

A redraw changes only the data, never the spec: the browser builds a Vega view afresh whenever the spec changes
(measured: with the three curves rebuilt twice a second, the browser's main thread was busy 40% of the time
while training; with no curve redrawn, 17%), and only
swaps the rows when it does not. So the dotted step marker travels as a row of the data, and the y ranges, which
are given (see :func:`_log_domain`), move in coarse steps that a run crosses a few times, not at every redraw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from explorer.i18n import N_, _, num, percent
from explorer.runs.curves import thin_series
from explorer.runs.frame import RunFrame
from ui.common.chart_style import fitted_title_lines
from ui.common.charts import font_size, label_colour, log_tick_values, title_lines
from ui.common.theme import projector
from ui.training.charts import LANE_COLOURS, metric_title, pattern_title

MAX_CURVE_POINTS = 300  # curves are thinned to this many points per lane
CURVE_HEIGHT = 300  # pixels of a curve chart (title and axes included)
COMPACT_TITLE_CHARS = 40  # characters per title line of a first-screen curve (half the projector's width)
THIRD_TITLE_CHARS = 32  # ... of a curve in a third of the column (the three curves side by side)
COMPARE_TITLE_CHARS = 30  # ... beside two heatmaps (Compare on), where the curves have a third of the width
AXIS_LABEL_MIN_PX = {False: 12, True: 16}  # the smallest axis labels, on a screen and on a projector
LOG_TICKS = 6  # the most ticks (and grid lines) on the loss's log axis
LOG_TICKS_COMPACT = 3  # ... on the first screen's short loss chart
MARKER_COLOUR = "#6B7280"  # the dotted line at the step the heatmaps show
TARGET_COLOUR = "#009E73"  # Okabe-Ito bluish green: the metric's target
Chart = tuple[pa.Table, dict[str, Any]]  # (data, Vega-Lite spec) for st.vega_lite_chart
WAITING = (  # shown in place of each chart (loss, metric, pattern score) until it has a point to draw (through _())
    N_("📉 The loss curve starts with the first training step."),
    N_("🎯 The held-out metric appears after the first evaluation."),
    N_("🔍 The pattern score appears with the first attention snapshot."),
)


def _columns(rows: list[tuple[Any, ...]], names: tuple[str, ...]) -> dict[str, list[Any]]:
    """``rows`` as named columns."""
    return {name: [row[i] for row in rows] for i, name in enumerate(names)}


def _lanes(run: RunFrame) -> list[str]:
    return [label.split(" · ")[0] for label in run.labels]


def _colour(run: RunFrame, compact: bool = False) -> dict[str, Any]:
    """Each lane's colour; with two lanes a legend above the chart, or beside it on a first screen's short chart,
    whose few pixels of height a legend row would take from the curves."""
    lanes = _lanes(run)
    orient = {"orient": "right", "direction": "vertical"} if compact else {"orient": "top", "direction": "horizontal"}
    legend = {"title": None, **orient} if len(lanes) > 1 else None
    return {
        "field": "run",
        "type": "nominal",
        "legend": legend,
        "scale": {"domain": lanes, "range": list(LANE_COLOURS[: len(lanes)])},
    }


def _x(run: RunFrame, compact: bool = False) -> dict[str, Any]:
    return {
        "field": "step",
        "type": "quantitative",
        "title": None if compact else _("step"),
        "scale": {"domain": [0, run.total_steps], "nice": False},
    }


def _chart(
    data: dict[str, list[Any]], title: str, layers: list[dict[str, Any]], marker: int | None, compact: bool = False,
    lanes: int = 1,
) -> Chart:
    """The chart of ``data`` (its columns) and ``layers``, with a dotted line at step ``marker``: one row more in
    the data (``marker`` true), which the data layers leave out, so the spec is the same whatever step it marks.

    The rows go straight into an Arrow table, the form Streamlit sends: the curves are rebuilt twice a second on
    every training page, and a pandas frame cost several milliseconds more to build and to convert each time.
    ``compact`` (the first screen's short curves) keeps the title to one line of a half-wide chart, or of a third
    of the width with two ``lanes``."""
    for layer in layers:
        if "data" not in layer:  # a layer with rows of its own (the target line) needs no filter
            layer["transform"] = [{"filter": "!datum.marker"}, *layer.get("transform", [])]
    layers.append(
        {
            "transform": [{"filter": "datum.marker"}],
            "mark": {"type": "rule", "color": MARKER_COLOUR, "strokeDash": [4, 4], "strokeWidth": 2},
            "encoding": {"x": {"field": "step", "type": "quantitative"}},
        }
    )
    count = len(data["step"])
    columns = {name: list(values) for name, values in data.items()}
    columns["marker"] = [False] * count
    if marker is not None and count:  # a chart without data is not drawn (see WAITING)
        for name, values in columns.items():
            values.append(marker if name == "step" else True if name == "marker" else None)
    size = font_size()
    return pa.table(columns), {
        "title": {
            "text": title_lines(title, _title_chars(compact, lanes)),
            "anchor": "start",
            "fontSize": size + 2,
            "color": label_colour(),
            "limit": 0,
        },  # whole words, never "held-out (…"
        "layer": layers,
        "config": {
            "axis": {
                "labelFontSize": max(size - 1, AXIS_LABEL_MIN_PX[projector()]),
                "titleFontSize": size,
                "labelColor": label_colour(),
                "titleColor": label_colour(),
            },
            "legend": {"labelFontSize": size - 1, "symbolStrokeWidth": 3},
        },
    }


def _title_chars(compact: bool, lanes: int) -> int | None:
    """Characters per title line: a first screen's curve is narrower beside two heatmaps than beside one; three
    curves side by side have a third of the column each (about 210 pixels on a 1024-pixel page with the sidebar
    open); projector mode's larger type wraps sooner still."""
    if not compact:
        return None if projector() else THIRD_TITLE_CHARS
    return COMPARE_TITLE_CHARS if lanes > 1 else COMPACT_TITLE_CHARS


def waiting_chart(text: str, height: int = CURVE_HEIGHT) -> Chart:
    """An empty frame titled ``text`` (one of :data:`WAITING`): where a curve of ``height`` pixels will be drawn,
    kept on a projector's first screen before there is anything to draw."""
    size = font_size()
    return pa.table({"note": [_("no point yet")]}), {
        "title": {
            "text": fitted_title_lines(_(text), size + 2),
            "anchor": "start",
            "fontSize": size + 2,
            "color": label_colour(),
            "limit": 0,
        },
        "mark": {"type": "text", "fontSize": size, "color": label_colour()},
        "encoding": {"text": {"field": "note"}},
        "height": height - 80,
    }


def loss_chart(run: RunFrame, marker: int | None, *, compact: bool = False) -> Chart:
    """Training loss (thin, thinned to a few hundred points) and held-out loss (dashed, dots), log scale.

    ``compact``: the first screen's short chart, with a short title and no axis title."""
    data: dict[str, list[Any]] = {"step": [], "loss": [], "curve": [], "run": []}
    for lane, feed in zip(_lanes(run), run.lanes, strict=True):
        history = [r for r in feed.history if math.isfinite(r["loss"]) and r["loss"] > 0]
        xs, ys = thin_series([r["step"] for r in history], [r["loss"] for r in history], MAX_CURVE_POINTS)
        held = [r for r in feed.history if "eval_loss" in r and math.isfinite(r["eval_loss"]) and r["eval_loss"] > 0]
        data["step"] += [*xs, *(r["step"] for r in held)]
        data["loss"] += [*ys, *(r["eval_loss"] for r in held)]
        data["curve"] += ["train"] * len(xs) + ["held-out"] * len(held)
        data["run"] += [lane] * (len(xs) + len(held))
    encoding = {
        "x": _x(run, compact),
        "color": _colour(run, compact),
        "detail": {"field": "run", "type": "nominal"},
        "y": {
            "field": "loss",
            "type": "quantitative",
            "title": None,
            "scale": (scale := _log_domain(data["loss"])),
            "axis": {"format": "~g", **_log_ticks(scale.get("domain"), LOG_TICKS_COMPACT if compact else LOG_TICKS)},
        },
        "strokeDash": {
            "field": "curve",
            "type": "nominal",
            "title": None,
            "legend": None,
            "scale": {"domain": ["train", "held-out"], "range": [[1, 0], [6, 3]]},
        },
    }
    marks = {
        "train": {"type": "line", "strokeWidth": 1.5, "opacity": 0.7},
        "held-out": {"type": "line", "strokeWidth": 2.5, "point": True},
    }
    # A layer without rows would make Vega warn of an infinite extent on the log scale: leave it out.
    layers = [
        {"transform": [{"filter": f"datum.curve == '{curve}'"}], "encoding": encoding, "mark": mark}
        for curve, mark in marks.items()
        if curve in data["curve"]
    ]
    # The title names the two line styles, so no legend takes height from this chart alone.
    title = _("Loss · train · held-out (dots)") if compact else _("Loss · train (thin) · held-out (dots)")
    return _chart(data, title, layers, marker, compact, len(run.lanes))


def _log_domain(values: Sequence[float]) -> dict[str, Any]:
    """A log scale over ``values`` with its domain given: the browser first draws a chart with no rows, and a
    domain left to Vega would then be infinite (and warned about) on every redraw. Its ends lie at least 15%
    beyond the data, on quarter decades (1, 1.78, 3.16, 5.62 × 10^k), so they move only now and then."""
    if len(values) == 0:  # such a chart is not drawn (see WAITING)
        return {"type": "log", "nice": False}
    lo, hi = np.log10(float(min(values)) / 1.15), np.log10(float(max(values)) * 1.15)
    return {"type": "log", "domain": [10 ** (math.floor(4 * lo) / 4), 10 ** (math.ceil(4 * hi) / 4)], "nice": False}


def _log_ticks(domain: Sequence[float] | None, most: int) -> dict[str, Any]:
    """The loss axis's ticks (and so its grid lines) on a log ``domain``: Vega draws one at every 1–9 × 10^k, a
    hatching of lines, for a few labels (see :func:`~ui.common.chart_style.log_tick_values`)."""
    return {} if domain is None else {"values": log_tick_values(*domain, most)}


def _linear_domain(values: list[float]) -> dict[str, Any]:
    """A linear scale around ``values`` (at least a 5% margin), its domain given for the reason of
    :func:`_log_domain`, its ends on multiples of half a power of ten of the data's spread."""
    lo, hi = min(values), max(values)
    spread = hi - lo or abs(hi) or 1.0
    unit = 10 ** math.floor(math.log10(spread)) / 2
    return {
        "domain": [math.floor((lo - 0.05 * spread) / unit) * unit, math.ceil((hi + 0.05 * spread) / unit) * unit],
        "nice": False,
    }


def metric_chart(run: RunFrame, marker: int | None, *, compact: bool = False) -> Chart:
    """The task's metric on held-out data for every lane, with the target as a dashed green line (``compact``: as
    in :func:`loss_chart`)."""
    task = run.task
    rows = [
        (r["step"], r[task.metric_name], lane)
        for lane, feed in zip(_lanes(run), run.lanes, strict=True)
        for r in feed.history
        if task.metric_name in r and math.isfinite(r[task.metric_name])
    ]
    data = _columns(rows, ("step", "value", "run"))
    is_percent = task.metric_name == "accuracy"
    y = {
        "field": "value",
        "type": "quantitative",
        "title": None,
        "axis": {"format": "%" if is_percent else "~g"},
        "scale": {"domain": [0, 1]} if is_percent else _linear_domain([*data["value"], task.metric_target]),
    }
    layers = [
        {
            "mark": {"type": "line", "strokeWidth": 2.5, "point": True},
            "encoding": {"x": _x(run, compact), "y": y, "color": _colour(run, compact)},
        },
        {
            "data": {"values": [{"value": task.metric_target}]},
            "mark": {"type": "rule", "color": TARGET_COLOUR, "strokeDash": [6, 3], "strokeWidth": 1.5},
            "encoding": {"y": {"field": "value", "type": "quantitative"}},
        },
    ]
    target = percent_text(task.metric_target) if is_percent else num(task.metric_target)
    title = _("{metric} (held-out) · target {target}").format(metric=metric_title(task.metric_name), target=target)
    return _chart(data, title, layers, marker, compact, len(run.lanes))


def pattern_chart(run: RunFrame, marker: int | None) -> Chart:
    """For the task's pattern(s), the score of the best-matching head at every snapshot (1 = perfect)."""
    rows = [
        (s.step, float(s.scores[key].max()), lane, pattern_title(key))
        for lane, feed in zip(_lanes(run), run.lanes, strict=True)
        for s in feed.snapshots
        for key in run.task.pattern_names
        if key in s.scores
    ]
    data = _columns(rows, ("step", "score", "run", "pattern"))
    layers = [
        {
            "mark": {"type": "line", "strokeWidth": 2.5, "point": True},
            "encoding": {
                "x": _x(run),
                "color": _colour(run),
                "detail": {"field": "pattern", "type": "nominal"},
                "y": {"field": "score", "type": "quantitative", "title": None, "scale": {"domain": [0, 1]}},
            },
        }
    ]
    names = ", ".join(pattern_title(k) for k in run.task.pattern_names)
    return _chart(data, _("Best head's {patterns} score").format(patterns=names), layers, marker)


def percent_text(share: float) -> str:
    """``share`` as a percentage with as many decimals as it needs, at most two ("90%", "97.5%")."""
    digits = next((d for d in (0, 1, 2) if abs(round(100 * share, d) - 100 * share) < 1e-9), 2)
    return percent(share, digits)
