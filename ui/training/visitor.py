"""Who this browser session is, for the run rules: its session id, its browser's id and its address.

The browser's id comes from the ``_streamlit_xsrf`` cookie that Streamlit's server sets for every browser and
that the browser sends with the page's connection (``st.context.cookies``); why that cookie, and what it
guarantees, is explained in :mod:`explorer.runs.clients`. The address is ``st.context.ip_address`` (``None`` on
localhost, and the proxy's address behind a proxy that does not pass it on).
"""

from __future__ import annotations

import streamlit as st

from explorer.runs.clients import XSRF_COOKIE, Client, browser_id
from ui.common import st_internals


def visitor() -> Client:
    """This browser session as the run rules see it."""
    try:
        cookie, address = st.context.cookies.get(XSRF_COOKIE), st.context.ip_address
    except (AttributeError, RuntimeError):  # no browser behind this script run
        cookie, address = None, None
    return Client(st_internals.session_id() or "no-session", browser_id(cookie), address or None)
