"""Live Training page: the session's run, the buttons that drive it, and the live training loop.

Design: the run (a :class:`~explorer.runs.live.LiveRun`) lives in ``st.session_state``, so each browser
session has its own. While it is running, the page script itself loops — train for about
:data:`TICK_S` seconds, redraw the placeholders, repeat. Any click (Pause, a slider, another page) makes
Streamlit interrupt the script at its next redraw and run it again; the button's callback then changes the
run's status before the page is drawn. This needs ``runner.fastReruns = false`` (.streamlit/config.toml):
fast reruns would stop the loop as if the tab had closed and start a second script thread at once.
The loop redraws only while the browser keeps up (:func:`_redraw`), so a slow browser skips frames instead of
being dropped by the server. When the page's connection ends (a reload, a closed tab, a lost network), the run
is paused and kept for a while, and reloading the tab's address brings it back (:mod:`ui.training.resume`).
Leaving the page for another page of the app stops a running run and frees its gradients and optimiser state,
and so does Stop or the end of a run (the trained model stays for the other pages and the downloads). At most
``Limits.max_live_runs`` runs train at once in the server process: Start and Resume say so when it is busy.
"""

from __future__ import annotations

import streamlit as st

from explorer.guard import GuardResult
from explorer.runs.live import LIVE_THREADS, LiveRun
from explorer.runs.recording import ReplayRun
from ui.common import st_internals
from ui.common.state import TrainedModel, publish_trained
from ui.training import controls as tc
from ui.training import line, replay, resume, share
from ui.training import text as tt
from ui.training.views import PIN, LiveView

RUN = "live.run"  # LiveRun | None: this session's run
RUN_SIGNATURE = "live.run_signature"  # the settings the run was built from
NOTICE = "live.notice"  # (level, text) shown once on the next run: "info", "success" or "error"
TICK_S = 0.25  # seconds of training between two redraws while running
SAMPLES = 6  # sample predictions shown per configuration
SAMPLE_SEED = 7  # the same held-out examples at every evaluation, so students can follow them
# Redraw only while fewer messages than this wait for the browser. One redraw sends about 25 (metrics, curves,
# heatmaps); Streamlit drops a session at 500 queued, so this leaves a wide margin and costs a fast browser
# nothing (its queue stays near empty).
BACKLOG_LIMIT = 60
LOG = st_internals.logger("transformer_explorer.live")


def current_run() -> LiveRun | None:
    """This session's run, if one was built."""
    return st.session_state.get(RUN)


def leave_page() -> None:
    """Stop a running run and free its training memory: the router calls this when another page runs.

    Nobody watches the run any more, so its gradients and optimiser state go; the model trained so far stays
    for the other pages, and a notice on the way back says what happened. A paused run is kept as it is: the
    user paused it on purpose and may come back to resume.
    """
    line.leave_line()
    run = current_run()
    if run is None or run.status != "running":
        return
    if isinstance(run, ReplayRun):
        run.pause()  # a replay trains nothing: it waits, paused, for the way back
        return
    step = run.step
    run.release("stopped when the Live Training page was left")
    publish(run)
    st.session_state[NOTICE] = ("info", f"Training stopped at step {step} when you left this page, and its training "
                                        "memory was freed. The model trained so far is still used by the other "
                                        "pages; press Start for a new run.")


def build_run(force: bool = False) -> tuple[LiveRun | None, GuardResult | None, str | None]:
    """Make sure the session's run matches the settings; returns (run, guard verdict, error message).

    A run that has not started follows the settings; one that has trained keeps its own settings until
    Reset, or Start after it finished (both pass ``force``).
    """
    try:
        task, specs = tc.build_specs()
    except ValueError as err:
        return current_run(), None, str(err)
    verdict = tc.guard(task, specs)
    run, signature = current_run(), tc.settings_signature()
    stale = run is None or st.session_state.get(RUN_SIGNATURE) != signature
    if verdict.ok and (force or (stale and (run is None or run.status == "ready"))):
        try:
            new = LiveRun(task, specs, threads=LIVE_THREADS)
        except ValueError as err:
            return current_run(), verdict, str(err)
        if run is not None and run.training_state_bytes:
            run.release("replaced by a new run")  # frees its place under the server's run limit and its memory
        if run is not None:
            share.end_channel("Its owner started a new run.", run)
        line.leave_line()
        resume.forget()
        run = new
        st.session_state[RUN], st.session_state[RUN_SIGNATURE] = run, signature
        share.remember_settings()
        st.session_state[PIN] = None
    return run, verdict, None


