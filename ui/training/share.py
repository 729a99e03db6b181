"""Live Training page, the owner's side of watching: share the run live, see how many watch, allow downloads.

"📡 Share live" gives the session's run a watch channel (:class:`~explorer.runs.channel.WatchChannel`) and a
link with ``?watch=<id>``. The live loop then sends the run's news after every slice (:func:`send_news`);
watchers see it read-only. A new run (Reset, Start after the end, new settings) closes the old channel: its link
then says so and offers the recording when the run was recorded. Downloads for watchers are off until the owner
allows them; then the model files are offered whenever the run pauses or ends.
"""

from __future__ import annotations

import time

import streamlit as st

from explorer.runs.session import RunSession
from ui.common.urlstate import current_params, view_link
from ui.training import controls, text
from ui.training.controls import PAGE

SHARING = "live.share.on"  # bool: the owner shares this session's runs live (the toggle)
LOST = "live.share.lost"  # str: why sharing stopped by itself (the store went away); the toggle turns off next run
DOWNLOADS = "live.share.downloads"  # bool: watchers may download the model
COUNT_SLOT = "live.share.count"  # (placeholder, when last drawn): the watcher count, kept current by the loop
COUNT_EVERY_S = 2.0  # the live loop redraws the watcher count this often
WATCH_PARAM = "watch"  # the query parameter of watch links


def settings_query() -> dict[str, str] | None:
    """The current settings as a link's query, so that watchers can open the same run for themselves (``None``
    for a run on the user's own text, which links never carry)."""
    if text.own_text_selected(st.session_state[controls.TASK]):
        return None
    return current_params(controls.url_params(st.session_state[controls.TASK]))


def send_news(held: RunSession, *, force: bool = False) -> None:
    """Send the run's news to its watch channel (when shared) and keep the watcher count current."""
    lost = held.broadcast(force=force)
    if lost is not None:  # the toggle is drawn already: it turns off before the next run draws it
        st.session_state[LOST] = lost
        st.warning(f"Live sharing stopped: {lost} Training goes on.", icon="📡")
        return
    _draw_count(held)


def _draw_count(held: RunSession) -> None:
    """Redraw "👀 N watching" when it is due (it changes as students open or close the link)."""
    slot = st.session_state.get(COUNT_SLOT)
    now = time.monotonic()
    if held.channel is None or slot is None or now - slot[1] < COUNT_EVERY_S:
        return
    slot[0].markdown(f"👀 **{held.channel.watchers()}** watching",
                     help="Devices that showed this run in the last 10 seconds.")
    st.session_state[COUNT_SLOT] = (slot[0], now)


def share_panel(held: RunSession) -> None:
    """The "Share live" toggle and, when on, the watch link, the number of watchers and the downloads switch."""
    if held.run is None:
        return
    if lost := st.session_state.pop(LOST, None):
        st.session_state[SHARING] = False
        st.warning(f"Live sharing stopped: {lost} Turn it on again when the store is back.", icon="📡")
    c_toggle, c_link = st.columns([1, 3], vertical_alignment="center")
    c_toggle.toggle("📡 Share live", key=SHARING,
                    help="Give this run a link that anyone can open to watch it train, read-only: students see "
                         "the curves, heatmaps and samples update on their own devices, and training costs "
                         "nothing more.")
    held.sharing, held.downloads = bool(st.session_state.get(SHARING)), bool(st.session_state.get(DOWNLOADS))
    if not held.sharing:
        held.end_channel("Its owner stopped sharing it.")
        return
    send_news(held, force=True)
    if held.channel is None:
        return
    link = view_link(PAGE, {WATCH_PARAM: held.channel.run_id})
    with c_link:
        st.code(link, language=None, wrap_lines=True)
    c_count, c_downloads = st.columns([1, 3], vertical_alignment="center")
    st.session_state[COUNT_SLOT] = (c_count.empty(), 0.0)
    _draw_count(held)
    c_downloads.checkbox("Let watchers download the model", key=DOWNLOADS,
                         help="Watchers may then download this run's trained weights (a checkpoint) whenever it "
                              "is paused or finished. Off by default: a watch link alone never gives your model "
                              "away.")
    held.downloads = bool(st.session_state.get(DOWNLOADS))

