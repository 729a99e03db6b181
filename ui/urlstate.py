"""Shareable views: a page's key settings round-trip through the URL's query parameters.

A page declares its settings as :class:`UrlParam` s whose ``key`` is the widget's session-state key (and,
unless ``name`` is given, the query-parameter name). The page then

1. calls :func:`bind_url` before drawing its widgets: when the page is entered (from a link, the menu or a
   reload), the link's valid values go into the widgets' session state, settings the link leaves out go back
   to their defaults, and invalid values are replaced by defaults with a notice;
2. draws its widgets with ``key=param.key`` (session state wins over a widget's ``value=``/``index=``);
3. calls :func:`push_url` after them, which writes the settings that differ from their defaults into the
   address bar, so reloading or bookmarking keeps them; and
4. puts :func:`share_link` near its top: a "Copy link to this view" control.

A page entered without any of its parameters in the URL (from the menu) keeps its current settings.
:func:`count_run` must be called once per script run by the app (the shared sidebar does it), so that a new
visit to a page can be told apart from a rerun after a widget change.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import streamlit as st

_RUNS = "url.runs"  # int: script runs of this session so far (see count_run)
_SEEN = "url.seen"  # dict page -> run number of the page's last bind_url
_PUSHED = "url.pushed"  # dict parameter-names key -> those query parameters as push_url last wrote them
_NOTICES = "url.notices"  # dict page -> notices about ignored parameters, shown during the visit
PRESENT = "present"  # query parameter that opens any page in projector mode (?present=true)


@dataclass(frozen=True)
class UrlParam:
    """One setting that can travel in the URL."""

    key: str  # widget / session-state key
    default: Any  # value when the URL has none or an invalid one; its type decides how the text is parsed
    choices: tuple | None = None  # allowed values (of each item, for a list setting), if it is a choice
    lo: float | None = None  # smallest allowed number
    hi: float | None = None  # largest allowed number
    max_chars: int = 300  # longest allowed text
    name: str | None = None  # query-parameter name, when it should differ from ``key``

    @property
    def query_name(self) -> str:
        """The name of this setting in the URL."""
        return self.name or self.key

    def parse(self, raw: str) -> Any:
        """Convert the URL text to a value, raising ``ValueError`` if it is not allowed.

        A list or tuple default makes a list setting, written as comma-separated items (``heads=0,2``).
        """
        if isinstance(self.default, list | tuple):
            items = [item for item in raw.split(",") if item != ""]
            return type(self.default)(self._parse_one(item, self._item_sample()) for item in items)
        return self._parse_one(raw, self.default)

    def _item_sample(self) -> Any:
        for source in (self.choices, self.default):
            if source:
                return next(iter(source))
        return ""

    def _parse_one(self, raw: str, sample: Any) -> Any:
        value = _convert(raw, sample, self.max_chars)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"must be one of {', '.join(str(c) for c in self.choices)}")
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        too_low = numeric and self.lo is not None and value < self.lo
        if too_low or (numeric and self.hi is not None and value > self.hi):
            raise ValueError(f"must be between {_number(self.lo)} and {_number(self.hi)}")
        return value

    def format(self, value: Any) -> str:
        """The URL text of ``value``."""
        if isinstance(value, list | tuple):
            return ",".join(self.format(v) for v in value)
        return str(value).lower() if isinstance(value, bool) else str(value)

    def is_default(self, value: Any) -> bool:
        """Whether ``value`` equals the default (as URL text, so ``[1, 2]`` equals ``(1, 2)``)."""
        return self.format(value) == self.format(self.default)


def _number(value: float | None) -> str:
    return "any" if value is None else f"{value:g}"


def _convert(raw: str, sample: Any, max_chars: int) -> Any:
    """Parse ``raw`` as the type of ``sample``."""
    if isinstance(sample, bool):
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError("must be true or false")
        return raw.lower() in ("true", "1")
    if isinstance(sample, int):
        try:
            return int(raw)
        except ValueError:
            raise ValueError("must be a whole number") from None
    if isinstance(sample, float):
        try:
            value = float(raw)
        except ValueError:
            raise ValueError("must be a number") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("must be a finite number")
        return value
    if len(raw) > max_chars:
        raise ValueError(f"is longer than {max_chars} characters")
    return raw


def count_run() -> None:
    """Count one script run of this session; the app calls it once per run, before the page."""
    st.session_state[_RUNS] = st.session_state.get(_RUNS, 0) + 1


def _names_key(params: Sequence[UrlParam]) -> str:
    """One key per set of parameters, so push_url and bind_url agree without being told the page."""
    return ",".join(sorted(p.query_name for p in params))


def _url_view(params: Sequence[UrlParam]) -> dict[str, str]:
    """The query parameters of ``params`` that the URL holds now."""
    names = {p.query_name for p in params}
    return {name: st.query_params[name] for name in st.query_params if name in names}


def bind_url(params: Sequence[UrlParam], *, page: str) -> None:
    """Apply the URL to the widgets' session state when ``page`` is entered or its URL changed from outside.

    Shows a notice for every value that was ignored, for as long as the visit lasts.
    """
    runs = st.session_state.get(_RUNS, 0)
    seen = st.session_state.setdefault(_SEEN, {})
    pushed = st.session_state.setdefault(_PUSHED, {})
    notices = st.session_state.setdefault(_NOTICES, {})
    url = _url_view(params)
    entered = page not in seen or seen[page] < runs - 1
    if entered or url != pushed.get(_names_key(params), {}):
        notices[page] = _apply(params, url)
        pushed[_names_key(params)] = url
    seen[page] = runs
    for text in notices.get(page, []):
        st.info(text, icon="🔗")


def _apply(params: Sequence[UrlParam], url: dict[str, str]) -> list[str]:
    """Copy the URL's values into session state; with any value present, the others return to defaults."""
    if not url:
        return []
    notices = []
    for p in params:
        raw = url.get(p.query_name)
        if raw is None:
            st.session_state[p.key] = p.default
            continue
        try:
            st.session_state[p.key] = p.parse(raw)
        except ValueError as err:
            st.session_state[p.key] = p.default
            shown = raw if len(raw) <= 40 else raw[:40] + "…"
            notices.append(f"The link's setting {p.query_name}={shown!r} was ignored: it {err}. "
                           f"Using the default, {p.format(p.default) or 'empty'}.")
    return notices