def publish(run: LiveRun | None, *, force: bool = False) -> None:
    """Offer configuration A's model to the other pages of this session (once it has trained, or loaded)."""
    if run is None or (run.trainers[0].step == 0 and not force):
        return
    trainer = run.trainers[0]
    publish_trained(TrainedModel(family=run.task.family, task_name=run.task.name, task_title=run.task.title,
                                 model=trainer.model, config=trainer.model_config, step=trainer.step,
                                 task=run.task))


def _run_if_free(run: LiveRun) -> None:
    """Start or resume ``run`` when a place is free, else wait in line for one (a replay needs no place)."""
    if isinstance(run, ReplayRun):
        run.start()
    elif line.start_or_wait(run):
        resume.register(run)  # a reloaded tab finds the run again through its address


def _start() -> None:
    tc.restore_settings()
    run = current_run()
    run, verdict, error = build_run(force=run is not None and run.finished)
    if error or verdict is None or not verdict.ok:
        st.session_state[NOTICE] = ("error", error or (verdict.reason if verdict else ""))
        return
    played = replay.replay_for(run, tc.settings_signature())
    if played is not run:
        st.session_state[RUN] = run = played
    _run_if_free(run)


def train_for_real() -> None:
    """Train the current settings now instead of replaying their recording."""
    tc.restore_settings()
    st.session_state[replay.REAL] = tc.settings_signature()
    run, verdict, error = build_run(force=True)
    if run is not None and not error and verdict is not None and verdict.ok:
        _run_if_free(run)


def _pause() -> None:
    run = current_run()
    if run is not None:
        run.pause()
        publish(run)


def _resume() -> None:
    if current_run() is not None:
        _run_if_free(current_run())


def _step() -> None:
    run = current_run()
    if run is not None:
        run.step_once()
        publish(run)
        finish(run)


def _stop() -> None:
    run = current_run()
    if run is not None:
        run.release("stopped by the user")
        publish(run)


def finish(run: LiveRun) -> None:
    """Keep a finished run's recording for replays and free its gradients and optimiser state: it cannot train
    on (Start makes a new run)."""
    if not run.finished:
        return
    replay.keep_recording(run)
    if run.training_state_bytes:
        run.release("finished")


def write_samples(run: LiveRun) -> None:
    """Each lane's sample predictions after a new evaluation (a waiting click ends the writing early)."""
    sampling = tt.sampling(run.task)
    run.update_samples(sampling, tt.sampling_caption(sampling), SAMPLES, SAMPLE_SEED,
                       interrupted=st_internals.click_pending)


def _reset() -> None:
    tc.restore_settings()
    build_run(force=True)


def settings_changed_notice(run: LiveRun | None, ready: bool) -> None:
    """Say that the settings changed since the run was built, with the button that trains them.

    Only when that button can be pressed: Reset while the run is running or paused (Start is off then), Start
    once it is over (Start makes a new run).
    """
    if run is None or run.status == "ready" or not ready or st.session_state.get(RUN_SIGNATURE) == \
            tc.settings_signature():
        return
    button = "Start" if run.finished else "Reset"
    st.info(f"The settings changed since this run started. Press **{button}** to train with the new settings.",
            icon="🔁")


