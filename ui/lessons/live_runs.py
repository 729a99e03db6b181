"""The training lessons' runs on the page: trained (or replayed) in a live view, shareable live.

Its step shows the run as Live Training's first screen does (:func:`live_view`): the untrained model before the
button, then the run as it trains. A lesson's run is a :class:`~explorer.runs.live.LiveRun`
(:func:`explorer.lessons.runs.reverse_lesson_run`), so it goes where every run goes: a run the server recorded
before is replayed instead of trained (the lessons' settings are fixed, so the second student onwards waits only for
the recorded pace, at :data:`REPLAY_SPEED` times), a run that trains to its end is recorded, and "📡 Share live"
publishes it to the session's class link (the one Live Training shows), which opens it on Live Training, read-only,
on any device. A lesson's run that trains (the first one, or "Train again with another seed") takes a place among
the runs this server trains at once like any other: it waits in the server's line when none is free, and counts
against the browser's own limit (:func:`explorer.runs.slots.take_place`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import streamlit as st

from explorer.host import limits
from explorer.lessons.experiments import VariantRun
from explorer.lessons.runs import reverse_lesson_run, summaries
from explorer.runs.classes import ClassLink
from explorer.runs.live import LiveRun
from explorer.runs.place import default_place
from explorer.runs.recording import ReplayRun, find_replay, keep, recording_key, recording_meta
from explorer.runs.slots import LINE, QuotaExceeded, take_place
from explorer.runs.store import StoreUnavailable, run_store
from explorer.runs.watch import Publisher
from ui.common import st_internals
from ui.common.theme import projector
from ui.training import run as training_run
from ui.training.line import POLL_S, wait_text
from ui.training.share import class_link_box
from ui.training.views import LiveView
from ui.training.visitor import visitor

SHARING = "lessons.share.on"  # bool: the lesson's runs are shared live (the toggle)
SHARED = "lessons.share.run"  # (labels, seed, LiveRun, Publisher): the run being shared and its channel
REPLAY_SPEED = 2.0  # a lesson's recording plays at twice the recorded pace
SLICE_S = 0.2  # seconds of training between two progress updates
SAMPLES, SAMPLE_SEED = 6, 7  # the sample predictions watchers see, as on Live Training
LOG = st_internals.logger("transformer_explorer.lessons")


def _shared(labels: Sequence[str], seed: int, steps: int) -> tuple[LiveRun, Publisher | None]:
    """The run for ``labels`` and ``seed``, and its channel when sharing is on (made once per run)."""
    held = st.session_state.get(SHARED)
    if held is not None and held[:2] == (tuple(labels), seed) and held[2].status == "ready":
        if held[3] is None and st.session_state.get(SHARING):  # made for its "before" view, then shared
            held = (*held[:3], Publisher(run_store()))
            st.session_state[SHARED] = held
        return held[2], held[3] if st.session_state.get(SHARING) else None
    if held is not None and held[3] is not None:  # the previous run's link says that a new one began
        try:
            held[3].end("The lesson started a new run.", recording_key(held[2]) if held[2].finished else None)
        except StoreUnavailable as err:
            LOG.warning("could not close a lesson's channel: %s", err)
    run = reverse_lesson_run(labels, steps=steps, seed=seed, place=default_place())
    publisher = Publisher(run_store()) if st.session_state.get(SHARING) else None
    st.session_state[SHARED] = (tuple(labels), seed, run, publisher)
    return run, publisher


def _class_link() -> ClassLink:
    """The session's class link (the one Live Training shows), made when the lesson shares first."""
    held = training_run.session()
    if held.class_link is None:
        held.class_link = ClassLink()
    return held.class_link


def _send_news(run: LiveRun, publisher: Publisher | None, *, force: bool = False) -> None:
    if publisher is None:
        return
    key = recording_key(run) if run.recordable else None
    meta = {**recording_meta(run, key), "query": None}
    try:
        run.update_samples({}, "", SAMPLES, SAMPLE_SEED)
        publisher.publish(run.frame(), meta, force=force, downloads=False, replay=isinstance(run, ReplayRun))
        _class_link().follow(publisher.store, publisher.run_id)  # the class follows the lesson's run
    except StoreUnavailable as err:
        LOG.warning("lesson run not shared: %s", err)


