"""Live Training page: the "Switch heads off" panel of a paused or finished run.

Students click heads off (per configuration, when comparing) and see at once the held-out metric, the loss and
the sample predictions without them, beside the same numbers with every head on; a button measures every head's
importance (the metric lost when that head alone is off), drawn beside the heads' pattern scores. The measuring
is done by :mod:`explorer.runs.heads_off`, remembered per lane and training step. The heads switched off are
URL settings (``?off=cross.1.3&b_off=...``) and never change the run: Resume trains with every head on.

Each configuration's part is a fragment: a click reruns that part only (one evaluation, not the whole page with
its charts), and writes the address bar itself; the page's "Copy link" control follows on the next page run.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import streamlit as st

from explorer.heads import MAX_HEADS
from explorer.i18n import _, ngettext, num
from explorer.render import heatmap as hm
from explorer.runs.heads_off import (
    HeadProbe,
    Importance,
    Outcome,
    all_head_keys,
    head_label,
    probe_for,
    refs_from_keys,
    stacked_rows,
)
from explorer.runs.live import LiveRun
from explorer.runs.recording import ReplayRun
from transformer_core.tasks import Task
from ui.common import charts as common_charts
from ui.common.chart_style import half_title_chars
from ui.common.exports import spec_downloads
from ui.common.head_switches import head_switches
from ui.common.urlstate import UrlParam, push_url
from ui.training.charts import metric_name, metric_title, pattern_title, short_kind_title, short_label
from ui.training.samples import samples_html
from ui.training.status import metric_text
from ui.training.task_labels import shown_label, task_title

OFF, B_OFF = "live.heads_off", "live.b_heads_off"  # list of head keys switched off in configuration A, B
OFF_KEYS = (OFF, B_OFF)
PROBES = "live.probes"  # dict lane -> (weak ref to the trainer, HeadProbe): measurements of the shown step
MAX_LAYERS = 8  # the most layers any server offers (the URL accepts heads of models up to this size)
URL_PARAMS = tuple(
    UrlParam(key, (), choices=all_head_keys(MAX_LAYERS, MAX_HEADS), name=name)
    for key, name in ((OFF, "off"), (B_OFF, "b_off"))
)
KEYS = OFF_KEYS  # URL settings that never change the run
SHOWN_STATUSES = ("paused", "done", "stopped")  # a run whose model can be measured (not moving, not NaN)


def heads_off_panel(run: LiveRun, *, sampling: dict[str, Any] | None = None) -> None:
    """The panel, for a paused or finished run (nothing while it trains, is ready or diverged)."""
    if run.status not in SHOWN_STATUSES:
        return
    st.subheader(
        "🔌 " + _("Switch heads off"), help=_("A heatmap shows where a head looks, not whether the model needs it.")
    )
    st.caption(
        _(
            "Click heads to switch them off (a highlighted head is off) and see what the trained model can no "
            "longer do. Nothing in the model changes: each head's output is set to zero only while it is "
            "measured, and Resume trains with every head on."
        )
    )
    columns = st.columns(len(run.trainers), gap="large")
    for lane, column in enumerate(columns):
        with column:
            _lane(run, lane, sampling)


@st.fragment
def _lane(run: LiveRun, lane: int, sampling: dict[str, Any] | None) -> None:
    """One configuration's switches and results; a click reruns only this, not the whole page."""
    store = st.session_state.setdefault(PROBES, {})
    probe = probe_for(
        store, lane, run.trainers[lane], lock=run.lock, threads=run.threads, sampling=sampling, at=run.model_at(lane)
    )
    key = OFF_KEYS[lane]
    name = f"**{shown_label(run.labels[lane])}** · " if len(run.trainers) > 1 else ""
    measured = (
        _("Measured now on the model at **step {step}** (a recorded model of this replay)")
        if isinstance(run, ReplayRun)
        else _("Measured now on the model at **step {step}**")
    )
    st.markdown(
        name + measured.format(step=num(probe.step)),
        help=_(
            "Every number in this panel comes from this one model at this step; the numbers above it "
            "say which step they were measured at."
        ),
    )
    titles = {s: short_kind_title(s, run.task.family) for s in probe.heads}  # one line each
    off = probe.known(refs_from_keys(st.session_state.get(key) or ()))
    head_switches(probe.heads, off, key=key, titles=titles, side_by_side=len(run.trainers) == 1)
    base, now = probe.outcome(), probe.outcome(off)
    _numbers(run, base, now)
    _samples(run, lane, base, now, probe.step)
    _importance(run, lane, probe)
    push_url(URL_PARAMS)  # a click reruns only this fragment: the address bar follows it here


