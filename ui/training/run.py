"""Live Training page: the session's run, the buttons that drive it, and the live training loop.

Every rule of a run's life lives in one plain-Python object, :class:`~explorer.runs.session.RunSession` (one per
browser session, in ``st.session_state``): one run per session, what a new run lets go of, the line, replays and
recordings, parking and taking back. This module only reads the settings, calls the session and draws.

How a setting reaches the model, e.g. the number of heads: the "Heads" select box (key
:data:`~ui.training.controls.HEADS`) → :func:`ui.training.specs.build_specs` puts it into the
``ModelConfig`` of a :class:`~explorer.runs.live.RunSpec` → Start calls :func:`start`, which hands task, specs and
settings to :meth:`RunSession.start <explorer.runs.session.RunSession.start>` → a
:class:`~explorer.runs.live.LiveRun` builds one :class:`~transformer_core.training.Trainer` per spec → the trainer
builds ``task.build_model(config)`` (:mod:`transformer_core.models`) → each block of
:mod:`transformer_core.blocks` makes ``MultiHeadAttention(d_model, n_heads)`` (:mod:`transformer_core.attention`).

While the run is running, the page script itself loops (:func:`ui.common.ticker.ticks`) — train for about
:data:`~ui.common.pace.OWNER_TICK_S` seconds, redraw the placeholders, repeat. Any click (Pause, a slider, another
page) makes Streamlit interrupt the script at its next redraw, or between two slices, and run it again; the
button's callback then changes the run before the page is drawn. This needs ``runner.fastReruns = false``
(.streamlit/config.toml): fast reruns would stop the loop as if the tab had closed and start a second script
thread at once. The loop redraws only while the browser keeps up (:func:`_redraw`), so a slow browser skips frames
instead of being dropped by the server. When the page's connection ends (a reload, a closed tab, a lost network),
the run is parked, paused, and the same browser takes it back on reload
(:mod:`ui.training.resume`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from explorer.guard import GuardResult
from explorer.host import limits
from explorer.i18n import _, num
from explorer.i18n.message import localized, message_of
from explorer.runs.frame import SAMPLE_SEED, SAMPLES
from explorer.runs.live import LiveRun
from explorer.runs.place import default_place
from explorer.runs.recording import ReplayRun
from explorer.runs.session import RunSession
from ui.common import pace, st_internals
from ui.common.state import TrainedModel, publish_trained
from ui.common.ticker import ticks
from ui.training import controls, share, text
from ui.training.specs import build_specs, guard, settings_signature
from ui.training.views import PIN, LiveView
from ui.training.visitor import visitor

# Redraw only while fewer messages than this wait for the browser. One redraw sends about 25 (metrics, curves,
# heatmaps); Streamlit drops a session at 500 queued, so this leaves a wide margin and costs a fast browser
# nothing (its queue stays near empty).
BACKLOG_LIMIT = 60
LOG = st_internals.logger("transformer_explorer.live")


def session() -> RunSession:
    """This browser session's :class:`RunSession` (made on first use)."""
    held = st.session_state.get(controls.SESSION)
    if held is None:
        held = RunSession(
            visitor(), max_running=lambda: limits().max_live_runs, hand_over=hand_over_model, place=default_place()
        )
        st.session_state[controls.SESSION] = held
    return held


def current_run() -> LiveRun | None:
    """This session's run, if one was built."""
    held = st.session_state.get(controls.SESSION)
    return held.run if held is not None else None


def hand_over_model(run: LiveRun | None, *, force: bool = False) -> None:
    """Offer configuration A's model to the other pages of this session (once it has trained, or loaded)."""
    if run is None or (run.trainers[0].step == 0 and not force):
        return
    trainer = run.trainers[0]
    publish_trained(
        TrainedModel(
            family=run.task.family,
            task_name=run.task.name,
            task_title=run.task.title,
            model=trainer.model,
            config=trainer.model_config,
            step=trainer.step,
            task=run.task,
        )
    )


def leave_page() -> None:
    """Another page runs (the router calls this): the session's run stops and frees its training memory."""
    held = st.session_state.get(controls.SESSION)
    if held is not None:
        held.leave()