def control_bar(run: LiveRun | None, ready: bool, projector: bool, waiting: bool = False) -> None:
    """Start, Pause/Resume, Step once, Stop and Reset (projector mode: Start, Pause/Resume and Reset); Start is
    off while the run ``waiting`` in line for a place."""
    status = run.status if run is not None else "ready"
    bar = st.container(horizontal=True)
    bar.button("Start", icon=":material/play_arrow:", type="primary", on_click=_start, key="live.start",
               disabled=not ready or waiting or status in ("running", "paused"),
               help="Train from the current settings (after a finished run: a new run).")
    if status == "paused":
        bar.button("Resume", icon=":material/play_circle:", on_click=_resume, key="live.resume",
                   help="Continue exactly where training paused.")
    else:
        bar.button("Pause", icon=":material/pause:", on_click=_pause, key="live.pause",
                   disabled=status != "running", help="Stop updating the weights for now; Resume goes on.")
    if not projector:
        bar.button("Step once", icon=":material/skip_next:", on_click=_step, key="live.step",
                   disabled=run is None or status not in ("ready", "paused") or (status == "ready" and not ready),
                   help="Do a single optimisation step and look at what changed.")
        bar.button("Stop", icon=":material/stop:", on_click=_stop, key="live.stop",
                   disabled=status not in ("running", "paused"),
                   help="End the run; the trained model stays for the other pages and the downloads.")
    bar.button("Reset", icon=":material/restart_alt:", on_click=_reset, key="live.reset", disabled=not ready,
               help="Fresh weights from the seed (the same seed gives the same start).")


def _redraw(view: LiveView) -> bool:
    """Redraw the live view unless the browser is behind; returns whether it redrew.

    Streamlit drops a session whose browser lets 500 messages queue up (see :mod:`ui.common.st_internals`), so while
    more than :data:`BACKLOG_LIMIT` wait, training goes on and the page skips frames until the browser has
    caught up. A waiting click or stop request is always let through: the redraw is where Streamlit acts on it.
    """
    if st_internals.send_backlog() >= BACKLOG_LIMIT and not st_internals.click_pending():
        return False
    view.refresh()  # where Streamlit stops or reruns the script after a click
    return True


def _loop(run: LiveRun, view: LiveView) -> str:
    """Train and redraw until the run stops running; returns why the loop ended (for the log)."""
    drawn = len(run.trainers[0].snapshots)
    skipped = 0
    while True:
        if not resume.still_mine():  # another tab took the run over (and paused it)
            return "moved"
        if run.status != "running":
            return run.status
        run.advance(TICK_S, interrupted=st_internals.click_pending)
        write_samples(run)
        share.publish(run)
        if not _redraw(view):
            skipped += 1
            if skipped % 40 == 1:
                LOG.info("live loop: browser behind (%d messages queued), frames skipped: %d",
                         st_internals.send_backlog(), skipped)
            continue
        if view.pinned_step is not None and len(run.trainers[0].snapshots) >= max(2, 2 * drawn):
            return "snapshots doubled"  # a fresh page run redraws the time-lapse slider with its new range


def train_live(run: LiveRun, view: LiveView) -> None:
    """While the run is running: train a slice, redraw, repeat; then rerun the page.

    Every way out is logged. A click reruns the script (Streamlit raises ``RerunException`` at the next
    redraw); the end of the page's connection stops it (``StopException``): the run is then parked, paused,
    for a reload (:mod:`ui.training.resume`). An unexpected error pauses the run and says so instead of
    leaving it "running" with nobody training it.
    """
    if run.status != "running":
        return
    try:
        why = _loop(run, view)
    except st_internals.StopException:
        resume.park(run)
        raise
    except st_internals.RerunException:
        LOG.debug("live loop: a click reruns the page at step %d", run.step)
        raise
    except Exception as err:  # a bug must never leave a frozen "Training…" page behind
        LOG.exception("live loop failed at step %d; run paused", run.step)
        with run.lock:
            run.pause()
        st.session_state[NOTICE] = ("error", f"Training paused at step {run.step:,}: the page hit an unexpected "
                                             f"error ({type(err).__name__}: {err}). Press Resume to go on.")
        why = "error"
    finally:
        publish(run)
        finish(run)
        share.publish(run, force=True)
    LOG.info("live loop ended (%s) at step %d", why, run.step)
    if why == "moved":
        st.session_state[resume.MOVED] = True
        st.session_state[RUN] = None
        st.session_state.pop(resume.TOKEN, None)
    st.rerun()


def show_notice() -> None:
    """Show the message left by a callback or by :func:`leave_page`, once."""
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        level, text = notice
        {"info": st.info, "success": st.success, "error": st.error}.get(level, st.info)(text)
