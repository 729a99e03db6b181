"""Who this browser session is, for the run rules: its session id, its browser's id and its address.

The browser's id comes from the ``_streamlit_xsrf`` cookie that Streamlit's server sets for every browser and
that the browser sends with the page's connection (``st.context.cookies``); why that cookie, and what it
guarantees, is explained in :mod:`explorer.runs.clients`. The address is ``st.context.ip_address`` (``None`` on
localhost), or behind a proxy named in ``TE_TRUSTED_PROXIES`` the address it passes on in ``X-Forwarded-For``
(:func:`explorer.runs.clients.client_address`). The server's :data:`~explorer.runs.clients.CLIENTS` book decides
whether a new browser id counts alone or against its address.
"""

from __future__ import annotations

import streamlit as st

from explorer.runs.clients import CLIENTS, XSRF_COOKIE, Client, browser_id, client_address
from ui.common import st_internals


def visitor() -> Client:
    """This browser session as the run rules see it."""
    try:
        cookie, peer = st.context.cookies.get(XSRF_COOKIE), st.context.ip_address
        forwarded = st.context.headers.get("X-Forwarded-For")
    except (AttributeError, RuntimeError):  # no browser behind this script run
        cookie, peer, forwarded = None, None, None
    client = Client(st_internals.session_id() or "no-session", browser_id(cookie), client_address(peer, forwarded))
    return CLIENTS.admit(client)
