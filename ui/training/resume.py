"""Live Training page: a run survives its page's connection — parked when it ends, taken back on reload.

When a run starts, it is entered in the server's :data:`~explorer.runs.registry.REGISTRY` and its token goes
into the tab's address (``?run=…``; never into share links). If the page's connection ends while the run trains,
the live loop parks it (:func:`park`): paused, model and optimiser kept. Reloading the address — by hand, or
with the *Reconnect* button that :mod:`ui.training.watchdog` shows when the page stops updating — brings it
back paused (:func:`adopt_from_url`), and Resume goes on from the same step.

A run can be shown by one page at a time: a second tab opened on the same address takes it over, and the first
tab's loop stops and says where the run went.
"""

from __future__ import annotations

import streamlit as st

from explorer.runs.live import LiveRun
from explorer.runs.registry import REGISTRY
from ui.common import st_internals
from ui.training import controls as tc

RUN_PARAM = "run"  # query parameter with the run's token
TOKEN = "live.run_token"  # str | None: the registry token of this session's run
MOVED = "live.moved"  # bool: this session's run was taken over by another tab
LOG = st_internals.logger("transformer_explorer.live")


def _owner() -> str:
    return st_internals.session_id() or "no-session"


def register(run: LiveRun) -> None:
    """Enter the session's ``run`` in the registry (once) and put its token into the tab's address."""
    token = st.session_state.get(TOKEN)  # build_run forgets the token of a replaced run
    if token is None or not REGISTRY.owns(token, _owner()):
        if token is not None:
            REGISTRY.forget(token)
        token = REGISTRY.register(run, _owner())
    st.session_state[TOKEN] = token
    st.query_params[RUN_PARAM] = token


def forget() -> None:
    """The session's run is replaced: drop its entry and the token from the address."""
    token = st.session_state.pop(TOKEN, None)
    if token is not None:
        REGISTRY.forget(token)
    if RUN_PARAM in st.query_params:
        del st.query_params[RUN_PARAM]


def still_mine() -> bool:
    """Whether this page still shows its run (False once another tab took it over); also a heartbeat."""
    token = st.session_state.get(TOKEN)
    return token is None or REGISTRY.owns(token, _owner())


def park(run: LiveRun) -> None:
    """The page's connection ended while ``run`` trained: pause it and keep it for a reload."""
    token = st.session_state.get(TOKEN)
    step = REGISTRY.park(token, _owner()) if token is not None else None
    if step is None:  # not registered (or taken over meanwhile): at least never leave it running unwatched
        with run.lock:
            run.pause()
        step = run.step
    LOG.info("live loop ended: the connection ended; run paused and kept for a reload at step %d", step)


def adopt_from_url(run_key: str, signature_key: str, notice_key: str) -> None:
    """Take back the run named by the address's ``?run=`` token, if this session does not show it already.

    ``run_key``, ``signature_key`` and ``notice_key`` are the page's session-state keys for the run, the
    settings it was built from and the one-time notice.
    """
    REGISTRY.sweep()
    token, mine = st.query_params.get(RUN_PARAM), st.session_state.get(TOKEN)
    if not token and mine is not None and REGISTRY.owns(mine, _owner()):
        st.query_params[RUN_PARAM] = mine  # back from another page: the address names the run again
    if not token or token == mine:
        return
    claim = REGISTRY.claim(token, _owner())
    if claim is None:
        del st.query_params[RUN_PARAM]
        st.session_state[notice_key] = (
            "info", "The run this address pointed to is no longer on the server: it was not reopened within "
                    f"{REGISTRY.park_ttl_s / 60:.0f} minutes, or the server restarted. Press Start for a new run.")
        return
    st.session_state[run_key], st.session_state[TOKEN] = claim.run, token
    st.session_state[signature_key] = tc.settings_signature()
    LOG.info("run taken back at step %d (%s)", claim.run.step, "moved" if claim.moved else "same page")
    if claim.run.status == "paused":
        st.session_state[notice_key] = (
            "success", f"Welcome back: your run was paused at step {claim.run.step:,} when the connection to the "
                       "page ended. Press **Resume** to continue exactly where it stopped.")


def moved_away_notice() -> None:
    """Say that this tab's run now continues in another tab (once), after the loop found it taken over."""
    if st.session_state.pop(MOVED, False):
        st.info("This run was opened in another tab or window and continues there. Press Start here for a new "
                "run.", icon="↗️")