def forget_visit(page: str) -> None:
    """Make the next run of ``page`` read the URL again, as if the page had just been entered."""
    st.session_state.setdefault(_SEEN, {}).pop(page, None)


def current_params(params: Sequence[UrlParam]) -> dict[str, str]:
    """The settings that differ from their defaults, as query-parameter text."""
    out = {}
    for p in params:
        value = st.session_state.get(p.key, p.default)
        if not p.is_default(value):
            out[p.query_name] = p.format(value)
    return out


def push_url(params: Sequence[UrlParam]) -> None:
    """Write the current settings into the address bar, so reloading or bookmarking keeps them."""
    wanted = current_params(params)
    for name in _url_view(params):
        if name not in wanted:
            del st.query_params[name]
    for name, value in wanted.items():
        if st.query_params.get(name) != value:
            st.query_params[name] = value
    st.session_state.setdefault(_PUSHED, {})[_names_key(params)] = wanted


def share_link(params: Sequence[UrlParam], *, url_path: str) -> str:
    """A "Copy link to this view" control; returns the students' link (the projector's adds ``present``)."""
    link = view_link(url_path, current_params(params))
    projector = view_link(url_path, {**current_params(params), PRESENT: "true"})
    tip = "A link that reopens this page with the same settings."
    with st.popover("🔗 Copy link to this view", help=tip):
        st.caption("For your students — copy it with the button at the right of the box:")
        st.code(link, language=None, wrap_lines=True)
        st.caption("For the projector — the same view with large fonts and fewer controls:")
        st.code(projector, language=None, wrap_lines=True)
    return link


def view_link(url_path: str, query: dict[str, str], *, shown_path: str | None = None) -> str:
    """The absolute address of the page at ``url_path`` with ``query``, on the app's own host and base path.

    ``shown_path`` is the url path of the page being shown now (by default ``url_path`` itself).
    """
    base = app_base_url(url_path if shown_path is None else shown_path)
    text = urlencode(query)
    return f"{base}/{url_path}".rstrip("/") + (f"?{text}" if text else "")


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
