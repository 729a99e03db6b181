"""Keeps every visit going through the router in ``app.py``, deep links on a fresh server included.

Streamlit still knows the pre-``st.navigation`` way of building a multipage app from a ``pages/`` folder. Until
``st.navigation`` has run once in the server process, a first request for, say, ``/lessons`` runs
``pages/lessons.py`` on its own: no page config, no shared sidebar, no session defaults, and an automatic menu of
file names. Each page therefore starts with :func:`ensure_router`, which notices that case, switches the old
mode off (exactly what ``st.navigation`` itself does) and reruns, so the same URL is served through ``app.py``.
The page files are named like their URL paths, so the rerun lands on the same page.
"""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager


def ensure_router() -> None:
    """Rerun through ``app.py`` when Streamlit ran this page script directly."""
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        st.rerun()
