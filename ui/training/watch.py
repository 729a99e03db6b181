"""Live Training page opened with ``?watch=<id>`` or a class link's ``?class=<id>``: someone else's run, live and
read-only.

The page mirrors the run's channel (:class:`~explorer.runs.watch.WatchedRun`) and draws it with the same live view as
the owner's page, updating while its owner trains. A class link (:class:`~explorer.runs.classes.FollowedClass`)
moves to the owner's next run by itself, and waits between two runs; a student joins one by its short code
(:func:`join_box`). A page whose script stopped (Streamlit's Stop, a lost connection) says so and offers to
reconnect (:mod:`ui.training.watchdog`). The watcher picks the attention kind, layer and head and scrubs
the time-lapse for themselves. The drawings are built once for every watcher of the same view
(:mod:`ui.training.drawn`), and a tick that brings nothing new sends nothing. Nothing here can change, pause or
download the owner's model unless the owner allowed downloads. A channel that ended or expired says so and offers
the recording, when one was kept, or a run of one's own with the same settings (which replays the recording when
the server still keeps it).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable

import streamlit as st

from explorer.i18n import _, language, num
from explorer.i18n.message import localized
from explorer.runs.classes import FollowedClass, class_for_code
from explorer.runs.store import StoreUnavailable, run_store
from explorer.runs.watch import WatchedRun, new_watcher_id
from ui.common import pace, st_internals, theme
from ui.common.language import LANG_PARAM
from ui.common.ticker import ticks
from ui.training import containers, io, status, views
from ui.training.share import CLASS_PARAM, WATCH_PARAM
from ui.training.watchdog import live_watchdog

WATCHED = "live.watch.run"  # WatchedRun: the channel this session mirrors
FOLLOWED = "live.watch.class"  # FollowedClass: the class link this session follows
CODE = "live.watch.code"  # str: the class code typed into Join a class
JOINED = "live.watch.joined"  # bool: this run follows a join from the page's own view (see _after_a_join)
ARMED = "live.watch.armed"  # bool: the join's one-off rerun is due at the fragment's next tick
WATCHER = "live.watch.watcher"  # str: this browser session's random watcher id (the store never sees session ids)
PAGE_SCRIPT = "pages/training.py"
MAX_TYPED = 500  # the box takes a whole pasted link, not only a code (a longer paste would be dropped unseen)
_LINK_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")  # what a run's or a class's id in a link may look like
LOG = st_internals.logger("transformer_explorer.watch")


def _mirror(run_id: str) -> WatchedRun:
    held = st.session_state.get(WATCHED)
    if held is None or held.run_id != run_id:
        held = WatchedRun(run_store(), run_id, st.session_state.setdefault(WATCHER, new_watcher_id()))
        st.session_state[WATCHED] = held
        st.session_state[views.PIN] = None
    return held


def _own_run(query: dict[str, str] | None) -> None:
    """Leave the watch link for a run of one's own with the watched run's settings."""
    st.session_state.pop(WATCHED, None)
    st.switch_page(PAGE_SCRIPT, query_params=query or {})


def _ended(watched: WatchedRun) -> None:
    """The channel ended or expired: say so, and offer its recording or a run of one's own."""
    note = watched.gone()
    query = (watched.meta or {}).get("query")
    if note is None:
        st.warning(
            _("This watch link has expired: the run it showed ended a while ago or its server restarted."), icon="⌛"
        )
    else:
        st.info(_("The run behind this link has ended: {reason}").format(reason=localized(note["reason"])), icon="🏁")
    recorded = note is not None and note.get("recording") and run_store().has_recording(note["recording"])
    cols = st.columns(2)
    if recorded and query is not None:
        cols[0].button(
            "▶️ " + _("Replay its recording"),
            type="primary",
            key="watch.replay",
            on_click=_own_run,
            args=(query,),
            help=_("Opens Live Training with the same settings; Start replays the recorded run (no training)."),
        )
    cols[1 if recorded and query is not None else 0].button(
        _("Start a fresh run"),
        key="watch.fresh",
        on_click=_own_run,
        args=(query,),
        help=_("Opens Live Training with the watched run's settings (or the defaults) for a run of your own."),
    )


def _header(watched: WatchedRun, projector: bool) -> None:
    """What this page is, and the way to a run of one's own (a projector: one short row, so the run fills the
    first screen)."""
    replay = bool(watched.state.get("replay"))
    over = watched.state.get("status") in ("done", "stopped", "diverged")  # it no longer "updates while it trains"
    if projector:
        c_text = c_own = st.container(horizontal=True, vertical_alignment="center")
        c_text.markdown(
            "📡 👀 "
            + (
                _("**Watching a live run (a replay of a recorded run), read-only**")
                if replay
                else _("**Watching a finished run, read-only**")
                if over
                else _("**Watching a live run, read-only**")
            )
        )
    else:
        c_text, c_own = st.columns([4, 1], vertical_alignment="center")
        watching = (
            _("**Watching a live run (a replay of a recorded run), read-only.**")
            if replay
            else _("**Watching a finished run, read-only.**")
            if over
            else _("**Watching a live run, read-only.**")
        )
        follows = (
            _("Choose the attention, layer and head, and scrub the time-lapse, for yourself.")
            if over
            else _(
                "It updates while its owner trains; choose the attention, layer and "
                "head, and scrub the time-lapse, for yourself."
            )
        )
        c_text.info("👀 " + watching + " " + follows, icon="📡")
    c_own.button(
        _("Train my own"),
        key="watch.own",
        on_click=_own_run,
        args=(watched.meta.get("query"),),
        help=_("Leave this link and open Live Training with the same settings, to replay or train them yourself."),
    )


