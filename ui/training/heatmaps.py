"""Live Training page: attention heatmaps (every layer x head) as a Vega-Lite chart and as pictures (the head scores:
:mod:`ui.training.head_scores`).

Paused, finished or scrubbed on the time-lapse, the heatmaps are an interactive Vega-Lite chart (hover shows every
weight): the browser updates it in place where a plotly chart would be mounted afresh. While training, they are
pictures in an HTML grid (:func:`attention_picture`, drawn by :mod:`explorer.render.grid_image`) with the same
headers, token labels and colour scale: a browser redraws them for a fraction of what thousands of chart marks
cost, which leaves the shared cores to training. Rows and columns are indexed by position, with the tokens as axis
labels, so repeated tokens (two 5s) stay separate cells.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from explorer.i18n import _, ngettext, num
from explorer.render import heatmap as hm
from explorer.render.fonts import width_units
from explorer.render.grid_image import CHAR_W, GAP, GridLayout, grid_html, tick_labels
from explorer.runs.frame import RunFrame
from transformer_core.training import Snapshot
from ui.common import theme
from ui.common.charts import (
    NEAR_UNIFORM,
    attention_range,
    colorscale,
    font_size,
    label_colour,
    nearly_uniform,
)
from ui.training.charts import kind_title
from ui.training.task_labels import shown_label

Chart = tuple[pd.DataFrame, dict[str, Any]]  # (data, Vega-Lite spec) for st.vega_lite_chart
MAIN_WIDTH_PX = 900  # room for the heatmaps in the wide layout (both configurations together when comparing)
# ... and in projector mode: the ~940 pixels a 1024-wide projector leaves, less the larger labels and the legend
PROJECTOR_WIDTH_PX = 820
COLUMN_PX = 940  # the page's main column, in the wide layout and on a 1024-wide projector...
COLUMN_GAP_PX = 32  # ... and the gap between its two columns when comparing (st.columns gap="medium")
MAX_CELL_PX = 200  # largest heatmap side
MAX_TICK_LABELS = 24  # token labels on the axes up to this many tokens
MAX_NAMED_MAPS = 6  # nearly uniform maps named above the heatmaps; more are counted
FACET_SPACING_PX = 8  # between two heatmaps of the grid
WEIGHT_SCALE = 1000  # weights travel as whole thousandths (int16), the precision the tooltip shows


def colour_scale(domain: Sequence[float]) -> dict[str, Any]:
    """The sidebar's colour scale as a Vega-Lite scale on ``domain``: the stops of the one colour mapping
    (:mod:`explorer.render.heatmap`) blended in RGB, as in every other chart and in the exports."""
    return {"domain": list(domain), "range": list(hm.stops(colorscale())), "interpolate": "rgb"}


def _axis(labels: Sequence[str] | None, n: int, title: str, cell: int, *, x: bool = True) -> dict[str, Any]:
    """Token labels, large and dark; a facet draws them once, on the outer row and column of the grid.

    ``cell`` is the side of a heatmap along this axis in pixels; x labels turn upright when they do not fit across.
    """
    size = max(11, font_size() - 2)
    if n > MAX_TICK_LABELS or cell < n * size:  # more tokens than a label's height each: they would overlap
        return {"title": title, "labels": False, "ticks": False}
    texts = list(labels) if labels is not None and len(labels) == n else [str(i) for i in range(n)]
    upright = not x or cell / n >= size * max(len(t) for t in texts) * 0.6  # the widest label fits across
    return {
        "title": title,
        "labelExpr": f"{json.dumps(texts)}[datum.value]",
        "labelAngle": 0 if upright else -90,
        "labelFontSize": size,
        "labelColor": label_colour(),
        "labelOverlap": False,
    }


def _header(name: str) -> dict[str, Any]:
    """A facet header such as "head 2" (``name``: "layer {n}" or "head {n}", translated), as large and dark as the
    rest of the chart's text."""
    before, _n, after = name.partition("{n}")
    return {
        "labelExpr": f"{json.dumps(before)} + datum.value + {json.dumps(after)}",
        "labelFontSize": font_size() + 1,
        "labelColor": label_colour(),
        "labelFontWeight": "bold",
    }


