"""How every chart looks: the sidebar's colour scale and projector mode, fonts and label colours, title wrapping,
series colours, the common Plotly layout and legend places, and the modebar that saves PNG or SVG."""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import separators
from explorer.render.fonts import width_units
from ui.common import state
from ui.common.theme import phone, projector

# Okabe-Ito's colour-blind-safe categorical colours, black replaced by its grey (black vanishes on a dark theme).
CATEGORICAL = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#999999")
DASHES = ("solid", "dash", "dot")  # the 9th to 16th series reuse the colours dashed, the 17th to 24th dotted
LABEL_COLOURS = {"light": "#1F2933", "dark": "#E6EAF0"}  # panel titles: the themes' text colours, not grey
STRONG_COLOURS = {"light": "#0072B2", "dark": "#56B4E9"}  # the themes' primary colours (.streamlit/config.toml)
CHAR_WIDTH = 0.6  # a Latin character's width in font sizes, a little over the average (a wide one counts two)
TITLE_CHARS = {False: 44, True: 26}  # characters per title line, normally and in projector mode
PHONE_TITLE_CHARS = 30  # ... and on a phone (a chart about 340 pixels wide: 44 characters were cut)
TOOLBAR_PX = {False: 30, True: 40}  # Plotly's modebar spans the top 28 px of a chart at its right (35 px in
# projector mode, whose larger root font enlarges it); titles start below it


def colorscale() -> str:
    """The sequential colour scale the user chose in the sidebar."""
    return st.session_state.get(state.COLORSCALE, state.SEQUENTIAL_SCALES[0])


def stretch_attention() -> bool:
    """Whether the sidebar asks to stretch attention colours to each map's range (default: fixed 0 to 1)."""
    return st.session_state.get(state.ATTENTION_SCALE, "fixed") == "stretch"


def font_size() -> int:
    """Base chart font size; larger in projector mode."""
    return 18 if projector() else 13


def _theme() -> str:
    """"dark" or "light": the theme the visitor's browser shows."""
    theme = getattr(getattr(st, "context", None), "theme", None)
    return "dark" if getattr(theme, "type", None) == "dark" else "light"


def label_colour() -> str:
    """A dark label colour on the light theme and a light one on the dark theme (readable from the back)."""
    return LABEL_COLOURS[_theme()]


def strong_colour() -> str:
    """The theme's primary colour, for the one series a chart draws (strong on either background)."""
    return STRONG_COLOURS[_theme()]


def title_lines(title: str, width: int | None = None) -> list[str]:
    """A chart title broken between words into lines of at most ``width`` characters (never cut short).

    The default width is narrower in projector mode, where the font is larger, and on a phone.
    """
    default = PHONE_TITLE_CHARS if phone() else TITLE_CHARS[projector()]
    lines = textwrap.wrap(title, width or default, break_long_words=False, break_on_hyphens=False)
    return lines or [""]


def fitted_title_lines(title: str, size: int) -> dict[str, str]:
    """``title`` broken into lines to fit the chart's width, which only the browser knows: a Vega expression that
    picks, of the title broken at 16, 24, 32 or 48 characters a line, the fewest lines whose widest fits (a wait
    message in a lesson's narrow curve column was cut to "starts with the fi"). ``size``: its font size."""
    choices = [title_lines(title, chars) for chars in (48, 32, 24, 16)]
    expr = json.dumps(choices[-1], ensure_ascii=False)
    for lines in reversed(choices[:-1]):
        need = CHAR_WIDTH * size * max(width_units(line) for line in lines)
        expr = f"width >= {need:.0f} ? {json.dumps(lines, ensure_ascii=False)} : {expr}"
    return {"expr": expr}


def log_tick_values(lo: float, hi: float, most: int) -> list[float]:
    """Round ticks for a log axis from ``lo`` to ``hi`` (both > 0): the finest of 1-2-3-5-7, 1-2-5, 1-3 and 1 per
    decade (then every second, third, ... decade) that gives at most ``most`` ticks. Each is labelled in full:
    the charting libraries' own log ticks hatch the chart with a line at every digit, or label them "2, 5, 0.1, 2,
    5", where a bare 5 may be 0.5 or 0.05."""
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    for mantissas in ((1, 2, 3, 5, 7), (1, 2, 5), (1, 3), (1,)):
        ticks = [float(f"{m}e{k}") for k in range(first, last + 1) for m in mantissas]
        ticks = [t for t in ticks if lo <= t <= hi]
        if len(ticks) <= most:
            return ticks
    every = math.ceil(len(ticks) / most)  # whole decades, ``every``-th of them, the largest kept
    return ticks[::-1][::every][::-1]


