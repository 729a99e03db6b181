"""Live Training page: a run survives its page's connection — parked when it ends, taken back on reload.

When a run starts, the session enters it in the server's run registry under a reload token
(:meth:`~explorer.runs.session.RunSession.take_back`), and the token goes into the tab's address (``?run=…``).
If the page's connection ends while the run trains, the live loop parks it: paused, model and optimiser kept.
Reloading the address — by hand, or with the *Reconnect* button that :mod:`ui.training.watchdog` shows when the
page stops updating — brings it back paused, and Resume goes on from the same step.

The token alone is worth nothing: only the browser that started the run takes it back (its id comes from a cookie
that no address carries, see :mod:`explorer.runs.clients`). An address read off a projector and opened in another
browser gives a fresh page, and the owner keeps training. In projector mode the address carries no token at all:
a reload there takes back this browser's latest parked run. Share links never carry it either.

A run whose tab closes is parked whatever its state: the registry asks Streamlit which sessions still have their
connection (:func:`watch_sessions`), parks a paused run whose session is gone, and after a minute has it give its
trainer process back to the run store; the reload then resumes it from there, at its step, with its curves.

A run can be shown by one page at a time: a second tab of the same browser opened on the same address takes it
over, and the first tab's loop stops and says where the run went.
"""

from __future__ import annotations

import streamlit as st

from explorer.i18n import _
from explorer.runs.registry import RunRegistry
from explorer.runs.session import RunSession
from ui.common import st_internals
from ui.training.specs import settings_signature

RUN_PARAM = "run"  # query parameter with the run's token


def take_back_from_address(held: RunSession, projector: bool) -> None:
    """Take back the run named by the address's ``?run=`` token (in projector mode: this browser's latest parked
    run), if this session does not show it already; then let the address name the session's run."""
    watch_sessions(held.registry)
    held.take_back(st.query_params.get(RUN_PARAM), settings_signature(), without_token=projector)
    show_token(held, projector)


def watch_sessions(registry: RunRegistry) -> None:
    """Let ``registry`` ask Streamlit whether a run's session still has its connection (set once per process)."""
    if registry.alive is None:
        registry.alive = st_internals.session_connected


def show_token(held: RunSession, projector: bool) -> None:
    """Put the run's reload token into the address (a reload finds the run again), or take a stale one out;
    never in projector mode, whose address a room reads."""
    token = held.token if held.token is not None and not projector and held.still_mine() else None
    if token is None:
        if RUN_PARAM in st.query_params:
            del st.query_params[RUN_PARAM]
    elif st.query_params.get(RUN_PARAM) != token:
        st.query_params[RUN_PARAM] = token


def moved_away_notice(held: RunSession) -> None:
    """Say that this tab's run now continues in another tab (once), after the loop found it taken over."""
    if held.moved:
        held.moved = False
        st.info(
            _("This run was opened in another tab or window and continues there. Press Start here for a new run."),
            icon="↗️",
        )
