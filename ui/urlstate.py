"""Shareable views: a page's key settings round-trip through the URL's query parameters.

A page declares its settings as :class:`UrlParam` s whose ``key`` is both the widget's session-state key and the
query-parameter name. Before drawing its widgets it calls :func:`bind_url` (URL -> widgets, once per visit, with
a notice for invalid values); after them, :func:`push_url` (widgets -> URL) and :func:`share_link`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

_LOADED = "url.loaded"  # set of pages whose URL parameters were applied in this visit
_NOTICES = "url.notices"  # dict page -> list of notices about ignored parameters


@dataclass(frozen=True)
class UrlParam:
    """One setting that can travel in the URL."""

    key: str  # widget key and query-parameter name
    default: Any  # value when the URL has none or an invalid one; its type decides how the text is parsed
    choices: tuple | None = None  # allowed values, if the setting is a choice
    lo: float | None = None  # smallest allowed number
    hi: float | None = None  # largest allowed number
    max_chars: int = 300  # longest allowed text

    def parse(self, raw: str) -> Any:
        """Convert the URL text to a value, raising ``ValueError`` if it is not allowed."""
        value = self._convert(raw)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(str(c) for c in self.choices)}")
        if isinstance(value, int | float) and not isinstance(value, bool):
            if (self.lo is not None and value < self.lo) or (self.hi is not None and value > self.hi):
                raise ValueError(f"must be between {self.lo} and {self.hi}")
        return value

    def _convert(self, raw: str) -> Any:
        if isinstance(self.default, bool):
            if raw.lower() not in ("true", "false", "1", "0"):
                raise ValueError("must be true or false")
            return raw.lower() in ("true", "1")
        if isinstance(self.default, int):
            return int(raw)
        if isinstance(self.default, float):
            value = float(raw)
            if value != value or value in (float("inf"), float("-inf")):
                raise ValueError("must be a finite number")
            return value
        if len(raw) > self.max_chars:
            raise ValueError(f"is longer than {self.max_chars} characters")
        return raw

    def format(self, value: Any) -> str:
        return str(value).lower() if isinstance(value, bool) else str(value)


def bind_url(params: Sequence[UrlParam], *, page: str) -> None:
    """On the first run of a page visit, copy valid URL values into the widgets' session state."""
    loaded = st.session_state.setdefault(_LOADED, set())
    notices = st.session_state.setdefault(_NOTICES, {})
    if page not in loaded:
        loaded.add(page)
        notices[page] = _apply(params)
    for text in notices.get(page, []):
        st.info(text, icon="🔗")


def _apply(params: Sequence[UrlParam]) -> list[str]:
    notices = []
    for p in params:
        raw = st.query_params.get(p.key)
        if raw is None:
            continue
        try:
            st.session_state[p.key] = p.parse(raw)
        except ValueError as err:
            st.session_state[p.key] = p.default
            notices.append(f"The link's value {p.key}={raw[:40]!r} was ignored ({err}); using {p.format(p.default)}.")
    return notices


def forget_visit(page: str) -> None:
    """Make the next run of ``page`` read the URL again (e.g. after the user opens a new link)."""
    st.session_state.setdefault(_LOADED, set()).discard(page)


def current_params(params: Sequence[UrlParam]) -> dict[str, str]:
    """The settings that differ from their defaults, as query-parameter text."""
    out = {}
    for p in params:
        value = st.session_state.get(p.key, p.default)
        if value != p.default:
            out[p.key] = p.format(value)
    return out


def push_url(params: Sequence[UrlParam]) -> None:
    """Write the current settings into the address bar, so reloading or bookmarking keeps them."""
    wanted = current_params(params)
    names = {p.key for p in params}
    for name in list(st.query_params.keys()):
        if name in names and name not in wanted:
            del st.query_params[name]
    for name, value in wanted.items():
        if st.query_params.get(name) != value:
            st.query_params[name] = value


def share_link(params: Sequence[UrlParam], *, url_path: str) -> str:
    """A "Copy link to this view" control; returns the link."""
    base = _base_url()
    query = urlencode(current_params(params))
    link = f"{base}/{url_path}" + (f"?{query}" if query else "")
    with st.popover("🔗 Copy link to this view", help="A link that reopens this page with the same settings."):
        st.caption("Copy this link (button at the right of the box) and send it to your students:")
        st.code(link, language=None, wrap_lines=True)
    return link


def _base_url() -> str:
    try:
        url = st.context.url or ""
    except AttributeError:
        url = ""
    url = url.split("?")[0].rstrip("/")
    # st.context.url ends with the current page's path; keep only the app's root.
    head, _, _ = url.rpartition("/") if url.count("/") > 2 else (url, "", "")
    return head or "http://localhost:8501"
