"""The training lessons' runs on the page: driven by a :class:`~explorer.runs.session.RunSession` like Live
Training's, drawn here as Live Training's first screen draws a run (:func:`live_view`: the untrained model before
the button, then the run as it trains), shareable live.

Each browser session keeps one :class:`RunSession` for its lessons (:func:`lesson_session`) beside Live
Training's: the same registry, line, run store and places, and the same browser's limit, since its client is the
browser's; only its session id differs (the tab's with ``:lesson`` added), so a lesson's run never replaces the
Live Training run of the same tab. A lesson's run (:func:`explorer.lessons.runs.reverse_lesson_settings`) therefore
goes where every run goes: a run the server recorded before is replayed instead of trained (the lessons' settings
are fixed, so the second student onwards waits only for the recorded pace, at :data:`REPLAY_SPEED` times); one that
trains takes a place among the runs this server trains at once, or waits in the server's line, and counts against
the browser's own limit; it is recorded when it trained to its end; and "📡 Share live" publishes it to the
session's class link (the one Live Training shows), which opens it on Live Training, read-only, on any device.
This module only reads the lesson's settings, calls the session and draws.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import streamlit as st
from babel.lists import format_list

from explorer.host import limits
from explorer.i18n import _, get, language, num
from explorer.lessons.experiments import VariantRun
from explorer.lessons.runs import reverse_lesson_settings, summaries
from explorer.runs.classes import ClassLink
from explorer.runs.frame import SAMPLE_SEED, SAMPLES
from explorer.runs.live import LiveRun, RunSpec
from explorer.runs.place import default_place
from explorer.runs.recording import ReplayRun
from explorer.runs.session import RunSession
from transformer_core.tasks.base import Task
from ui.common import pace, st_internals
from ui.common.theme import projector
from ui.common.ticker import ticks
from ui.training import run as training_run
from ui.training.line import wait_text
from ui.training.share import class_link_box
from ui.training.views import LiveView
from ui.training.visitor import visitor

SHARING = "lessons.share.on"  # bool: the lesson's runs are shared live (the toggle)
SESSION = "lessons.session"  # RunSession: this browser session's lesson runs (apart from its Live Training run)
REPLAY_SPEED = 2.0  # a lesson's recording plays at twice the recorded pace
LOG = st_internals.logger("transformer_explorer.lessons")


def lesson_session() -> RunSession:
    """This browser session's :class:`RunSession` for the lessons (made on first use)."""
    held = st.session_state.get(SESSION)
    if held is None:
        client = visitor()
        held = RunSession(
            replace(client, session=f"{client.session}:lesson"),
            max_running=lambda: limits().max_live_runs,
            place=default_place(),
        )
        held.replay_speed = REPLAY_SPEED
        st.session_state[SESSION] = held
    return held


def _settings(labels: Sequence[str], seed: int, steps: int) -> tuple[Task, list[RunSpec], tuple]:
    """(task, specs, signature) of the lesson's run for ``labels`` and ``seed``."""
    task, specs = reverse_lesson_settings(labels, steps=steps, seed=seed)
    return task, specs, (tuple(labels), seed, steps)


def _prepare(held: RunSession, task: Task, specs: list[RunSpec], signature: tuple) -> None:
    """Make the session's run a fresh one of these settings, unless it is one already (not started yet)."""
    if held.run is not None and held.signature == signature and held.run.status == "ready":
        return
    held.prepare(task, specs, signature, force=True)
    held.place.prioritize(held.run)  # a lesson is shown to a class: it comes before visitors' own runs


def _broadcast(held: RunSession, *, force: bool = False) -> None:
    """Publish the run to the class link when the lesson shares, with the sample predictions watchers see."""
    if not held.sharing:
        return
    held.write_samples({}, "", SAMPLES, SAMPLE_SEED, interrupted=st_internals.click_pending)
    why = held.broadcast(force=force)
    if why is not None:
        LOG.warning("lesson run not shared: %s", why)


def _share_on(held: RunSession) -> None:
    """The lesson shares on the session's class link: the one Live Training shows, made here when it has none."""
    training = training_run.session()
    if training.class_link is None:
        training.class_link = ClassLink()
    held.class_link, held.sharing, held.share_query, held.downloads = training.class_link, True, None, False


