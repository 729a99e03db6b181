"""Live Training page, the owner's side of watching: share the run live, see how many watch, allow downloads.

"📡 Share live" gives the run a channel in the run store (:mod:`explorer.runs.watch`) and a link with ``?watch=<id>``.
The live loop then publishes the run after every slice (:func:`publish`); watchers see it read-only. A new run
(Reset, Start after the end, new settings) closes the old channel: its link then says so and offers the
recording when the run was recorded. Downloads for watchers are off until the owner allows them; then the model
files are offered whenever the run pauses or ends.
"""

from __future__ import annotations

import time

import streamlit as st

from explorer.runs.live import LiveRun
from explorer.runs.recording import ReplayRun, checkpoint_bytes, recording_key, recording_meta
from explorer.runs.store import StoreUnavailable, run_store
from explorer.runs.watch import Publisher
from ui.common import st_internals
from ui.common.urlstate import current_params, view_link
from ui.training import controls as tc
from ui.training import text as tt
from ui.training.controls import PAGE

SHARING = "live.share.on"  # bool: the owner shares this session's runs live (the toggle)
LOST = "live.share.lost"  # str: why sharing stopped by itself (the store went away); the toggle turns off next run
PUBLISHER = "live.share.publisher"  # (run's id, Publisher): the channel of the run being shared
DOWNLOADS = "live.share.downloads"  # bool: watchers may download the model
OFFERED = "live.share.offered"  # (channel id, step): the model files last offered to watchers
COUNT_SLOT = "live.share.count"  # (placeholder, when last drawn): the watcher count, kept current by the loop
COUNT_EVERY_S = 2.0  # the live loop redraws the watcher count this often
RUN_QUERY = "live.share.query"  # the run's settings as a link's query (see remember_settings)
WATCH_PARAM = "watch"  # the query parameter of watch links
LOG = st_internals.logger("transformer_explorer.share")


def _publisher(run: LiveRun) -> Publisher | None:
    """The channel of ``run`` when sharing is on (a new run gets a new channel; the old one is closed)."""
    if not st.session_state.get(SHARING):
        return None
    held = st.session_state.get(PUBLISHER)
    if held is not None and held[0] == id(run):
        return held[1]
    end_channel("Its owner started a new run.")
    publisher = Publisher(run_store())
    st.session_state[PUBLISHER] = (id(run), publisher)
    return publisher


def end_channel(reason: str, run: LiveRun | None = None) -> None:
    """Close the shared channel, if any; its link says ``reason`` and offers ``run``'s recording if it has one."""
    held = st.session_state.pop(PUBLISHER, None)
    if held is None:
        return
    key = recording_key(run) if run is not None and run.recordable and run.finished else None
    try:
        held[1].end(reason, key)
    except StoreUnavailable as err:
        LOG.warning("could not close a shared channel: %s", err)


def publish(run: LiveRun, *, force: bool = False) -> None:
    """Publish ``run``'s news to its channel (when shared); offer the model files when allowed and due."""
    publisher = None if st.session_state.get(LOST) else _publisher(run)
    if publisher is None:
        return
    allowed = bool(st.session_state.get(DOWNLOADS))
    replay = isinstance(run, ReplayRun)
    key = recording_key(run) if run.recordable else None
    try:
        meta = {**recording_meta(run, key), "query": st.session_state.get(RUN_QUERY)}
        publisher.publish(run.frame(), meta, force=force, downloads=allowed, replay=replay)
        _draw_count(publisher)
        offered = (publisher.run_id, run.step)
        if allowed and run.status != "running" and run.trainers[0].step and st.session_state.get(OFFERED) != offered:
            files = [checkpoint_bytes(run, i) for i in range(len(run.trainers))]
            publisher.store.put_checkpoints(publisher.run_id, run.step, files)
            st.session_state[OFFERED] = offered
    except StoreUnavailable as err:  # the toggle is drawn already: it turns off before the next run draws it
        st.session_state[LOST] = str(err)
        st.session_state.pop(PUBLISHER, None)
        st.warning(f"Live sharing stopped: {err} Training goes on.", icon="📡")


def remember_settings() -> None:
    """Note the settings a new run is built from, as a link's query: watchers can open the same run for
    themselves (none for a run on the user's own text, which links do not carry)."""
    own = tt.own_text_selected(st.session_state[tc.TASK])
    st.session_state[RUN_QUERY] = None if own else current_params(tc.url_params(st.session_state[tc.TASK]))


def _draw_count(publisher: Publisher) -> None:
    """Redraw "👀 N watching" when it is due (it changes as students open or close the link)."""
    slot = st.session_state.get(COUNT_SLOT)
    now = time.monotonic()
    if slot is None or now - slot[1] < COUNT_EVERY_S:
        return
    watching = publisher.store.watcher_count(publisher.run_id)
    slot[0].markdown(f"👀 **{watching}** watching", help="Devices that showed this run in the last 10 seconds.")
    st.session_state[COUNT_SLOT] = (slot[0], now)


def _on_toggle() -> None:
    if not st.session_state.get(SHARING):
        end_channel("Its owner stopped sharing it.")


def share_panel(run: LiveRun | None) -> None:
    """The "Share live" toggle and, when on, the watch link, the number of watchers and the downloads switch."""
    if run is None:
        return
    if lost := st.session_state.pop(LOST, None):
        st.session_state[SHARING] = False
        st.warning(f"Live sharing stopped: {lost} Turn it on again when the store is back.", icon="📡")
    c_toggle, c_link = st.columns([1, 3], vertical_alignment="center")
    c_toggle.toggle("📡 Share live", key=SHARING, on_change=_on_toggle,
                    help="Give this run a link that anyone can open to watch it train, read-only: students see "
                         "the curves, heatmaps and samples update on their own devices, and training costs "
                         "nothing more.")
    if not st.session_state.get(SHARING):
        return
    publish(run, force=True)
    held = st.session_state.get(PUBLISHER)
    if held is None:
        return
    publisher = held[1]
    link = view_link(PAGE, {WATCH_PARAM: publisher.run_id})
    with c_link:
        st.code(link, language=None, wrap_lines=True)
    c_count, c_downloads = st.columns([1, 3], vertical_alignment="center")
    st.session_state[COUNT_SLOT] = (c_count.empty(), 0.0)
    _draw_count(publisher)
    c_downloads.checkbox("Let watchers download the model", key=DOWNLOADS,
                         help="Watchers may then download this run's trained weights (a checkpoint) whenever it "
                              "is paused or finished. Off by default: a watch link alone never gives your model "
                              "away.")