def _facet(field: str, name: str, word: str, count: int, room: int) -> dict[str, Any]:
    """The facet ``field`` ("layer" or "head") over ``count`` maps ``room`` pixels wide (or high): each header
    names its map ("head 2"); where a map is narrower than that (many heads, Compare on), one title (``word``)
    stands over numbers only, every k-th of them where even the numbers would touch."""
    size = font_size() + 1
    if room >= CHAR_W * size * (len(name) - 1):  # "head {n}" less the braces: "head 12"
        return {"field": field, "type": "ordinal", "title": None, "header": _header(name)}
    pitch = room + FACET_SPACING_PX
    every = math.ceil(CHAR_W * size * (len(str(count)) + 1) / pitch)
    shown = "datum.value" if every == 1 else f"(datum.value - 1) % {every} == 0 ? datum.value : ''"
    header = {**_header("{n}"), "labelExpr": f"'' + ({shown})", "titleFontSize": size, "titleColor": label_colour(),
              "titleFontWeight": "normal"}
    return {"field": field, "type": "ordinal", "title": word, "header": header}


def attention_title(run: RunFrame, lane: int, snap: Snapshot, kind: str) -> str:
    """The heading above a lane's heatmaps (page text, so it is also read out and findable)."""
    title = "**" + _("{kind} · step {step}").format(kind=kind_title(kind, run.task.family), step=snap.step) + "**"
    title += f"  \n{shown_label(run.labels[lane])}" if len(run.lanes) > 1 else ""
    return title + uniform_maps(snap.attention[kind])


def uniform_maps(maps: np.ndarray) -> str:
    """ "  \nNearly uniform (…): layer 1 · head 2, …" naming the maps ``(L, H, T, S)`` whose rows barely vary."""
    flat = [
        _("layer {layer} · head {head}").format(layer=i + 1, head=j + 1)
        for i, layer in enumerate(maps)
        for j, w in enumerate(layer)
        if nearly_uniform(w)
    ]
    if not flat:
        return ""
    if len(flat) == maps.shape[0] * maps.shape[1]:
        named = _("all maps")
    elif len(flat) > MAX_NAMED_MAPS:  # a large grid would list a paragraph of them above its heatmaps
        named = _("{items} and {n} more").format(items=", ".join(flat[:MAX_NAMED_MAPS]),
                                                  n=num(len(flat) - MAX_NAMED_MAPS))
    else:
        named = ", ".join(flat)
    return "  \n" + _("Nearly uniform (max − min < {limit} in every row): {maps}").format(
        limit=num(NEAR_UNIFORM), maps=named
    )