def _share_off(held: RunSession) -> None:
    """Sharing turned off here: the lesson's channel and the class link end."""
    held.class_link = None  # ended once, below, by the session that made it
    if held.sharing:
        held.stop_sharing()
    if training_run.session().class_link is not None:
        training_run.session().stop_sharing()


def share_toggle(labels: Sequence[str], seed: int, steps: int) -> None:
    """ "📡 Share live" and the watch link of the lesson's next run (for ``labels``; watchers see it, ready, as
    soon as sharing is on), or of the last one when everything is trained (``labels`` empty)."""
    if SHARING not in st.session_state:  # the class link Live Training shares stays on here until turned off
        st.session_state[SHARING] = training_run.session().class_link is not None
    st.toggle(
        _("📡 Share live with a class"),
        key=SHARING,
        help=_(
            "Show the lesson's training on the class link that students open on their own devices to "
            "watch it train, read-only, on the Live Training page (the same link and code as Live "
            "Training's, which follows your next run)."
        ),
    )
    held = lesson_session()
    if not st.session_state.get(SHARING):
        _share_off(held)
        return
    _share_on(held)
    if labels:  # a run to train next: its channel shows it, ready, until it trains
        _prepare(held, *_settings(labels, seed, steps))
        _broadcast(held, force=True)
    if held.channel is not None:  # else everything is trained and nothing was shared: no link to show yet
        class_link_box(held.class_link)


def train(labels: Sequence[str], *, steps: int, seed: int, titles: dict[str, str]) -> dict[str, VariantRun] | None:
    """Train (or replay) the lesson's runs for ``labels`` in a live view; returns their summaries, or ``None``
    when they could not start (the browser holds its limit of runs: the page says so). ``titles`` name the labels
    in English (marked for translation; translated here)."""
    held = lesson_session()
    settings = _settings(labels, seed, steps)
    _prepare(held, *settings)
    held.notice = None  # only what this start says is shown
    held.start(*settings)  # replayed when recorded, else started or put in line
    if not _wait_for_place(held):
        return None
    run = held.run
    replay = isinstance(run, ReplayRun)
    if replay:  # it trains nothing and takes no place; the live view's status line says "Replaying…"
        runs = format_list([_(titles[label]) for label in labels], locale=get(language()).locale)
        st.caption(
            _("Replaying the recording of this exact run (no training): {runs}, {steps} steps.").format(
                runs=runs, steps=num(steps)
            )
        )
    view = live_view(run)
    why = None
    try:
        for _tick in ticks(0.0):  # the slice's training is the tick's time; between two slices a click is let through
            why = held.train_slice(pace.LESSON_TICK_S, interrupted=st_internals.click_pending)
            if why is not None:
                break
            _broadcast(held)
            view.refresh()
    except (st_internals.StopException, st_internals.RerunException):  # the tab closed, or a click
        held.leave()  # nothing takes a half-trained lesson run back: it stops and frees its training memory
        raise
    held.loop_ended(why)  # recorded for the next students, training memory freed, watchers told
    return summaries(run, labels)


def live_view(run: LiveRun) -> LiveView:
    """``run``'s live view, drawn here in the compact layout of Live Training's first screen: the step line, and
    the head that best follows the task's pattern, large, beside the loss and accuracy curves."""
    kind = next(iter(run.task.pattern_names), "").split(":")[0]
    view = LiveView(run.frame, projector=projector(), kind=kind, pinned_step=None, compact=True, pickers=False,
                    ready=_("Ready — not trained yet"))
    view.refresh()
    return view


def untrained_view(labels: Sequence[str], seed: int, steps: int) -> None:
    """The live view of the lesson's next run before it trains: its untrained heads, the "before"."""
    held = lesson_session()
    _prepare(held, *_settings(labels, seed, steps))
    live_view(held.run)


def _wait_for_place(held: RunSession) -> bool:
    """While the session's run waits in line, show its place; returns whether it started (or replays), else says
    why not (the browser holds its limit of places and line entries already)."""
    slot = st.empty()
    try:
        for _tick in ticks(lambda: pace.LINE_POLL_S):
            place = held.poll_line()
            if place is None:
                break
            slot.info(wait_text(place))
    except (st_internals.StopException, st_internals.RerunException):  # the tab closed, or a click: the place
        held.leave_line()  # goes to the next in line at once
        raise
    if held.run is not None and held.run.status == "running":
        slot.empty()
        return True
    notice, held.notice = held.notice, None
    slot.error(notice[1] if notice else _("This run could not start."), icon="⏳")
    return False