def _act(action: Callable[[RunSession], object]) -> None:
    """Call ``action`` on the session; a new run starts its share link's settings and follows training."""
    held = session()
    before = held.run
    try:
        action(held)
    except ValueError as err:  # settings that make no valid model
        held.notice = ("error", message_of(err))
        return
    if held.run is not before:
        held.share_query = share.settings_query()
        st.session_state[PIN] = None


def build_run(force: bool = False) -> tuple[LiveRun | None, GuardResult | None, str | None]:
    """Make sure the session's run matches the settings; returns (run, guard verdict, error message).

    A run that has not started follows the settings; one that has trained keeps its own settings until
    Reset, or Start after it finished (both pass ``force``).
    """
    try:
        task, specs = build_specs()
    except ValueError as err:
        return current_run(), None, message_of(err)
    verdict = guard(task, specs)
    if not verdict.ok:
        return current_run(), verdict, None
    error = None

    def prepare(held: RunSession) -> None:
        nonlocal error
        try:
            held.prepare(task, specs, settings_signature(), force=force)
        except ValueError as err:
            error = message_of(err)

    _act(prepare)
    return current_run(), verdict, error


def _settings() -> tuple | None:
    """(task, specs, signature) of the current settings, or ``None`` with the reason as the session's notice."""
    controls.restore_settings()
    try:
        task, specs = build_specs()
    except ValueError as err:
        session().notice = ("error", message_of(err))
        return None
    verdict = guard(task, specs)
    if not verdict.ok:
        session().notice = ("error", verdict.reason)
        return None
    return task, specs, settings_signature()


def _with_settings(action: Callable[..., object]) -> None:
    """Call the session's ``action`` with the current settings (task, specs, signature) when they are valid."""
    settings = _settings()
    if settings is not None:
        _act(lambda held: action(held, *settings))


def start() -> None:
    """Start: a new run after a finished one; a replay when these settings were recorded; a place or the line."""
    _with_settings(RunSession.start)


def train_for_real() -> None:
    """Train the current settings now instead of replaying their recording."""
    _with_settings(RunSession.train_for_real)


def reset() -> None:
    """Fresh weights from the seed."""
    _with_settings(RunSession.reset)


def write_samples() -> None:
    """Each lane's sample predictions after a new evaluation (a waiting click ends the writing early)."""
    held = session()
    if held.run is None:
        return
    sampling = text.sampling(held.run.task)
    held.write_samples(
        sampling, text.sampling_caption(sampling), SAMPLES, SAMPLE_SEED, interrupted=st_internals.click_pending
    )


def settings_changed_notice(run: LiveRun | None, ready: bool) -> None:
    """Say that the settings changed since the run was built, with the button that trains them.

    Only when that button can be pressed: Reset while the run is running or paused (Start is off then), Start
    once it is over (Start makes a new run).
    """
    if run is None or run.status == "ready" or not ready or session().signature == settings_signature():
        return
    text = (
        _("The settings changed since this run started. Press **Start** to train with the new settings.")
        if run.finished
        else _("The settings changed since this run started. Press **Reset** to train with the new settings.")
    )
    st.info(text, icon="🔁")


