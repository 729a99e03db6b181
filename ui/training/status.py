"""The live view's words and picks: the run's status and its status line's metrics, a metric as shown, which
snapshot and which attention kind."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import streamlit as st

from explorer.i18n import N_, _, num, percent
from explorer.runs.frame import RunFrame
from transformer_core.training import Snapshot
from ui.common import theme
from ui.training import charts

KIND = "live.kind"  # which attention the heatmaps show
STATUS_TEXT = {  # English; shown through _() (the watchdog compares the progress bar's text with "running")
    "ready": N_("Ready — press Start"),
    "running": N_("Training…"),
    "paused": N_("Paused"),
    "done": N_("Finished"),
    "stopped": N_("Stopped"),
    "diverged": N_("Diverged"),
}


def snapshot_at(snapshots: list[Snapshot], step: int | None) -> Snapshot | None:
    """The snapshot taken at ``step`` (the nearest one if it was thinned out), or the latest when ``None``."""
    if not snapshots:
        return None
    if step is None:
        return snapshots[-1]
    return min(snapshots, key=lambda s: (abs(s.step - step), s.step))


def metric_text(name: str, value: float | None) -> str:
    """A metric value as shown: accuracy in percent, others with three decimals, "–" when unknown."""
    if value is None or not math.isfinite(value):
        return "–"
    return percent(value, 1) if name == "accuracy" else num(value, 3)


def kind_picker(run: RunFrame) -> str:
    """A radio of the attention kinds the model has; the default is the one the task's pattern lives in."""
    snaps = run.lanes[0].snapshots
    kinds = list(snaps[0].attention) if snaps else []
    if not kinds:
        return ""
    preferred = [p.split(":")[0] for p in run.task.pattern_names if p.split(":")[0] in kinds]
    if st.session_state.get(KIND) not in kinds:
        st.session_state[KIND] = preferred[0] if preferred else kinds[0]
    if len(kinds) > 1 and not theme.one_column():  # the compact first screen has a drop-down instead
        st.radio(
            _("Attention shown"),
            kinds,
            key=KIND,
            horizontal=True,
            format_func=lambda k: charts.kind_title(k, run.task.family),
            help=_("Which attention the heatmaps show: every layer (rows) × head (columns)."),
        )
    return st.session_state[KIND]


def eval_step(history: Sequence[dict[str, float]], metric: str) -> int | None:
    """The step of the latest evaluation in ``history`` (the row that holds ``metric``), or ``None``."""
    return next((int(row["step"]) for row in reversed(history) if metric in row), None)


def status_text(run: RunFrame) -> str:
    """The run's status in words ("Training…", "Paused", …; a replay says so)."""
    if run.extra.get("watched") and run.status == "ready":
        return _("Ready — waiting for its owner to start it")
    if run.extra.get("replay") and run.status in ("running", "paused"):
        return _("Replaying a recorded run…") if run.status == "running" else _("Replay paused")
    return _(STATUS_TEXT[run.status])


def status_metrics(run: RunFrame) -> list[tuple[str, str, str]]:
    """(label, value, help) of every metric of the status line: step, speed, then each lane's loss and metric."""
    task = run.task
    metric_title = charts.metric_title(task.metric_name)
    rate = run.steps_per_second
    shown = [
        (
            _("Step"),
            f"{num(run.step)} / {num(run.total_steps)}",
            _("Optimisation steps done, out of the run's total."),
        ),
        (
            _("Steps per second"),
            num(rate, 1) if rate else "–",
            _("How fast training runs (wall clock, page updates included)."),
        ),
    ]
    for i, lane in enumerate(run.lanes):
        recent = [r["loss"] for r in lane.history[-20:]]
        loss = float(np.mean(recent)) if recent else math.nan
        evaluated = eval_step(lane.history, task.metric_name)
        shown.append(
            (
                _("Train loss{config}").format(config=charts.short_label(run, i)),
                metric_text("loss", loss),
                _("Mean training loss over the last 20 steps."),
            )
        )
        shown.append(
            (
                f"{metric_title}{charts.short_label(run, i)}"
                + (" · " + _("step {step}").format(step=num(evaluated)) if evaluated is not None else ""),
                metric_text(task.metric_name, (lane.last_eval or {}).get(task.metric_name)),
                _("On held-out data at the last evaluation; the task counts as learned at {target}.").format(
                    target=metric_text(task.metric_name, task.metric_target)
                ),
            )
        )
    return shown
