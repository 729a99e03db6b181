"""Live Training page: how strongly each head follows the task's pattern, as a Vega-Lite chart of layers × heads.

The chart takes its column's width, which only the browser knows: its head names and cell numbers are Vega
expressions of that width (:func:`_head_axis`, :func:`_score_size`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from explorer.i18n import _
from explorer.render.grid_image import CHAR_W
from transformer_core.training import Snapshot
from ui.common.charts import colorscale, font_size, label_colour, title_lines
from ui.training.charts import pattern_title
from ui.training.heatmaps import Chart, colour_scale

SCORE_TEXT = "0.42"  # the longest score a cell writes
SCORE_ROW_PX = 40  # height of one layer's row in the scores chart: labels at the projector's size never overlap


def scores_height(snap: Snapshot, spec: dict[str, Any] | None = None) -> int:
    """Pixels the scores chart needs: its rows, every line of its title (``spec``'s, when given) and its axis with
    its title (there even where the heads are named: see :func:`_head_axis`).

    The chart is drawn at this height: sized for a one-line title, a title that wraps (paused, with its step, or
    on a projector's larger font) would squeeze the rows until their labels overlap.
    """
    lines = len(spec["title"]["text"]) if spec is not None else 1
    return SCORE_ROW_PX * next(iter(snap.scores.values())).shape[0] + lines * (font_size() + 8) + font_size() + 86


def scores_of_kind(snap: Snapshot, kind: str) -> str | None:
    """The first pattern key of ``snap`` scored on attention ``kind`` (e.g. "cross:anti_diagonal"), or None."""
    return next((key for key in snap.scores if key.split(":")[0] == kind), None)


def scores_chart(snap: Snapshot, key: str, kind_name: str, *, live: bool = False) -> Chart:
    """Each head's score for pattern ``key``: the share of its attention (``kind_name``) that follows it.

    ``live`` (while training) leaves the step out of the title, which the heading above the heatmaps names: the
    spec then stays the same from one snapshot to the next, and the browser only swaps the chart's rows.
    The chart takes its column's width, which only the browser knows: there each cell writes its score where it
    has room (:func:`_score_size`; the tooltip always says it), and the heads are named "head 3" where a name
    fits its cell, by number under one "head" title where it does not (:func:`_head_axis`).
    """
    z = snap.scores[key]
    layers, heads = z.shape
    layer, head = np.meshgrid(np.arange(layers), np.arange(heads), indexing="ij")
    layer_names = [_("layer {n}").format(n=i + 1) for i in range(layers)]
    head_names = [_("head {n}").format(n=j + 1) for j in range(heads)]
    data = pd.DataFrame(
        {
            "layer": [layer_names[i] for i in layer.ravel()],
            "head": [head_names[j] for j in head.ravel()],
            "score": np.round(z.ravel(), 2),
        }
    )
    # In number order: Vega sorts the names as text, which puts "head 10" before "head 2"
    encoding = {
        "x": {"field": "head", "type": "ordinal", "title": None, "axis": _head_axis(head_names), "sort": head_names},
        "y": {"field": "layer", "type": "ordinal", "title": None, "sort": layer_names},
    }
    # Ink that stays readable on the cell: the Viridis family is light at 1, Blues and Greys are dark there.
    light_high = ("white", "black") if colorscale() in ("Blues", "Greys") else ("black", "white")
    score = {"field": "score", "type": "quantitative", "title": _("score")}
    tooltip = [{"field": "layer", "title": _("layer")}, {"field": "head", "title": _("head")},
               {**score, "format": ".2f"}]
    colour = {**score, "scale": colour_scale([0, 1])}
    cells = {"mark": "rect", "encoding": {**encoding, "color": colour, "tooltip": tooltip}}
    written = {
        "mark": {"type": "text", "fontSize": _score_size(heads)},
        "encoding": {
            **encoding,
            "text": {**score, "format": ".2f"},
            "color": {"condition": {"test": "datum.score > 0.6", "value": light_high[0]}, "value": light_high[1]},
        },
    }
    spec = {
        "title": {
            "text": title_lines(
                _("How {pattern} is each head? · {kind}").format(pattern=pattern_title(key), kind=kind_name)
                + ("" if live else " · " + _("step {step}").format(step=snap.step))
            ),
            "anchor": "start",
            "fontSize": font_size() + 1,
            "color": label_colour(),
            "limit": 0,
        },
        "height": SCORE_ROW_PX * layers,
        "layer": [cells, written],
    }
    return data, spec


def _head_axis(names: Sequence[str]) -> dict[str, Any]:
    """The scores chart's head axis: each head's name ("head 3") where the widest fits its cell, else its number
    under one axis title (Vega thinned the names of eight heads in a narrow column to "head 1", "head 4")."""
    fits = f"width / {len(names)} >= {CHAR_W * font_size() * max(len(n) for n in names) + 6:.1f}"
    return {
        "labelAngle": 0,
        "labelOverlap": False,
        "labelExpr": f"{fits} ? datum.value : '' + (indexof({json.dumps(list(names))}, datum.value) + 1)",
        "title": _("head"),
        "titleOpacity": {"expr": f"{fits} ? 0 : 1"},
    }


def _score_size(heads: int) -> dict[str, str]:
    """The cells' text size as a Vega expression of the chart's width: the page's size where a cell has room for
    "0.42", smaller where it has not, none below 8 pixels (the colour and the tooltip still say it)."""
    fits = f"(width / {heads} - 4) / {CHAR_W * len(SCORE_TEXT):.2f}"
    return {"expr": f"{fits} >= 8 ? min({font_size()}, floor({fits})) : 0"}
