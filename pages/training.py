"""Live Training: pick a task, press Start, and watch the loss fall and the attention reorganise."""

import dataclasses

import streamlit as st

from ui.pages import close_page, open_page, share_page
from ui.training import controls as tc
from ui.training import interventions as ti
from ui.training import io as tio
from ui.training import line, replay, resume, share, watch
from ui.training import run as tr
from ui.training import text as tt
from ui.training import views as tv
from ui.training.watchdog import live_watchdog

projector = tv.projector_state()
CAPTION = ("Train a small transformer from scratch in your browser session. Loss and accuracy fall, and the "
           "attention heatmaps reorganise into the pattern the task needs. Compare two designs side by side.")
# A link is read against its task's own tuned defaults, so ?task=x alone trains what choosing x in the list does.
info = open_page("training", caption=CAPTION, reserved=(resume.RUN_PARAM, share.WATCH_PARAM),
                 params=tc.url_params(st.query_params.get("task")))
if watch_id := st.query_params.get(share.WATCH_PARAM):  # someone else's run, read-only
    watch.watch_page(watch_id, projector)
    st.stop()
tc.restore_settings()
resume.adopt_from_url(tr.RUN, tr.RUN_SIGNATURE, tr.NOTICE)  # a reloaded tab takes its paused run back
info = dataclasses.replace(info, params=tc.url_params(st.session_state[tc.TASK]))
share_page(info)
if not projector:
    run = tr.current_run()
    with st.expander("⚙️ Task, model and training", expanded=run is None or run.status == "ready"):
        task = tc.task_picker()
        tt.text_panel(task.name)
        tc.settings_panel(task)
        tc.compare_panel(task)
tc.save_settings()
close_page(info)

run, verdict, error = tr.build_run()
with tv.swapped_container(tv.NOTICES, object()):  # no notice of an earlier run stays; the view keeps its place
    tr.show_notice()
    resume.moved_away_notice()
    if problem := tt.text_problem(st.session_state[tc.TASK]):  # the user's own text cannot be trained on (yet)
        st.warning(problem, icon="✍️")
    elif error:
        st.error(f"These settings do not make a valid model: {error}", icon="🚫")
    elif verdict is not None and not verdict.ok:
        st.error(f"{verdict.reason} {verdict.suggestion}", icon="🛑")
    elif verdict is not None and not projector:
        st.caption(f"Estimated per step: {verdict.memory_bytes / 2**20:,.0f} MB of memory for training, about "
                   f"{1000 * verdict.step_seconds:,.0f} ms (budget on this server: "
                   f"{verdict.memory_budget_bytes / 2**20:,.0f} MB, {verdict.step_budget_s:g} s).")
    ready = verdict is not None and verdict.ok and not error
    tr.settings_changed_notice(run, ready)
tr.control_bar(run, ready=ready, projector=projector, waiting=line.waiting())
if run is None:
    st.stop()
# Fixed slots: what they show comes and goes, and a slot drawn empty clears what an earlier run left in it.
line_slot, replay_slot, share_slot = st.empty(), st.empty(), st.empty()
with replay_slot.container():
    replay.replay_banner(run, tr.train_for_real)
with share_slot.container():
    share.share_panel(run)
live_watchdog(tv.STATUS_TEXT["running"])

tr.write_samples(run)
with tv.run_container(run, projector):
    kind = tv.kind_picker(run.frame())
    view = tv.LiveView(run.frame, projector=projector, kind=kind, pinned_step=st.session_state.get(tv.PIN))
    with view.timelapse:
        view.frame_label = tio.timelapse_controls(view.run, kind, follow=view.follows_training)
    view.refresh()
    view.draw_numbers()
    ti.heads_off_panel(run, sampling=tt.sampling(run.task))
    if not projector:
        with st.expander("⬇️ Downloads and checkpoints"):
            tio.downloads(run, kind)
            tio.upload()
        st.caption("Once it has trained, the model of configuration A is also available on the Attention Lab and "
                   "ViT Patching pages, and its learned positions (if it has them) on the Positional Encodings "
                   "page.")

with line_slot.container():
    line.wait_in_line(run, on_start=resume.register)
tr.train_live(run, view)
