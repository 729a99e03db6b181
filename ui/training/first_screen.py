"""Live Training's first screen in its compact layout (projector mode, lessons): what the class came to see.

On a 1024 × 768 projector the live view's first screen holds, without scrolling, one line with the step and the
held-out metric, and one chosen head's attention heatmap, large, beside compact loss and metric curves. The head
is the one whose attention best follows the task's pattern unless the teacher picks a layer and head; the attention
kind is the one the pattern forms in unless picked. Everything else (the pattern curve, the head scores, every
layer × head, the samples) follows below (:class:`ui.training.views.LiveView` lays it out).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import streamlit as st

from explorer.i18n import _, num, percent
from explorer.runs.frame import RunFrame
from transformer_core.training import Snapshot
from ui.training import charts, head_scores

HEAD = "live.head"  # the head the first screen shows: BEST, or (layer, head), 0-based
BEST = "best"  # ... the head that best follows the task's pattern (the highest score) at the step shown
CURVE_HEIGHT = 175  # pixels of each of the two compact curves beside the heatmap
# Widths of the heatmaps' column and the curves' column, for one configuration and for two side by side...
HEAT_SHARE = {1: (11, 9), 2: (13, 7)}
COLUMN_PX = 908  # ... which share the ~940 pixels a 1024-wide projector leaves, less the gap between them
SMALLER_LABELS_PX = 4  # two heatmaps side by side label their tokens this much smaller, so each row keeps its own
HEAT_HEIGHT_PX = 240  # the tallest a heatmap may be and still leave its labels on a 768-pixel first screen
MAP_SHARE = (3, 1)  # one configuration: the heatmap's width and the width of the line beside it


def status_line(run: RunFrame, status: str) -> str:
    """The step, the held-out metric of every lane (and its step) and the status, as one line of page text."""
    task = run.task
    title = charts.metric_title(task.metric_name)
    values = []
    for i, lane in enumerate(run.lanes):
        value = (lane.last_eval or {}).get(task.metric_name)
        shown = (
            "–"
            if value is None or not math.isfinite(value)
            else (percent(value, 1) if task.metric_name == "accuracy" else num(value, 3))
        )
        values.append(f"{charts.short_label(run, i).strip(' ·')} **{shown}**".strip())
    evaluated = next((int(r["step"]) for r in reversed(run.lanes[0].history) if task.metric_name in r), None)
    shown = " · ".join(values)
    if evaluated is not None:
        metric = _("{metric} (held-out) {values} at step {step}").format(
            metric=title, values=shown, step=num(evaluated)
        )
    else:
        metric = _("{metric} (held-out) {values}").format(metric=title, values=shown)
    eta = run.eta_s
    left = (
        " · " + _("about {seconds} s left").format(seconds=num(eta, 0))
        if eta is not None and run.status == "running"
        else ""
    )
    return (
        _("Step **{step}** / {steps}").format(step=num(run.step), steps=num(run.total_steps))
        + f" · {metric} · {status}{left}"
    )


def kind_select(run: RunFrame, kinds: list[str], key: str) -> str:
    """The attention kind as a compact drop-down (its value is settled by ``status.kind_picker``)."""
    if len(kinds) > 1:
        st.selectbox(
            _("Attention shown"),
            kinds,
            key=key,
            label_visibility="collapsed",
            format_func=lambda k: charts.short_kind_title(k, run.task.family),
            help=_("Which attention the heatmap shows."),
        )
    return st.session_state[key]


def head_select(run: RunFrame, kind: str, key: str) -> Any:
    """Which head the heatmap shows: the best-matching one (the default) or a layer and head; returns the choice."""
    snaps = [lane.snapshots[0] for lane in run.lanes if lane.snapshots and kind in lane.snapshots[0].attention]
    layers = max((s.attention[kind].shape[0] for s in snaps), default=1)
    heads = max((s.attention[kind].shape[1] for s in snaps), default=1)
    scored = bool(snaps) and head_scores.scores_of_kind(snaps[0], kind) is not None
    options = ([BEST] if scored else []) + [(i, j) for i in range(layers) for j in range(heads)]
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]
    st.selectbox(
        _("Head shown"),
        options,
        key=key,
        label_visibility="collapsed",
        format_func=lambda o: (
            _("Best-matching head")
            if o == BEST
            else _("Layer {layer} · head {head}").format(layer=o[0] + 1, head=o[1] + 1)
        ),
        help=_("The head whose attention the heatmap shows; the best-matching one follows the task's pattern score."),
    )
    return st.session_state[key]


def chosen_head(snap: Snapshot, kind: str, choice: Any) -> tuple[int, int, str] | None:
    """(layer, head, note) to show of ``snap``'s ``kind`` for ``choice``, or ``None`` when the model lacks that head.

    The note gives the head's pattern score ("anti-diagonal score 0.93") when ``kind`` has one.
    """
    layers, heads = snap.attention[kind].shape[:2]
    scored = head_scores.scores_of_kind(snap, kind)
    z = snap.scores[scored] if scored is not None else None  # (L, H)
    if choice == BEST and z is not None:
        layer, head = (int(x) for x in np.unravel_index(int(np.argmax(z)), z.shape))
    else:
        layer, head = (layers - 1, 0) if choice == BEST else choice
    if layer >= layers or head >= heads:
        return None
    note = (
        _("{pattern} score {score}").format(pattern=charts.pattern_title(scored), score=num(float(z[layer, head]), 2))
        if z is not None
        else ""
    )
    return layer, head, note


def heat_width(lanes: int) -> int:
    """Pixels across for each configuration's heatmap with its labels and colour bar."""
    left, right = HEAT_SHARE[min(lanes, 2)]
    room = COLUMN_PX * left // (left + right) - 8
    if lanes == 1:
        return room * MAP_SHARE[0] // sum(MAP_SHARE)  # the line beside it takes the rest
    return (room - 16 * (lanes - 1)) // lanes


def head_heading(run: RunFrame, lane: int, snap: Snapshot, note: str) -> str:
    """The words beside one configuration's heatmap (above each when comparing two), whose own headers name its
    layer and head: the configuration when comparing, the step it shows and its pattern score."""
    if len(run.lanes) > 1:
        return _("**{config}** · step {step}").format(config=run.labels[lane].split(" · ")[0], step=num(snap.step)) + (
            f" · {' '.join(note.split()[-2:])}" if note else ""
        )
    return _("**Step {step}**").format(step=num(snap.step)) + (f"  \n{note}" if note else "")
