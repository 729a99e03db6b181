"""Live Training: pick a task, press Start, and watch the loss fall and the attention reorganise."""

import contextlib
import dataclasses

import streamlit as st

from explorer.i18n import _, num
from explorer.i18n.message import localized
from ui.common import theme
from ui.pages import close_page, open_page, share_page
from ui.training import (
    containers,
    controls,
    interventions,
    io,
    line,
    replay,
    resume,
    run,
    share,
    text,
    views,
    watch,
    widgets,
)
from ui.training.status import STATUS_TEXT, kind_picker
from ui.training.watchdog import live_watchdog

projector = theme.projector()
CAPTION = _(
    "Train a small transformer from scratch in your browser session. Loss and accuracy fall, and the "
    "attention heatmaps reorganise into the pattern the task needs. Compare two designs side by side."
)
# A link is read against its task's own tuned defaults, so ?task=x alone trains what choosing x in the list does.
info = open_page(
    "training",
    caption=CAPTION,
    reserved=(resume.RUN_PARAM, share.WATCH_PARAM, share.CLASS_PARAM),
    params=controls.url_params(st.query_params.get("task")),
)
if watch_id := st.query_params.get(share.WATCH_PARAM):  # someone else's run, read-only
    watch.watch_page(watch_id, projector)
    st.stop()
if class_id := st.query_params.get(share.CLASS_PARAM):  # a class link: the teacher's runs, one after another
    watch.class_page(class_id, projector)
    st.stop()
controls.restore_settings()
session = run.session()  # this browser session's run and its rules (explorer.runs.session.RunSession)
resume.take_back_from_address(session, projector)  # a reloaded tab takes its paused run back
info = dataclasses.replace(info, params=controls.url_params(st.session_state[controls.TASK]))
share_page(info)
join_slot = st.empty()  # always drawn, so that what follows keeps its place when the box comes and goes
if not projector and (session.run is None or session.run.status == "ready"):
    with join_slot.container(), st.expander("👀 " + _("Join a class: watch your teacher's run")):
        watch.join_box()
# Projector mode keeps the settings in a folded panel in the control bar's row: the first screen is the run.
bar = st.container(horizontal=True, vertical_alignment="center") if projector else None
settings = (
    bar.popover("⚙️ " + _("Settings"), help=_("The task, the model and training: what Start trains."))
    if projector
    else st.expander(
        "⚙️ " + _("Task, model and training"), expanded=session.run is None or session.run.status == "ready"
    )
)
with settings:
    task = widgets.task_picker()
    text.text_panel(task.name)
    widgets.settings_panel(task)
    widgets.compare_panel(task)
controls.save_settings()
close_page(info)

live_run, verdict, error = run.build_run()
# No notice of an earlier run stays; the view keeps its place.
with containers.swapped_container(containers.NOTICES, object()):
    run.show_notice()
    resume.moved_away_notice(session)
    if problem := text.text_problem(st.session_state[controls.TASK]):  # the user's own text cannot be trained on
        st.warning(localized(problem), icon="✍️")
    elif error:
        st.error(_("These settings do not make a valid model: {error}").format(error=localized(error)), icon="🚫")
    elif verdict is not None and not verdict.ok:
        st.error(f"{localized(verdict.reason)} {localized(verdict.suggestion)}", icon="🛑")
    elif verdict is not None and not projector:
        st.caption(
            _(
                "Estimated per step: {memory} MB of memory for training, about {ms} ms (budget on this server: "
                "{budget} MB, {seconds} s)."
            ).format(
                memory=num(verdict.memory_bytes / 2**20, 0),
                ms=num(1000 * verdict.step_seconds, 0),
                budget=num(verdict.memory_budget_bytes / 2**20, 0),
                seconds=num(verdict.step_budget_s),
            )
        )
    ready = verdict is not None and verdict.ok and not error
    run.settings_changed_notice(live_run, ready)
run.control_bar(live_run, ready=ready, projector=projector, bar=bar)
resume.show_token(session, projector)
if live_run is None:
    st.stop()
# Fixed slots: what they show comes and goes, and a slot drawn empty clears what an earlier run left in it.
line_slot, replay_slot, share_slot = st.empty(), st.empty(), st.empty()
with replay_slot.container():
    replay.replay_banner(session, run.train_for_real)
with share_slot.container():
    share.share_panel(session)
share.keep_count_current(session)
live_watchdog(STATUS_TEXT["running"])

run.write_samples()
with containers.run_container(live_run, projector):
    kind = kind_picker(live_run.frame())
    view = views.LiveView(live_run.frame, projector=projector, kind=kind, pinned_step=st.session_state.get(views.PIN),
                          compact=theme.one_column())
    with view.timelapse:
        view.frame_label = io.timelapse_controls(view.run, kind, follow=view.follows_training)
    view.refresh()
    view.draw_numbers()
    # A projector or a phone keeps the first screen for the run: the heads-off panel opens below it on a click.
    fold = theme.one_column() and live_run.status in interventions.SHOWN_STATUSES
    with st.expander("🔌 " + _("Switch heads off")) if fold else contextlib.nullcontext():
        interventions.heads_off_panel(live_run, sampling=text.sampling(live_run.task))
    if not projector:
        with st.expander("⬇️ " + _("Downloads and checkpoints")):
            io.downloads(live_run, kind)
            io.upload()
        st.caption(
            _(
                "Once it has trained, the model of configuration A is also available on the Attention Lab and "
                "ViT Patching pages, and its learned positions (if it has them) on the Positional Encodings "
                "page."
            )
        )

with line_slot.container():
    line.wait_in_line(session)
run.train_live(view)