def _numbers(run: LiveRun, base: Outcome, now: Outcome) -> None:
    """The headline metric and the held-out loss, with every head on and with the chosen heads off."""
    task = run.task
    off = ngettext("{n} head off", "{n} heads off", len(now.heads)).format(n=num(len(now.heads)))
    # The headline and the held-out loss (as the help says; short enough for a projector); where the headline is
    # the loss itself (a language model), its next-token accuracy instead of the same number twice
    second = (_("Accuracy"), "accuracy", True) if task.metric_name == "val_loss" else (_("Loss"), "loss", False)
    shown = ((metric_title(task.metric_name), task.metric_name, task.higher_is_better), second)
    wide = len(run.trainers) == 1  # four metrics in a row; two rows of two on half a page
    cols = st.columns(2 * len(shown)) if wide else [c for _i in shown for c in st.columns(2)]
    for i, (label, metric, higher_is_better) in enumerate(shown):
        before, after = base.metrics.get(metric), now.metrics.get(metric)
        cols[2 * i].metric(
            _("{metric} · all heads on").format(metric=label),
            metric_text(metric, before),
            help=_("On the held-out data the trainer evaluates on, with every head working."),
        )
        cols[2 * i + 1].metric(
            f"{label} · {off}",
            metric_text(metric, after) if now.heads else "–",
            delta=_change_text(metric, before, after) if now.heads else None,
            **delta_style(metric, before, after, higher_is_better),
            help=_("The same held-out data with the chosen heads switched off."),
        )
    if not now.heads:
        st.caption(_("No head is off yet: click one above."))


def _change_text(metric: str, before: float | None, after: float | None) -> str | None:
    if before is None or after is None:
        return None
    change = after - before
    if metric == "accuracy":
        return _("{change} points").format(change=signed(100 * change, 1))
    return signed(change, 3)


def signed(value: float, digits: int) -> str:
    """``value`` with its sign, in the page's number format: "+15.8", "-0.4", and "0.0" (no sign) where it rounds
    to nothing."""
    return ("+" if round(value, digits) > 0 else "") + unsigned_zero(value, digits)


def unsigned_zero(value: float, digits: int) -> str:
    """``value`` in the page's number format, "0.0" rather than "-0.0" where it rounds to nothing."""
    return num(0.0 if round(value, digits) == 0 else value, digits)


def delta_style(metric: str, before: float | None, after: float | None, higher_is_better: bool) -> dict[str, str]:
    """The colour and arrow of a metric's change: grey and none where it rounds to nothing (a green "↑ +0.0" said
    a head that changed nothing had helped), else green for better."""
    digits = 1 if metric == "accuracy" else 3
    scale = 100 if metric == "accuracy" else 1
    if before is None or after is None or round(scale * (after - before), digits) == 0:
        return {"delta_color": "off", "delta_arrow": "off"}
    return {"delta_color": "normal" if higher_is_better else "inverse"}


def _samples(run: LiveRun, lane: int, base: Outcome, now: Outcome, step: int) -> None:
    family = run.task.family
    label = short_label(run, lane)
    tables = [
        samples_html(base.samples, family, _("All heads on{config} · step {step}").format(config=label, step=num(step)))
    ]
    if now.heads:
        heads = ", ".join(f"{s} L{la + 1} H{h + 1}" for s, la, h in now.heads)
        tables.append(
            samples_html(
                now.samples,
                family,
                _("{n} off{config}: {heads}").format(n=num(len(now.heads)), config=label, heads=heads),
            )
        )
    columns = st.columns(len(tables)) if len(run.trainers) == 1 else [st.container() for _i in tables]
    for column, html in zip(columns, tables, strict=True):
        column.html(html)


