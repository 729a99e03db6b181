"""Keeps every visit going through the router in ``app.py``, deep links on a fresh server included.

Streamlit still knows the pre-``st.navigation`` way of building a multipage app from a ``pages/`` folder. Until
``st.navigation`` has run once in the server process, a first request for, say, ``/lessons`` runs
``pages/lessons.py`` on its own: no page config, no shared sidebar, no session defaults, and an automatic menu of
file names. Each page therefore starts with :func:`ensure_router`. In that case it switches the old mode off
(exactly what ``st.navigation`` itself does) and runs ``app.py`` in its place within the same script run, so the
URL is served through the router and any button click of this run still counts. The page files are named like
their URL paths, so the router picks the same page.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ui.common import st_internals

APP = Path(__file__).resolve().parents[2] / "app.py"


def ensure_router() -> None:
    """Serve this run through ``app.py`` when Streamlit ran the page script directly."""
    if not st_internals.runs_pages_directory():
        return
    st_internals.leave_pages_directory()
    code = compile(APP.read_text(encoding="utf-8"), str(APP), "exec")
    exec(code, {"__name__": "__main__", "__file__": str(APP)})  # noqa: S102 - our own router
    st.stop()  # the router has drawn the page; skip the rest of this direct run
