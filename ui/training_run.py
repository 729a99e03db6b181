"""Live Training page: the session's run, the buttons that drive it, and the live training loop.

Design: the run (a :class:`~transformer_core.live.LiveRun`) lives in ``st.session_state``, so each browser
session has its own. While it is running, the page script itself loops — train for about
:data:`TICK_S` seconds, redraw the placeholders, repeat. Any click (Pause, a slider, another page) makes
Streamlit interrupt the script at its next redraw and run it again; the button's callback then changes the
run's status before the page is drawn. This needs ``runner.fastReruns = false`` (.streamlit/config.toml):
fast reruns would stop the loop as if the tab had closed and start a second script thread at once.
Leaving the page, or closing the tab, stops a running run and frees its gradients and optimiser state, and so
does Stop or the end of a run (the trained model stays for the other pages and the downloads); Streamlit drops
the closed tab's whole session after its reconnect window. At most ``Limits.max_live_runs`` runs train at once
in the server process: Start and Resume say so when the server is busy.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner_utils.exceptions import StopException
from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx

from transformer_core.guard import GuardResult
from transformer_core.host import limits
from transformer_core.live import LiveRun, start_if_free
from ui import training_controls as tc
from ui.state import TrainedModel, publish_trained
from ui.training_views import PIN, LiveView

RUN = "live.run"  # LiveRun | None: this session's run
RUN_SIGNATURE = "live.run_signature"  # the settings the run was built from
NOTICE = "live.notice"  # (level, text) shown once on the next run: "info", "success" or "error"
TICK_S = 0.25  # seconds of training between two redraws while running
# Torch threads per training session. Several sessions may train at once on a few cores; with one thread
# each they run side by side, while more threads per session make OpenMP threads spin against each other
# (measured on 2 busy cores: 4 steps/s with 2 threads, 54 with 1).
LIVE_THREADS = 1


def current_run() -> LiveRun | None:
    """This session's run, if one was built."""
    return st.session_state.get(RUN)


def leave_page() -> None:
    """Stop a running run and free its training memory: the router calls this when another page runs.

    Nobody watches the run any more, so its gradients and optimiser state go; the model trained so far stays
    for the other pages, and a notice on the way back says what happened. A paused run is kept as it is: the
    user paused it on purpose and may come back to resume.
    """
    run = current_run()
    if run is None or run.status != "running":
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
        run = new
        st.session_state[RUN], st.session_state[RUN_SIGNATURE] = run, signature
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
    """Start or resume ``run`` unless the server already trains as many runs as it allows at once."""
    most = limits().max_live_runs
    if not start_if_free(run, most):
        st.session_state[NOTICE] = (
            "error", f"The server is busy: it trains at most {most} runs at once to stay responsive, and other "
                     "visitors' runs fill every place right now. Please try again in a minute.")


def _start() -> None:
    tc.restore_settings()
    run = current_run()
    run, verdict, error = build_run(force=run is not None and run.finished)
    if error or verdict is None or not verdict.ok:
        st.session_state[NOTICE] = ("error", error or (verdict.reason if verdict else ""))
        return
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
    """Free a finished run's gradients and optimiser state: it cannot train on (Start makes a new run)."""
    if run.finished and run.training_state_bytes:
        run.release("finished")


def _reset() -> None:
    tc.restore_settings()
    build_run(force=True)


def control_bar(run: LiveRun | None, ready: bool, projector: bool) -> None:
    """Start, Pause/Resume, Step once, Stop and Reset (projector mode: Start, Pause/Resume and Reset)."""
    status = run.status if run is not None else "ready"
    bar = st.container(horizontal=True)
    bar.button("Start", icon=":material/play_arrow:", type="primary", on_click=_start, key="live.start",
               disabled=not ready or status in ("running", "paused"),
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


def click_pending() -> bool:
    """Whether Streamlit holds a rerun or stop request for this script run (a click, the tab closing).

    The live loop asks after every training step, so a click ends the training slice at once instead of after
    up to :data:`TICK_S` seconds. Streamlit offers no public call for this: it reads the script runner's request
    state (Streamlit is pinned; a test checks this against the real ScriptRequests) and says False when that
    is not there, which only makes a click wait for the end of the slice.
    """
    requests = getattr(get_script_run_ctx(suppress_warning=True), "script_requests", None)
    state = getattr(requests, "_state", ScriptRequestType.CONTINUE)
    return state != ScriptRequestType.CONTINUE


def train_live(run: LiveRun, view: LiveView) -> None:
    """While the run is running: train a slice, redraw, repeat; then rerun the page.

    The loop hands over to a fresh page run when the run ends, and when the snapshots have doubled since the
    time-lapse slider was drawn (so that the slider's range grows during training).
    """
    if run.status != "running":
        return
    drawn = len(run.trainers[0].snapshots)
    try:
        while run.status == "running":
            run.advance(TICK_S, interrupted=click_pending)
            view.refresh()  # where Streamlit stops or reruns the script after a click
            if len(run.trainers[0].snapshots) >= max(2, 2 * drawn):
                break
    except StopException:
        # Streamlit stops the script when the tab is closed or the session ends; a click reruns it instead
        # (RerunException) because the app's config turns fast reruns off.
        run.release("stopped when the browser tab was closed")
        raise
    finally:
        publish(run)
        finish(run)
    st.rerun()


def show_notice() -> None:
    """Show the message left by a callback or by :func:`leave_page`, once."""
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        level, text = notice
        {"info": st.info, "success": st.success, "error": st.error}.get(level, st.info)(text)