def _importance(run: LiveRun, lane: int, probe: HeadProbe) -> None:
    name = metric_name(run.task.metric_name)
    count = sum(layers * heads for layers, heads in probe.heads.values())
    slot = st.empty()  # the button, until the map is measured for this step
    if probe.measured_importance is None and slot.button(
        "📊 " + _("Measure every head{config}").format(config=short_label(run, lane)),
        key=f"live.importance{lane}",
        help=_(
            "Switches each of the {count} heads off alone and measures the {metric} on the held-out "
            "data: how much the model needs that head."
        ).format(count=num(count), metric=name),
    ):
        with st.spinner(_("Switching {count} heads off one at a time…").format(count=num(count))):
            probe.importance()
        slot.empty()
    importance = probe.measured_importance
    if importance is None:
        return
    spec = importance_spec(importance, run.task, probe.step)
    left, right = st.columns(2) if len(run.trainers) == 1 else (st.container(), st.container())
    with left:
        common_charts.show(
            common_charts.spec_figure(spec, x_title=_("head"), numbers=True, title_chars=half_title_chars()),
            key=f"live.importance.map{lane}",
        )
        spec_downloads(
            spec,
            name=f"{run.task.name}-head-importance-step{probe.step}{short_label(run, lane).replace(' · ', '-')}",
            key=f"live.importance.dl{lane}",
        )
    with right:
        _scores(run, lane, probe)
    st.caption(importance_caption(importance))


def importance_caption(importance: Importance) -> str:
    """One line naming the head the model needs most, and what switching it off alone costs."""
    name = metric_name(importance.metric_name)
    top, cost = importance.top()
    if cost <= 0:
        return _(
            "No head alone makes the {metric} worse: each can go on its own (some may still be needed together)."
        ).format(metric=name)
    return _(
        "Most needed: **{head}** (off alone: {metric} {drop} worse). Heads near 0 can go on their own; heads "
        "that carry the same pattern can still be needed together."
    ).format(head=head_label(top), metric=name, drop=_drop_text(importance.metric_name, cost))


def _drop_text(metric: str, value: float) -> str:
    return points_text(value) if metric == "accuracy" else num(value, 3)


def points_text(fraction: float) -> str:
    """An accuracy change in percentage points, e.g. "17.6 points" ("0.0 points", never "-0.0")."""
    return _("{change} points").format(change=unsigned_zero(100 * fraction, 1))


def importance_spec(importance: Importance, task: Task, step: int) -> hm.HeatmapSpec:
    """The importance map, stack under stack (rows "cross L1", columns "H1"): red = the model needs the head.

    An accuracy is counted in percentage points (25 = a quarter of the held-out examples more go wrong).
    """
    z, rows = stacked_rows(importance.drop)
    points = importance.metric_name == "accuracy"
    name = metric_name(importance.metric_name)
    unit = (
        _("{metric} points lost") if points else _("{metric} lost") if task.higher_is_better else _("{metric} gained")
    ).format(metric=name)
    return hm.matrix_spec(
        100 * z if points else z,
        rows,
        [f"H{j + 1}" for j in range(z.shape[1])],
        diverging=True,
        decimals=1 if points else 2,
        title=_("Head importance ({unit}) · step {step}").format(unit=unit, step=step),
        hover_name=unit,
    )


def pattern_spec(scores: dict[str, np.ndarray], step: int) -> hm.HeatmapSpec | None:
    """The pattern scores (pattern key -> (layers, heads)) stack under stack, as the importance map lays them out."""
    if not scores:
        return None
    z, rows = stacked_rows({key.split(":")[0]: v for key, v in scores.items()})
    what = " / ".join(pattern_title(k) for k in scores)
    return hm.matrix_spec(
        z,
        rows,
        [f"H{j + 1}" for j in range(z.shape[1])],
        scale=common_charts.colorscale(),
        zmin=0.0,
        zmax=1.0,
        title=_("Pattern score ({patterns}) · step {step}").format(patterns=what, step=step),
        hover_name=_("score"),
    )


def _scores(run: LiveRun, lane: int, probe: HeadProbe) -> None:
    spec = pattern_spec(probe.pattern_scores(), probe.step)
    if spec is None:
        st.caption(
            _("The {task} task has no pattern score to set beside the importance map.").format(
                task=task_title(run.task)
            )
        )
        return
    common_charts.show(common_charts.spec_figure(spec, x_title=_("head"), numbers=True, title_chars=half_title_chars()),
                       key=f"live.pattern.map{lane}")