def half_title_chars() -> int:
    """Characters per title line of a chart in half the page's width (two charts side by side)."""
    return TITLE_CHARS[projector()]


def series_style(i: int) -> tuple[str, str]:
    """Colour and line dash of the ``i``-th series (0-based): Okabe-Ito colours, then the same colours dashed."""
    return CATEGORICAL[i % len(CATEGORICAL)], DASHES[(i // len(CATEGORICAL)) % len(DASHES)]


def style(fig: go.Figure, *, title: str = "", height: int = 360) -> go.Figure:
    """Common layout: readable fonts (larger in projector mode) and tight margins (see :func:`style_layout`).

    No plotly template is set: Streamlit's chart theme then follows the app's light or dark theme, and figures
    build several times faster (a named template costs ~40 ms per figure).
    """
    traces = [{"type": t.type, "showlegend": getattr(t, "showlegend", None)} for t in fig.data]
    legend = shows_legend(traces) and fig.layout.showlegend is not False
    fig.update_layout(**style_layout(title=title, height=height, legend=legend))
    return fig


def shows_legend(traces: Sequence[dict[str, Any]]) -> bool:
    """Whether a figure of ``traces`` (trace dicts) needs room for a legend: more than one trace that can be listed
    (an image cannot, and neither can a trace with ``showlegend`` off)."""
    listed = sum(t.get("type") != "image" and t.get("showlegend", True) is not False for t in traces)
    return listed > 1


def style_layout(
    *, title: str = "", height: int = 360, legend: bool = False, title_chars: int | None = None
) -> dict[str, Any]:
    """The layout keys :func:`style` sets, as a dict: the title below the toolbar, the height, tight margins with
    room for a ``legend`` on top, the font and the page language's number separators. ``title_chars``: wrap the
    title into lines of that many characters (a chart in a narrow column; Plotly never wraps a title itself)."""
    top = _top_margin(titled=bool(title), legend=legend)
    if title and title_chars:
        lines = title_lines(title, title_chars)
        title, top = "<br>".join(lines), top + (len(lines) - 1) * round(1.5 * font_size())
    return dict(
        title=dict(text=title, x=0.0, xanchor="left", yref="container", y=1.0, yanchor="top",
                   pad=dict(t=TOOLBAR_PX[projector()] + 6))
        if title else None,
        height=height, margin=dict(l=10, r=10, t=top, b=10),
        font=dict(size=font_size()),
        legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
        separators="".join(separators()),  # axis and hover numbers as the page's language writes them
    )


def vega_locale(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` (Vega-Lite) with its axis, legend and tooltip numbers in the page's language (1.234,5 in German)."""
    decimal, group = separators()
    number = {"decimal": decimal, "thousands": group, "grouping": [3], "currency": ["", ""]}
    return {**spec, "config": {**spec.get("config", {}), "locale": {"number": number}}}


def _top_margin(*, titled: bool, legend: bool) -> int:
    """The title sits under the modebar's strip, so that the toolbar never covers it however long the title or
    narrow the chart; a legend above the plot gets its own line under the title instead of covering it."""
    return (TOOLBAR_PX[projector()] + 12 + 2 * font_size() if titled else 20) + (2 * font_size() if legend else 0)


def top_margin(*, titled: bool) -> int:
    """The top margin :func:`style` gives a chart without a legend on top (for layouts built on it)."""
    return _top_margin(titled=titled, legend=False)


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


# Buttons the modebar leaves out: with the camera, zoom and reset (and Streamlit's full-screen button) it stays
# one short row, even above a chart in a third of a 1024-pixel page, where the full row wrapped onto the title.
MODEBAR_REMOVED = ("zoomIn2d", "zoomOut2d", "autoScale2d", "pan2d", "lasso2d", "select2d")


def chart_config() -> dict[str, Any]:
    """Plotly's modebar: no logo, few buttons, and a camera button that saves PNG or SVG (see image_format)."""
    return {"displaylogo": False, "toImageButtonOptions": {"format": image_format(), "scale": 2},
            "modeBarButtonsToRemove": list(MODEBAR_REMOVED)}


def show(fig: go.Figure, *, key: str | None = None) -> None:
    """Draw a figure full-width with the modebar of :func:`chart_config`."""
    st.plotly_chart(fig, width="stretch", config=chart_config(), key=key)
