"""Share links: the "Copy link to this view" control, and absolute addresses of pages on the app's own host.

A link carries the page's settings that differ from their defaults (:func:`~ui.common.urlstate.current_params`),
the app-wide ones, and the language it was made in, so it reopens the same view for a student or a projector.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlencode

import streamlit as st

from explorer.i18n import _
from ui.common.language import link_language
from ui.common.urlparam import UrlParam
from ui.common.urlstate import APP_PARAMS, PRESENT, current_params


def share_link(params: Sequence[UrlParam], *, url_path: str) -> str:
    """A "Copy link to this view" control; returns the students' link (the projector's adds ``present``).

    Both links carry the page's ``params`` and the app-wide settings (the heatmap colours) that differ from
    their defaults. ``url_path`` is the page's url path, "" for the home page.
    """
    shared = [p for p in APP_PARAMS if p.query_name != PRESENT]
    query = {**current_params(params), **current_params(shared)}
    link = view_link(url_path, query)
    projector = view_link(url_path, {**query, PRESENT: "true"})
    tip = _("A link that reopens this page with the same settings.")
    with st.popover("🔗 " + _("Copy link to this view"), help=tip):
        st.caption(_("For your students — copy it with the button at the right of the box:"))
        st.code(link, language=None, wrap_lines=True)
        st.caption(_("For the projector — the same view with large fonts and fewer controls:"))
        st.code(projector, language=None, wrap_lines=True)
    return link


def view_link(url_path: str, query: dict[str, str], *, shown_path: str | None = None) -> str:
    """The absolute address of the page at ``url_path`` with ``query``, on the app's own host and base path.

    ``shown_path`` is the url path of the page being shown now (by default ``url_path`` itself).
    """
    base = app_base_url(url_path if shown_path is None else shown_path)
    text = urlencode({**query, **link_language()})  # a link opens in the language it was made in
    address = f"{base}/{url_path}".rstrip("/") if url_path else f"{base}/"  # the home page keeps its slash
    return address + (f"?{text}" if text else "")


def app_base_url(shown_path: str = "") -> str:
    """The app's root address, from the browser's address of the page at ``shown_path`` ("" = home page)."""
    try:
        url = st.context.url or ""
    except AttributeError:
        url = ""
    url = url.split("?")[0].split("#")[0].rstrip("/")
    if not url:
        return "http://localhost:8501"
    if shown_path and url.endswith("/" + shown_path):
        return url[: -len(shown_path) - 1]
    return url
