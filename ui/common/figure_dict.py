"""Plotly figures written as one dict and wrapped once, for the charts a page redraws on every rerun.

Plotly's figure objects check every property path on every change: ``make_subplots``, ``update_layout``,
``update_xaxes`` and ``add_trace`` walk their arguments key by key. The ViT page's four charts spent about 100 ms
of its 250 ms rerun there, most of it before a single number was sent. A figure built here is the same JSON, laid
out as one dict (traces, axes, annotations, margins) and wrapped without those checks: about 2 ms each.

What the checks would catch (a misspelt property) is caught by the tests instead: with ``TE_CHECK_FIGURES=1`` in
the environment (tests/conftest.py sets it) every figure built here goes through Plotly's validators, so a test that
draws it fails on a property Plotly does not know.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ui.common.chart_style import font_size, label_colour, top_margin
from ui.common.chart_style import shows_legend as shows_legend

CHECK_ENV = "TE_CHECK_FIGURES"  # "1": validate every figure built here (the tests do)

Trace = dict[str, Any]
Layout = dict[str, Any]


def figure(data: Sequence[Trace], layout: Layout) -> go.Figure:
    """A figure of ``data`` (trace dicts, each with its ``type``) and ``layout`` (a key set to ``None`` is left
    out), checked only when the environment asks (:data:`CHECK_ENV`)."""
    checked = os.environ.get(CHECK_ENV) == "1"
    layout = {key: value for key, value in layout.items() if value is not None}
    return go.Figure({"data": list(data), "layout": layout}, _validate=checked)


@lru_cache(maxsize=32)
def _subplot_row(cols: int, spacing: float, stacked: bool) -> Layout:
    shape = {"rows": cols, "cols": 1, "vertical_spacing": spacing} if stacked else {
        "rows": 1, "cols": cols, "horizontal_spacing": spacing}
    layout = make_subplots(subplot_titles=[f"{k}" for k in range(cols)], **shape).to_dict()["layout"]
    layout.pop("template", None)  # the figure gets the default template when it is wrapped
    return layout


def subplot_row(titles: Sequence[str], *, spacing: float, stacked: bool = False) -> Layout:
    """The axes and panel titles of ``make_subplots(rows=1, cols=len(titles))``, as a layout dict to add to
    (``stacked``: one panel under the other, as on a phone).

    The geometry is Plotly's own (worked out once per column count and spacing); panel ``k`` (0-based) draws on
    axes ``x{k+1}``/``y{k+1}`` (see :func:`axes_of`), and its title is annotation ``k``.
    """
    layout = copy.deepcopy(_subplot_row(len(titles), spacing, stacked))
    for note, title in zip(layout["annotations"], titles, strict=True):
        note["text"] = title
    return layout


def axes_of(k: int) -> dict[str, str]:
    """The trace keys that put a trace on panel ``k`` (0-based) of a :func:`subplot_row`."""
    suffix = "" if k == 0 else str(k + 1)
    return {"xaxis": f"x{suffix}", "yaxis": f"y{suffix}"}


def each_axis(layout: Layout, letter: str) -> list[dict[str, Any]]:
    """The ``letter`` ("x" or "y") axes of a :func:`subplot_row` layout, panel by panel."""
    names = sorted((k for k in layout if k == f"{letter}axis" or k.startswith(f"{letter}axis")),
                   key=lambda name: int(name[5:] or 1))
    return [layout[name] for name in names]


def panel_look(*, titled: bool, row_titles: bool) -> tuple[dict[str, Any], dict[str, int]]:
    """The font of a subplot grid's panel titles (large and dark) and the top and right margins that keep them
    clear of the chart's toolbar and title (``titled``) and of row titles on the right (``row_titles``)."""
    size = font_size() + 1
    top = (top_margin(titled=True) + 6 if titled else 38) + size + 12  # below the toolbar and the chart's title
    return {"size": size, "color": label_colour()}, {"t": top, "r": 10 + (size + 12 if row_titles else 0)}


def panel_titles(layout: Layout, *, titled: bool, row_titles: bool) -> Layout:
    """:func:`ui.common.charts.panel_titles` on a layout dict (see :func:`panel_look`)."""
    font, margin = panel_look(titled=titled, row_titles=row_titles)
    for note in layout.get("annotations", []):
        note["font"] = dict(font)
    layout["margin"] = {**layout.get("margin", {}), **margin}
    return layout