def attention_chart(run: RunFrame, lane: int, snap: Snapshot, kind: str) -> Chart:
    """Every layer (rows) x head (columns) of one kind of attention at one snapshot, on one 0..1 colour scale."""
    maps = snap.attention[kind].astype(np.float32)  # (L, H, T, S)
    layers, heads, t, s = maps.shape
    rows, cols = run.task.attention_example().get("labels", {}).get(kind, (None, None))
    layer, head, q, k = np.meshgrid(np.arange(layers), np.arange(heads), np.arange(t), np.arange(s), indexing="ij")
    # Small integer columns: a snapshot is sent many times a second while training, and a slow browser falls
    # behind on big frames. Vega-Lite turns them back into weights and token labels (see ``transform``).
    data = pd.DataFrame(
        {
            "layer": (layer.ravel() + 1).astype(np.int16),
            "head": (head.ravel() + 1).astype(np.int16),
            "q": q.ravel().astype(np.int16),
            "k": k.ravel().astype(np.int16),
            "w": np.rint(maps.ravel() * WEIGHT_SCALE).astype(np.int16),
        }
    )
    transform: list[dict[str, str]] = [{"calculate": f"datum.w / {WEIGHT_SCALE}", "as": "weight"}]
    labelled = rows is not None and cols is not None and len(rows) == t and len(cols) == s
    if labelled:
        transform += [
            {"calculate": f"{json.dumps(list(rows))}[datum.q]", "as": "query"},
            {"calculate": f"{json.dumps(list(cols))}[datum.k]", "as": "key"},
        ]
    cell, cell_h = _chart_panel(run, heads, t, s)
    names = {"layer": _("layer"), "head": _("head"), "query": _("query"), "key": _("key"), "weight": _("weight")}
    tooltip = [
        {"field": f, "type": "nominal" if f in ("query", "key") else "quantitative", "title": names[f]}
        for f in ("layer", "head", "query", "key", "weight")
        if labelled or f not in ("query", "key")
    ]
    spec = {
        "transform": transform,
        "facet": {
            "row": _facet("layer", _("layer {n}"), names["layer"], layers, cell_h),
            "column": _facet("head", _("head {n}"), names["head"], heads, cell),
        },
        "spacing": FACET_SPACING_PX,
        "padding": {"left": 8, "top": 4, "right": 4, "bottom": 4},  # room for the rotated "layer" headers
        "spec": {
            "width": cell,
            "height": cell_h,
            "mark": {"type": "rect"},
            "encoding": {
                "x": {"field": "k", "type": "ordinal", "axis": _axis(cols, s, "", cell)},
                "y": {"field": "q", "type": "ordinal", "axis": _axis(rows, t, "", cell_h, x=False)},
                "color": {
                    "field": "weight",
                    "type": "quantitative",
                    "title": names["weight"],
                    "scale": colour_scale(attention_range(maps)),
                },
                "tooltip": tooltip,
            },
        },
    }
    return data, spec


def _lane_width(run: RunFrame) -> int:
    """Pixels the heatmaps of one configuration may take."""
    return (PROJECTOR_WIDTH_PX if theme.projector() else MAIN_WIDTH_PX) // len(run.lanes)


def _panel_size(room: int, heads: int, t: int, s: int, gap: int) -> tuple[int, int]:
    """(width, height) of one heatmap when ``heads`` of them, ``gap`` pixels apart, share ``room`` pixels."""
    cell = int(min(MAX_CELL_PX, room / heads - gap))
    return cell, _panel_height(cell, t, s)


def _panel_height(width: int, t: int, s: int) -> int:
    """The height of a ``width``-pixel heatmap of ``t`` rows and ``s`` columns: as tall as its shape, at most 1.5×."""
    return int(width * min(1.5, t / s))


def _chart_panel(run: RunFrame, heads: int, t: int, s: int) -> tuple[int, int]:
    """(width, height) of one heatmap in the chart, 12 pixels apart: the lane's width less the row headers and the
    colour bar (four heads of the largest size pushed the colour bar's title and numbers out of a 1400-pixel page
    with the sidebar open)."""
    return _panel_size(_lane_width(run) - 60 - _legend_px(), heads, t, s, 12)


def _legend_px() -> int:
    """Pixels the chart's colour bar takes beside the heatmaps: its offset, and its bar and numbers or its title,
    whichever is wider."""
    return 18 + int(max(50, CHAR_W * font_size() * width_units(_("weight"))))