def share_toggle(labels: Sequence[str], seed: int, steps: int) -> None:
    """"📡 Share live" and the watch link of the lesson's next run (for ``labels``; watchers see it, ready, as
    soon as sharing is on), or of the last one when everything is trained (``labels`` empty)."""
    if SHARING not in st.session_state:  # the class link Live Training shares stays on here until turned off
        st.session_state[SHARING] = training_run.session().class_link is not None
    st.toggle("📡 Share live with a class", key=SHARING,
              help="Show the lesson's training on the class link that students open on their own devices to "
                   "watch it train, read-only, on the Live Training page (the same link and code as Live "
                   "Training's, which follows your next run).")
    if not st.session_state.get(SHARING):
        if training_run.session().class_link is not None:  # turned off here: the class link ends
            training_run.session().stop_sharing()
        return
    if labels:  # a run to train next: its channel shows it, ready, until it trains
        run, publisher = _shared(labels, seed, steps)
        _send_news(run, publisher, force=True)
    else:  # everything is trained: the last run's link stays, showing it finished
        held = st.session_state.get(SHARED)
        publisher = held[3] if held is not None else None
    if publisher is not None:
        class_link_box(_class_link())


def train(labels: Sequence[str], *, steps: int, seed: int, titles: dict[str, str]) -> dict[str, VariantRun] | None:
    """Train (or replay) the lesson's runs for ``labels`` in a live view; returns their summaries, or ``None``
    when they could not start (the browser holds its limit of runs: the page says so)."""
    run, publisher = _shared(labels, seed, steps)
    try:
        replay = find_replay(run, run_store(), speed=REPLAY_SPEED)
    except StoreUnavailable:
        replay = None
    if replay is not None:
        run = replay
    if replay is not None:  # it trains nothing and takes no place; the live view's status line says "Replaying…"
        run.start()
        st.caption(f"Replaying the recording of this exact run (no training): "
                   f"{' and '.join(titles[label] for label in labels)}, {steps} steps.")
    elif not _wait_for_place(run):
        return None
    view = live_view(run)
    while run.status == "running":
        run.advance(SLICE_S)
        _send_news(run, publisher)
        view.refresh()
    _send_news(run, publisher, force=True)
    try:
        keep(run, run_store())
    except StoreUnavailable as err:
        LOG.warning("lesson run not recorded: %s", err)
    return summaries(run, labels)


def live_view(run: LiveRun) -> LiveView:
    """``run``'s live view, drawn here in the compact layout of Live Training's first screen: the step line, and
    the head that best follows the task's pattern, large, beside the loss and accuracy curves."""
    kind = next(iter(run.task.pattern_names), "").split(":")[0]
    view = LiveView(run.frame, projector=projector(), kind=kind, pinned_step=None, compact=True, pickers=False)
    view.refresh()
    return view


def untrained_view(labels: Sequence[str], seed: int, steps: int) -> None:
    """The live view of the lesson's next run before it trains: its untrained heads, the "before"."""
    live_view(_shared(labels, seed, steps)[0])


def _wait_for_place(run: LiveRun) -> bool:
    """Start ``run`` once a place is free for it, showing its place in line meanwhile; returns whether it started
    (not when the browser holds its limit of places and line entries already: that is said instead)."""
    client = visitor()
    ticket = f"{client.session}:lesson"  # apart from the same tab's Live Training run
    slot = st.empty()
    try:
        while True:
            place = take_place(run, limits().max_live_runs, ticket, client.key)
            if place is None:
                slot.empty()
                return True
            slot.info(wait_text(place))  # also where Streamlit stops or reruns the script
            time.sleep(POLL_S)
    except QuotaExceeded as err:
        slot.error(str(err), icon="⏳")
        return False
    except (st_internals.StopException, st_internals.RerunException):  # the tab closed, or a click
        LINE.leave(ticket)
        raise
