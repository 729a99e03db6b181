"""Live Training page: the live view's drawings, built once per update and view and shared by every watcher.

The watchers of one channel see the same run: :func:`shared` keys each drawing (a curve, an attention grid, the
head scores, the sample table) by the channel and everything the drawing shows — the rows, snapshots or samples it
was made from, the step it marks, the attention kind, and the look (colour scale, colour range, projector mode,
light or dark theme) — and keeps it in one process-wide :class:`~explorer.render.shared.SharedRenders`. The first
watcher to need a drawing builds it; the others get the same object. Chart data is kept as an Arrow table, which
Streamlit sends without converting it again (a pandas frame is converted on every send: ~3 ms for a curve), written
to Arrow bytes once for all the watchers (:func:`ui.common.st_costs.send_once`).

Nothing per session goes in: no session id, no widget value other than the view itself, and values are never
changed once made.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Hashable
from typing import Any

import pandas as pd
import pyarrow as pa
import streamlit as st

from explorer.i18n import language
from explorer.render.shared import SharedRenders
from ui.common import st_costs
from ui.common.chart_style import colorscale, label_colour, stretch_attention
from ui.common.theme import projector

MAX_BYTES = 24 * 1024**2  # the drawings kept for all channels together (an attention grid weighs 20–200 kB)


@st.cache_resource(show_spinner=False)
def renders() -> SharedRenders:
    """The process's shared drawings (read-only values, no per-user data; see the module docstring)."""
    return SharedRenders(MAX_BYTES, weigh)


def weigh(value: Any) -> int:
    """About how many bytes ``value`` keeps alive: strings, Arrow tables, specs, and tuples of them."""
    if isinstance(value, str | bytes):
        return len(value)
    if isinstance(value, pa.Table):
        return 2 * value.nbytes  # the table and the Arrow bytes written once from it (st_costs.send_once)
    if isinstance(value, tuple | list):
        return 64 + sum(weigh(v) for v in value)
    if isinstance(value, dict):
        return len(repr(value))
    if hasattr(value, "to_json"):  # a plotly figure
        return len(value.to_json())
    return sys.getsizeof(value)


def look() -> tuple[Hashable, ...]:
    """Everything in this session's settings that changes how a drawing looks (its language too)."""
    return colorscale(), stretch_attention(), projector(), label_colour(), language()


def frozen(value: Any) -> Any:
    """``value`` with its pandas frames as Arrow tables (in tuples too), each written to bytes once for every send:
    what the cache keeps and charts send."""
    if isinstance(value, pd.DataFrame):
        value = pa.Table.from_pandas(value)
    if isinstance(value, pa.Table):
        return st_costs.send_once(value)
    if isinstance(value, tuple):
        return tuple(frozen(v) for v in value)
    return value


def is_empty(data: pd.DataFrame | pa.Table) -> bool:
    """Whether chart data has no rows (a pandas frame or an Arrow table)."""
    return data.num_rows == 0 if isinstance(data, pa.Table) else data.empty


def shared(channel: str, what: tuple[Hashable, ...], build: Callable[[], Any]) -> Any:
    """The drawing ``what`` of channel ``channel`` in this session's look, built by ``build`` once for all."""
    return renders().get((channel, look(), *what), lambda: frozen(build()))