def _downloads(watched: WatchedRun) -> None:
    if not watched.state.get("downloads"):
        return
    offered = run_store().checkpoints(watched.run_id)
    if offered is None:
        st.caption(_("Its owner allows downloads: the model is offered whenever the run pauses or ends."))
        return
    step, files = offered
    cols = st.columns(len(files))
    for i, (col, data) in enumerate(zip(cols, files, strict=True)):
        tag = f"-{'ab'[i]}" if len(files) > 1 else ""
        name = f"{watched.meta['task']}{tag}.safetensors"
        col.download_button(
            _("Checkpoint{tag} (step {step})").format(tag=tag, step=num(step)),
            data,
            file_name=name,
            mime="application/octet-stream",
            key=f"watch.ckpt{i}",
            on_click="ignore",
            icon=":material/download:",
            help=_("The owner's trained weights as .safetensors; load them on Live Training."),
        )


def watch_page(run_id: str, projector: bool) -> None:
    """Draw the watched run and follow it until the page reruns; see the module docstring."""
    try:
        watched = _mirror(run_id)
        alive = watched.sync()
    except StoreUnavailable as err:
        st.error(
            _("The shared store cannot be reached, so this watch link cannot be shown now: {reason}").format(
                reason=localized(err)
            ),
            icon="📡",
        )
        return
    if not alive:
        live_watchdog(status.STATUS_TEXT["running"])  # nothing follows now: no banner once the page rests
        _ended(watched)
        return
    _show(watched, projector)


def class_page(class_id: str, projector: bool) -> None:
    """Follow a class link: the owner's current run, the next one by itself, a note between two runs."""
    followed = st.session_state.get(FOLLOWED)
    if followed is None or followed.class_id != class_id:
        followed = FollowedClass(run_store(), class_id, st.session_state.setdefault(WATCHER, new_watcher_id()))
        st.session_state[FOLLOWED] = followed
        st.session_state[views.PIN] = None
    try:
        watched = followed.current()
        alive = watched is not None and watched.sync()
    except StoreUnavailable as err:
        st.error(
            _("The shared store cannot be reached, so this class link cannot be shown now: {reason}").format(
                reason=localized(err)
            ),
            icon="📡",
        )
        return
    if watched is None:
        live_watchdog(status.STATUS_TEXT["running"])
        st.info(
            _(
                "Your teacher is not sharing with this link now: sharing was turned off, or the link expired. Ask "
                "for the new class code."
            ),
            icon="🏁",
        )
        join_box()
        return
    if not alive:
        live_watchdog(status.STATUS_TEXT["running"], following=True)
        st.info("⏳ " + _("Your teacher's run ended; this page moves to their next run as soon as it starts."))
        _wait_for(followed.moved)
        return
    _show(watched, projector, moved=followed.moved)


def linked_query(typed: str) -> dict[str, str] | None:
    """The ``class`` or ``watch`` parameter of a pasted class or watch link, or ``None`` when ``typed`` is none."""
    params = urllib.parse.parse_qs(urllib.parse.urlsplit(typed.strip()).query)
    for name in (CLASS_PARAM, WATCH_PARAM):
        value = (params.get(name) or [""])[0]
        if _LINK_ID.fullmatch(value):
            return {name: value}
    return None


def join_box() -> None:
    """A box for a class code: a student types what the teacher's screen shows (or pastes the class link) and
    watches that class."""
    with st.container(key="class-code"), st.form("live.watch.join", border=False, enter_to_submit=True):
        c_code, c_go = st.columns([3, 1], vertical_alignment="bottom")
        c_code.text_input(
            _("Class code"),
            key=CODE,
            max_chars=MAX_TYPED,
            placeholder=_("e.g. {code}").format(code="K7M3QX"),
            help=_("The 6 letters and digits your teacher's screen shows beside the QR code. A class or watch "
                   "link pasted here works too."),
        )
        joined = c_go.form_submit_button("👀 " + _("Join a class"))
    if not joined:
        return
    typed = st.session_state.get(CODE) or ""
    if (query := linked_query(typed)) is not None:
        st.session_state[JOINED] = True
        st.switch_page(PAGE_SCRIPT, query_params=query | {LANG_PARAM: language()})
    try:
        class_id = class_for_code(run_store(), typed)
    except ValueError as err:
        st.error(localized(err))
        return
    except StoreUnavailable as err:
        st.error(
            _("The shared store cannot be reached, so classes cannot be joined now: {reason}").format(
                reason=localized(err)
            ),
            icon="📡",
        )
        return
    if class_id is None:
        st.error(
            _("No class is shared with the code {code} now: check it on your teacher's screen.").format(
                code=typed.strip().upper()
            )
        )
        return
    st.session_state[JOINED] = True
    # the page's language in the address at once: the watch page never ends its script run, where the address
    # would otherwise get it back
    st.switch_page(PAGE_SCRIPT, query_params={CLASS_PARAM: class_id, LANG_PARAM: language()})