def control_bar(run: LiveRun | None, ready: bool, projector: bool, bar: Any = None) -> None:
    """Start, Pause/Resume, Step once, Stop and Reset (projector mode: Start, Pause/Resume and Reset); Start is
    off while the run waits in line for a place. ``bar``: a horizontal container to add them to (a new one by
    default)."""
    status = run.status if run is not None else "ready"
    bar = bar if bar is not None else st.container(horizontal=True)
    bar.button(
        _("Start"),
        icon=":material/play_arrow:",
        type="primary",
        on_click=start,
        key="live.start",
        disabled=not ready or session().waiting or status in ("running", "paused"),
        help=_("Train from the current settings (after a finished run: a new run)."),
    )
    if status == "paused":
        bar.button(
            _("Resume"),
            icon=":material/play_circle:",
            on_click=lambda: session().resume(),
            key="live.resume",
            help=_("Continue exactly where training paused."),
        )
    else:
        bar.button(
            _("Pause"),
            icon=":material/pause:",
            on_click=lambda: session().pause(),
            key="live.pause",
            disabled=status != "running",
            help=_("Stop updating the weights for now; Resume goes on."),
        )
    if not projector:
        bar.button(
            _("Step once"),
            icon=":material/skip_next:",
            on_click=lambda: session().step(),
            key="live.step",
            disabled=run is None or status not in ("ready", "paused") or (status == "ready" and not ready),
            help=step_help(run),
        )
        bar.button(
            _("Stop"),
            icon=":material/stop:",
            on_click=lambda: session().stop(),
            key="live.stop",
            disabled=status not in ("running", "paused"),
            help=_("End the run; the trained model stays for the other pages and the downloads."),
        )
    bar.button(
        _("Reset"),
        icon=":material/restart_alt:",
        on_click=reset,
        key="live.reset",
        disabled=not ready,
        help=_("Fresh weights from the seed (the same seed gives the same start)."),
    )


def step_help(run: LiveRun | None) -> str:
    """What "Step once" does: one optimisation step, or in a replay the move to the next recorded model."""
    if isinstance(run, ReplayRun):
        return _(
            "A replay trains nothing: this moves to step {step}, the next step whose model was recorded, so "
            "switching heads off there measures that model."
        ).format(step=num(run.next_recorded_step()))
    return _("Do a single optimisation step and look at what changed.")


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


def _loop(held: RunSession, view: LiveView) -> str:
    """Train and redraw until the run stops running; returns why the loop ended (for the log)."""
    drawn = len(held.run.trainers[0].snapshots)
    skipped = 0
    for _tick in ticks(0.0):  # the slice's training is the tick's time; between two slices a click is let through
        why = held.train_slice(pace.OWNER_TICK_S, interrupted=st_internals.click_pending)
        if why is not None:
            return why
        write_samples()
        share.send_news(held)
        if not _redraw(view):
            skipped += 1
            if skipped % 40 == 1:
                LOG.info(
                    "live loop: browser behind (%d messages queued), frames skipped: %d",
                    st_internals.send_backlog(),
                    skipped,
                )
            continue
        if view.pinned_step is not None and len(held.run.trainers[0].snapshots) >= max(2, 2 * drawn):
            return "snapshots doubled"  # a fresh page run redraws the time-lapse slider with its new range


def train_live(view: LiveView) -> None:
    """While the session's run is running: train a slice, redraw, repeat; then rerun the page.

    Every way out is logged. A click reruns the script (Streamlit raises ``RerunException`` at the next
    redraw); the end of the page's connection stops it (``StopException``): the run is then parked, paused,
    for a reload. An unexpected error pauses the run and says so instead of leaving it "running" with nobody
    training it.
    """
    held = session()
    run = held.run
    if run is None or run.status != "running":
        return
    why = "rerun"
    try:
        why = _loop(held, view)
    except st_internals.StopException:
        why = "connection ended"
        held.park()
        raise
    except st_internals.RerunException:
        LOG.debug("live loop: a click reruns the page at step %d", run.step)
        raise
    except Exception as err:  # a bug must never leave a frozen "Training…" page behind
        LOG.exception("live loop failed at step %d; run paused", run.step)
        with run.lock:
            run.pause()
        held.notice = (
            "error",
            _(
                "Training paused at step {step}: the page hit an unexpected error ({error}). Press Resume to go on."
            ).format(step=num(run.step), error=f"{type(err).__name__}: {err}"),
        )
        why = "error"
    finally:
        held.loop_ended(why)
    LOG.info("live loop ended (%s) at step %d", why, run.step)
    st.rerun()


def show_notice() -> None:
    """Show the message the session left (a callback's, a take-back's, a left page's), once."""
    held = session()
    notice, held.notice = held.notice, None
    if notice:
        level, words = notice
        shown = localized(words)  # the session's English notice, in the page's language
        {"info": st.info, "success": st.success, "error": st.error}.get(level, st.info)(shown)