def attention_picture(
    run: RunFrame, lane: int, snap: Snapshot, kind: str, *, room: int | None = None
) -> tuple[str, int]:
    """The heatmaps of :func:`attention_chart` as pictures in an HTML grid, and the grid's width in pixels.

    Same layout, colours and labels as the chart, without hover: the live view shows it while training.
    ``room``: the pixels the grid may take (default: the main column, shared by the run's lanes).
    """
    maps = snap.attention[kind].astype(np.float32)  # (L, H, T, S)
    layers, heads, t, s = maps.shape
    rows, cols = run.task.attention_example().get("labels", {}).get(kind, (None, None))
    low, high = attention_range(maps)
    lay = GridLayout(
        layers=layers,
        heads=heads,
        panel_w=1,
        panel_h=1,
        rows=tick_labels(rows, t),
        cols=tick_labels(cols, s),
        font=max(11, font_size() - 2),
        scale=colorscale(),
        zmin=low,
        zmax=high,
    )
    fixed = lay.width - lay.grid_w  # the labels and the colour bar
    if room is None:
        room = (COLUMN_PX - COLUMN_GAP_PX * (len(run.lanes) - 1)) // len(run.lanes)
    # The chart's panel size, so the page keeps its layout on Pause, unless the whole grid would not fit
    panel_w, panel_h = min(_chart_panel(run, heads, t, s), _panel_size(room - fixed + GAP, heads, t, s, GAP))
    lay = dataclasses.replace(lay, panel_w=panel_w, panel_h=panel_h)
    for _attempt in range(3):  # the labels widen with the panels (numbers alone under narrow ones): fit again
        over = lay.width - room
        if over <= 0:
            break
        panel_w = max(1, lay.panel_w - -(-over // heads))
        lay = dataclasses.replace(lay, panel_w=panel_w, panel_h=_panel_height(panel_w, t, s))
    label = _(
        "{kind} at step {step}: {layers} × {heads}, each a {t} × {s} heatmap of attention weights from {low} to {high}"
    ).format(
        kind=kind_title(kind, run.task.family),
        step=snap.step,
        layers=ngettext("{n} layer", "{n} layers", layers).format(n=layers),
        heads=ngettext("{n} head", "{n} heads", heads).format(n=heads),
        t=t,
        s=s,
        low=num(low),
        high=num(high),
    )
    return grid_html(maps, lay, label=label), lay.width


def head_picture(
    run: RunFrame, snap: Snapshot, kind: str, layer: int, head: int, *, width_px: int, height_px: int, smaller: int = 0
) -> str:
    """One layer and head of ``kind`` at ``snap`` as a picture, as large as fits ``width_px`` × ``height_px`` (the
    heatmap alone; its labels and colour bar take part of the width): the compact live view's first screen.
    ``smaller``: pixels off the labels' usual size, where two such pictures share the width.

    Its colours span the same range as the grid of every head, so a head reads the same in both.
    """
    maps = snap.attention[kind].astype(np.float32)  # (L, H, T, S)
    one = maps[layer : layer + 1, head : head + 1]  # (1, 1, T, S)
    t, s = one.shape[2:]
    rows, cols = run.task.attention_example().get("labels", {}).get(kind, (None, None))
    low, high = attention_range(maps)
    lay = GridLayout(
        layers=1,
        heads=1,
        panel_w=1,
        panel_h=1,
        rows=tick_labels(rows, t),
        cols=tick_labels(cols, s),
        font=font_size() - smaller,
        scale=colorscale(),
        zmin=low,
        zmax=high,
        first_layer=layer,
        first_head=head,
    )
    ratio = min(1.5, t / s)  # taller than wide for long queries, as in the grid
    panel_w = int(max(40, min(width_px - (lay.width - lay.grid_w), height_px / ratio)))
    lay = dataclasses.replace(lay, panel_w=panel_w, panel_h=int(panel_w * ratio))
    label = _(
        "{kind} of layer {layer}, head {head} at step {step}: a {t} × {s} heatmap of attention weights from "
        "{low} to {high}"
    ).format(
        kind=kind_title(kind, run.task.family),
        layer=layer + 1,
        head=head + 1,
        step=snap.step,
        t=t,
        s=s,
        low=num(low),
        high=num(high),
    )
    return grid_html(one, lay, label=label)
