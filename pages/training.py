"""Live Training: pick a task, press Start, and watch the loss fall and the attention reorganise."""

import streamlit as st

from ui import training_controls as tc
from ui import training_io as tio
from ui import training_resume as resume
from ui import training_run as tr
from ui import training_text as tt
from ui import training_views as tv
from ui.router import ensure_router
from ui.training_watchdog import live_watchdog
from ui.urlstate import bind_url, push_url, share_link

ensure_router()  # a deep link on a fresh server must still go through app.py

projector = tv.projector_state()

st.title("📈 Live Training")
if not projector:
    st.caption("Train a small transformer from scratch in your browser session. Loss and accuracy fall, and the "
               "attention heatmaps reorganise into the pattern the task needs. Compare two designs side by side.")
bind_url(tc.url_params(st.query_params.get("task")), page=tc.PAGE, reserved=(resume.RUN_PARAM,))
tc.restore_settings()
resume.adopt_from_url(tr.RUN, tr.RUN_SIGNATURE, tr.NOTICE)  # a reloaded tab takes its paused run back
if not projector:
    share_link(tc.url_params(st.session_state[tc.TASK]), url_path=tc.PAGE)
    run = tr.current_run()
    with st.expander("⚙️ Task, model and training", expanded=run is None or run.status == "ready"):
        task = tc.task_picker()
        tt.text_panel(task.name)
        tc.settings_panel(task)
        tc.compare_panel(task)
tc.save_settings()
push_url(tc.url_params(st.session_state[tc.TASK]))

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
tr.control_bar(run, ready=ready, projector=projector)
if run is None:
    st.stop()
live_watchdog(tv.STATUS_TEXT["running"])

with tv.run_container(run, projector):
    kind = tv.kind_picker(run)
    view = tv.LiveView(run, projector=projector, kind=kind, pinned_step=st.session_state.get(tv.PIN),
                       sampling=tt.sampling(run.task))
    with view.timelapse:
        view.frame_label = tio.timelapse_controls(run, kind, follow=view.follows_training)
    view.refresh()
    view.draw_numbers()
    if not projector:
        with st.expander("⬇️ Downloads and checkpoints"):
            tio.downloads(run, kind)
            tio.upload()
        st.caption("Once it has trained, the model of configuration A is also available on the Attention Lab and "
                   "ViT Patching pages, and its learned positions (if it has them) on the Positional Encodings "
                   "page.")

tr.train_live(run, view)
