"""Shareable views: a page's key settings round-trip through the URL's query parameters.

A page declares its settings as :class:`~ui.common.urlparam.UrlParam` s whose ``key`` is the widget's
session-state key (and, unless ``name`` is given, the query-parameter name). The page then

1. calls :func:`bind_url` before drawing its widgets: when the page is entered (from a link, the menu or a
   reload), the link's valid values go into the widgets' session state, settings the link leaves out go back
   to their defaults, and invalid values are replaced by defaults with a notice; so are names that neither the
   page nor the app knows (a mistyped ``?head=2``), which are ignored with the same kind of notice;
2. draws its widgets with ``key=param.key`` (session state wins over a widget's ``value=``/``index=``);
3. calls :func:`push_url` after them, which writes the settings that differ from their defaults into the
   address bar, so reloading or bookmarking keeps them; and
4. puts :func:`~ui.common.sharelink.share_link` near its top: a "Copy link to this view" control; its links
   carry the page's settings and the app-wide ones (:data:`APP_PARAMS`).

A link's value can pass :class:`UrlParam`'s checks and still not fit the other settings (5 heads with d_model 64).
The widget group then calls :func:`settle_choice`, which moves it to the nearest offered choice and, when the value
came from the link opened on this run, adds a notice under the title that says so. A user changing a widget never
gets such a notice.

A page entered without any of its parameters in the URL (from the menu) keeps its current settings.
:func:`count_run` must be called once per script run by the app (the shared sidebar does it), so that a new
visit to a page can be told apart from a rerun after a widget change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import streamlit as st

from explorer.i18n import _
from ui.common import state
from ui.common.language import LANG_PARAM
from ui.common.urlparam import UrlParam

_RUNS = "url.runs"  # int: script runs of this session so far (see count_run)
_SEEN = "url.seen"  # dict page -> run number of the page's last bind_url
_PUSHED = "url.pushed"  # dict parameter-names key -> those query parameters as push_url last wrote them
_NOTICES = "url.notices"  # dict page -> notices about ignored or changed parameters, shown during the visit
_SLOTS = "url.slots"  # dict page -> (run, st.empty) under the title where that run shows the page's notices
_LINKED = "url.linked"  # dict widget key -> _Linked: the settings a link set, kept for the run that applied it
PRESENT = "present"  # query parameter that opens any page in projector mode (?present=true)
APP_PAGE = "app"  # bind_url's page name for the app-wide settings (bound by the shared sidebar on every page)

# Settings of every page (the shared sidebar binds them); share links carry them too.
APP_PARAMS = (
    UrlParam(state.PRESENTATION, False, name=PRESENT),
    UrlParam(state.COLORSCALE, state.SEQUENTIAL_SCALES[0], choices=state.SEQUENTIAL_SCALES, name="colors"),
)


class _Linked(NamedTuple):
    """How a link opened on run ``run`` set one setting."""

    run: int  # the script run that applied the link
    page: str  # the page whose notices talk about it
    param: UrlParam  # the setting, for its query name and value format
    raw: str | None  # the link's text; None when the link left the setting out or its text was ignored


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


def bind_url(params: Sequence[UrlParam], *, page: str, reserved: Sequence[str] = ()) -> None:
    """Apply the URL to the widgets' session state when ``page`` is entered or its URL changed from outside.

    ``reserved`` names query parameters the page reads itself (not settings, never in share links). Shows a
    notice for every value that was ignored, for as long as the visit lasts, in a place under the title
    that also takes the notices added later in the run (:func:`settle_choice`, :func:`add_link_notice`).
    """
    runs = st.session_state.get(_RUNS, 0)
    seen = st.session_state.setdefault(_SEEN, {})
    pushed = st.session_state.setdefault(_PUSHED, {})
    notices = st.session_state.setdefault(_NOTICES, {})
    url = _url_view(params)
    entered = page not in seen or seen[page] < runs - 1
    if entered or url != pushed.get(_names_key(params), {}):
        notices[page] = _unknown_notices(params, page, reserved) + _apply(params, url, page=page, run=runs)
        pushed[_names_key(params)] = url
    seen[page] = runs
    st.session_state.setdefault(_SLOTS, {})[page] = (runs, st.empty())
    _show_notices(page)


def _apply(params: Sequence[UrlParam], url: dict[str, str], *, page: str, run: int) -> list[str]:
    """Copy the URL's values into session state; with any value present, the others return to defaults."""
    if not url:
        return []
    linked = {key: entry for key, entry in st.session_state.get(_LINKED, {}).items() if entry.run == run}
    notices = []
    for p in params:
        raw = url.get(p.query_name)
        linked[p.key] = _Linked(run, page, p, raw)
        if raw is None:
            st.session_state[p.key] = p.default
            continue
        try:
            st.session_state[p.key] = p.parse(raw)
        except ValueError as err:
            st.session_state[p.key] = p.default
            linked[p.key] = _Linked(run, page, p, None)
            notices.append(_("The link's setting {setting} was ignored: it {problem}. Using the default, "
                             "{default}.").format(setting=_setting(p.query_name, raw), problem=err,
                                                  default=p.format(p.default) or _("empty")))
    st.session_state[_LINKED] = linked
    return notices


