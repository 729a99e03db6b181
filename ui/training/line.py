"""Live Training page: wait in line for a place to train, first come, first served.

When the server already trains as many runs as it allows, Start (or Resume) puts the page in the server's line
(:data:`explorer.runs.slots.LINE`) instead of refusing. The page then shows its place and an estimated wait, renews
its ticket every half second, and starts the run by itself when its turn comes and a place is free. Leaving the
page, closing the tab or pressing "Leave the line" gives the place up (a closed tab's ticket expires by itself).
"""

from __future__ import annotations

import time

import streamlit as st

from explorer.host import limits
from explorer.runs.live import LiveRun
from explorer.runs.slots import LINE, estimated_wait_s, start_if_free
from ui.common import st_internals

WAITING = "live.line.waiting"  # bool: this session's run waits in line
POLL_S = 0.5  # how often a waiting page renews its ticket and asks for a place
LOG = st_internals.logger("transformer_explorer.line")


def ticket() -> str:
    """This browser session's ticket in the line."""
    return st_internals.session_id() or "no-session"


def start_or_wait(run: LiveRun) -> bool:
    """Start ``run`` if a place is free for it, else join the line; returns whether it runs now."""
    if start_if_free(run, limits().max_live_runs, ticket()):
        st.session_state[WAITING] = False
        return True
    place = LINE.join(ticket())
    st.session_state[WAITING] = True
    LOG.info("run waits in line at place %d", place)
    return False


def leave_line() -> None:
    """Give up the session's place in line (the page was left, or the user chose to)."""
    if st.session_state.pop(WAITING, False):
        LINE.leave(ticket())


def waiting() -> bool:
    """Whether this session's run waits in line."""
    return bool(st.session_state.get(WAITING))


def _wait_text(place: int) -> str:
    most = limits().max_live_runs
    wait = estimated_wait_s(place, most)
    about = f"about {_duration(wait)}" if wait is not None else "a little while"
    ahead = "You are next" if place == 1 else f"{place - 1} {'run waits' if place == 2 else 'runs wait'} before yours"
    return (f"⏳ **Place {place} in line** · {ahead} · estimated wait: {about}.  \nThis server trains at most "
            f"{most} runs at once to stay responsive; yours starts by itself when a place frees. Keep this tab "
            "open: leaving the page gives your place up.")


def _duration(seconds: float) -> str:
    return f"{max(1, round(seconds))} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def wait_in_line(run: LiveRun, on_start) -> None:
    """While the run waits: show the place in line and start the run as soon as it may; ``on_start`` runs then.

    Loops in the page's script: every half second the ticket is renewed and a place asked for. A click reruns
    the script at the next redraw; a closed tab stops it, and its ticket expires.
    """
    if not waiting():
        return
    c_text, c_leave = st.columns([4, 1.2], vertical_alignment="center")
    c_leave.button("Leave the line", icon=":material/logout:", on_click=leave_line, key="live.line.leave",
                   help="Give up your place; press Start again later.")
    slot = c_text.empty()
    try:
        while waiting():
            if start_if_free(run, limits().max_live_runs, ticket()):
                st.session_state[WAITING] = False
                LOG.info("run left the line and started")
                on_start(run)
                st.rerun()
            place = LINE.join(ticket())
            slot.info(_wait_text(place))  # also where Streamlit stops or reruns the script
            time.sleep(POLL_S)
    except st_internals.StopException:  # the tab closed: its place goes to the next in line at once
        leave_line()
        raise
