"""Live Training page: the page's swapped containers, so that a new run is drawn into a fresh one.

A training script runs on for a whole run, and the browser keeps a container's old children until a script run
ends: without a fresh container per run, another run's leftover charts would stay on screen, faded. Two page slots
take turns (:func:`swapped_container`); :func:`run_container` gives each run its own, and the same run keeps it.
"""

from __future__ import annotations

import weakref
from typing import Any

import streamlit as st

LAYOUT = "live.layout"  # ((weak ref to the run, projector), slot 0 or 1): which page slot holds that run's view
NOTICES = "live.notices"  # (owner, slot 0 or 1): the notices above the buttons, drawn afresh on every run


def run_container(run: object, projector: bool) -> Any:
    """The container for everything drawn of ``run``: the same one while the run stays, a fresh one for a new run.

    The browser keeps a container's old children until a script run ends, and a training script runs on
    for the whole run: another run's leftover charts (a third curve, a second lane, its attention picker)
    would stay on screen, faded. The same run keeps its container, so its charts are updated in place
    instead of being drawn afresh. The page keeps the number of elements above it fixed.
    """
    return swapped_container(LAYOUT, (weakref.ref(run), projector))


def swapped_container(key: str, owner: Any) -> Any:
    """A container that starts empty whenever ``owner`` differs from the last script run's (kept under ``key``).

    Two page slots take turns: a new owner gets the other slot, and the old one becomes an empty element,
    which drops everything it held; the same owner keeps its slot and its children.
    """
    previous = st.session_state.get(key)
    same = previous is not None and previous[0] == owner
    active = previous[1] if same else 1 - (previous[1] if previous is not None else 1)
    st.session_state[key] = (owner, active)
    if active == 0:  # the other slot becomes an empty element, which drops what it held
        root = st.container()
        st.empty()
    else:
        st.empty()
        root = st.container()
    return root