def _show(watched: WatchedRun, projector: bool, moved: Callable[[], bool] | None = None) -> None:
    """The watched run, drawn and followed (``moved``: whether a class link moved on to another run)."""
    live_watchdog(status.STATUS_TEXT["running"], following=True)
    _header(watched, projector)
    if _quiet(watched):
        st.warning(
            _(
                "Nothing has come from this run for {seconds} s: its owner's page may have been closed, reloaded "
                "or lost its connection. This page goes on by itself when the run moves again."
            ).format(seconds=num(watched.quiet_s(), 0)),
            icon="⏸️",
        )
    frame = watched.frame()
    with containers.run_container(watched, projector):
        kind = status.kind_picker(frame)
        view = views.LiveView(
            watched.frame,
            projector=projector,
            kind=kind,
            pinned_step=st.session_state.get(views.PIN),
            shared=watched.run_id,
            compact=theme.one_column(),  # a phone, the class link's usual reader, gets one head, large
        )
        with view.timelapse:
            view.frame_label = io.timelapse_controls(frame, kind, follow=view.follows_training)
        view.refresh()
        view.draw_numbers()
        _downloads(watched)
    _follow(watched, view, moved)


def _quiet(watched: WatchedRun) -> bool:
    """Whether the run says it trains but has sent nothing for :data:`~ui.common.pace.WATCH_QUIET_S`."""
    return watched.state.get("status") == "running" and watched.quiet_s() > pace.WATCH_QUIET_S


def _after_a_join() -> bool:
    """Whether this run ends at once, the page drawn, rather than follows the run.

    A join switches from the page's own view to the watch view in the same page, and Streamlit keeps the own
    view's elements below the new ones (faded: Start, its empty curves and heatmaps) until a script run ends; a
    watch view's run never ends while it follows. So the first run after a join ends, and a fragment's tick
    starts the run that follows.
    """
    if not st.session_state.pop(JOINED, False):
        return False
    st.session_state[ARMED] = False
    st.fragment(_rerun_once, run_every=pace.WATCH_TICK_S)()
    return True


def _rerun_once() -> None:
    """The fragment of :func:`_after_a_join`: drawn with the page, then rerun the whole page at its first tick."""
    if st.session_state.get(ARMED):
        st.session_state[ARMED] = False
        st.rerun(scope="app")
    st.session_state[ARMED] = True


def _wait_for(moved: Callable[[], bool]) -> None:
    """Between two runs of a class: look once a second for the next one, then show it."""
    if _after_a_join():
        return
    for _tick in ticks(lambda: pace.WATCH_IDLE_TICK_S, at_once=False):
        try:
            if moved():
                st.rerun()
        except StoreUnavailable:
            st.rerun()


def _marks(watched: WatchedRun) -> tuple:
    """What the live view shows of ``watched`` moves exactly when these do: its step, rows, snapshots, samples."""
    return (
        watched.state.get("step"),
        tuple(len(rows) for rows in watched.history),
        tuple((len(s), s[-1].step if s else -1) for s in watched.snapshots),
        tuple(len(s) for s in watched.samples),
    )


def _follow(watched: WatchedRun, view: views.LiveView, moved: Callable[[], bool] | None = None) -> None:
    """Read and redraw while the page shows the channel; rerun when it ends, a click waits, snapshots doubled or
    the class moved on."""
    if _after_a_join():
        return
    drawn = view.run.snapshot_count()
    status = watched.state.get("status")
    shown = _marks(watched)
    quiet = _quiet(watched)

    def period() -> float:
        return pace.WATCH_TICK_S if watched.state.get("status") == "running" else pace.WATCH_IDLE_TICK_S

    for _tick in ticks(period, at_once=False, rest_s=pace.WAKE_S):  # the page was just drawn
        before = watched.state
        try:
            alive = watched.sync() and not (moved is not None and moved())
        except StoreUnavailable:
            alive = False
        if not alive or watched.state.get("status") != status or _quiet(watched) != quiet:
            st.rerun()  # paused, resumed, over, gone or gone quiet: the page's controls and notes change with it
        if watched.state is before:
            continue  # nothing new
        if watched.state.get("downloads") != before.get("downloads"):
            st.rerun()
        if _marks(watched) == shown:
            continue  # news that changes nothing on the page (the step has not moved): send nothing
        shown = _marks(watched)
        view.refresh()
        if view.pinned_step is not None and watched.frame().snapshot_count()[0] >= max(2, 2 * drawn[0]):
            st.rerun()  # the time-lapse slider needs its new range