def _unknown_notices(params: Sequence[UrlParam], page: str, reserved: Sequence[str] = ()) -> list[str]:
    """A notice for every query parameter that neither ``page`` nor the app-wide settings know."""
    if page == APP_PAGE:  # the app's settings are bound before the page, which knows the other names
        return []
    known = {p.query_name for p in (*params, *APP_PARAMS)} | set(reserved) | {LANG_PARAM}  # lang: the router's
    return [_("The link's setting {setting} was ignored: this page has no setting of that name.").format(
            setting=_setting(_shown(name), st.query_params[name])) for name in st.query_params if name not in known]


def _shown(raw: str) -> str:
    return raw if len(raw) <= 40 else raw[:40] + "…"


def _setting(name: str, raw: str) -> str:
    """A link's setting as the notices quote it: ``name='value'`` (a long value cut short)."""
    return f"{name}={_shown(raw)!r}"


def _show_notices(page: str) -> None:
    """(Re)draw the notices of ``page`` in the place under its title that bind_url kept on this run."""
    run, slot = st.session_state.get(_SLOTS, {}).get(page, (None, None))
    texts = st.session_state.get(_NOTICES, {}).get(page, [])
    if slot is None or run != st.session_state.get(_RUNS, 0) or not texts:
        return
    with slot.container():
        for text in texts:
            st.info(text, icon="🔗")


def _link_entry(key: str) -> _Linked | None:
    entry = st.session_state.get(_LINKED, {}).get(key)
    return entry if entry is not None and entry.run == st.session_state.get(_RUNS, 0) else None


def link_text(key: str) -> str | None:
    """The text that the link opened on this run gave the setting ``key``; None when it carried no valid one."""
    entry = _link_entry(key)
    return None if entry is None else entry.raw


def set_by_link(key: str) -> bool:
    """Whether a link opened on this run set the setting ``key`` (to its value, or to the default it left out)."""
    return _link_entry(key) is not None


def add_link_notice(key: str, change: str) -> bool:
    """Say under the title, for the rest of the visit, what the page did to the link's value of ``key``.

    Only when the link opened on this run carried that setting; returns whether it did. ``change`` ends the
    sentence "The link's setting name='value' …", e.g. "was changed to 0,1,2,3,4,5,6,7: the chart draws at most
    8 curves.". A choice that must be one of a list calls :func:`settle_choice` instead, which does this itself.
    """
    entry = _link_entry(key)
    if entry is None or entry.raw is None:
        return False
    text = _("The link's setting {setting} {change}").format(setting=_setting(entry.param.query_name, entry.raw),
                                                              change=change)
    st.session_state.setdefault(_NOTICES, {}).setdefault(entry.page, []).append(text)
    _show_notices(entry.page)
    return True


def settle_choice(key: str, choices: Sequence, *, default: Any = None, why: str = "") -> Any:
    """Make the setting ``key`` one of ``choices`` before its widget is drawn, and return it.

    A value that is not offered (a link's, or one left from settings that have changed since) becomes the nearest
    number when the choices are numbers, else the first choice. When it came from the link opened on this run,
    a notice under the title says so: "The link's setting vit.heads='5' was changed to 4: the number of heads
    must divide d_model 64." A user changing a widget never gets one.

    Args:
        key: the widget's session-state key (a :class:`UrlParam`'s ``key``).
        choices: the values the widget offers now, not empty; a ``range`` works.
        default: the value when session state has none yet (``None``: the first choice); settled like any other.
        why: the end of the notice, the rule the link's value broke, e.g. "the number of heads must divide
            d_model 64"; by default it lists the choices.

    Returns:
        The value now in ``st.session_state[key]``.
    """
    options = list(choices)
    value = st.session_state.get(key, options[0] if default is None else default)
    if value not in options:
        value = _nearest(value, options)
        entry = _link_entry(key)
        if entry is not None:
            rule = why or _("the choices here are {choices}").format(
                choices=_listed([entry.param.format(o) for o in options]))
            add_link_notice(key, _("was changed to {value}: {rule}.").format(value=entry.param.format(value),
                                                                            rule=rule))
    st.session_state[key] = value
    return value


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _nearest(value: Any, options: list) -> Any:
    """The option closest to ``value`` (the smaller one on a tie); the first option if they are not numbers."""
    if _is_number(value) and all(_is_number(o) for o in options):
        return min(options, key=lambda o: (abs(o - value), o))
    return options[0]


def _listed(items: list[str]) -> str:
    """The items as text, "1, 2 and 4"; a long list keeps its ends, "1, 2, 3, …, 64"."""
    if len(items) > 8:
        return ", ".join([*items[:3], "…", items[-1]])
    if len(items) == 1:
        return items[0]
    return _("{some} and {last}").format(some=", ".join(items[:-1]), last=items[-1])


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

