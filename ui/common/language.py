"""The session's language: from a link's ``lang=``, the sidebar's picker, or the browser; and the picker itself.

Order: a link's ``lang=`` (a class link opens in the teacher's language), then the picker (a student may pick
another; the choice goes into the address so a reload keeps it), then the browser's language
(``st.context.locale``), then English. The router calls :func:`apply_language` before anything is drawn and the
sidebar marks the page with it (:func:`mark_page_language`); :mod:`explorer.i18n` asks :func:`session_language`
which catalogue each ``_()`` reads.
"""

from __future__ import annotations

import json
import re

import streamlit as st

from explorer.i18n import LANGUAGES, SOURCE, _, get, match, set_language_source
from ui.common.st_internals import labelled_widget_keys, session_id

LANGUAGE = "app.language"  # str: the session's language code ("en", "de", "es", "zh-CN"); the picker's key
_LINKED = "app.language_link"  # str: the last ``lang=`` text applied, so that a link is applied once
_SHOWN = "app.language_shown"  # str: the language the last run drew its widgets in
LANG_PARAM = "lang"  # the query parameter every link the app makes carries


def session_language() -> str | None:
    """The current session's language code, or None outside a script run (a background thread)."""
    if session_id() is None:
        return None
    try:
        return st.session_state.get(LANGUAGE)
    except Exception:  # noqa: BLE001 — no session to ask (a thread the app started): English, never a crash
        return None


def browser_language() -> str:
    """The app's language nearest to the browser's, English when the browser's is not one of them."""
    try:
        tag = st.context.locale
    except (AttributeError, RuntimeError):
        tag = None
    found = match(tag)
    return found.code if found is not None else SOURCE


def apply_language() -> str:
    """Settle this run's language (link, then picker, then browser) and return its code."""
    set_language_source(session_language)
    link = st.query_params.get(LANG_PARAM)
    refused = None
    if link is not None and link != st.session_state.get(_LINKED):
        st.session_state[_LINKED] = link
        linked = match(link)
        if linked is not None:
            st.session_state[LANGUAGE] = linked.code
        else:  # a link in a language the app does not speak: said once (below), taken out of the address
            del st.query_params[LANG_PARAM]
            refused, link = link, None
    if st.session_state.get(LANGUAGE) not in {lang.code for lang in LANGUAGES}:
        st.session_state[LANGUAGE] = browser_language()
    code = st.session_state[LANGUAGE]
    if link is None and code != browser_language():  # a page change dropped the address's lang=: put it back
        st.session_state[_LINKED] = code
        st.query_params[LANG_PARAM] = code
    if refused is not None:  # in the language the page opens in
        st.toast(_("The link asks for the language “{code}”, which this app does not have; it speaks {names}.")
                 .format(code=_shown_code(refused), names=", ".join(lang.name for lang in LANGUAGES)), icon="🌐")
    if st.session_state.get(_SHOWN, code) != code:
        _resend_choices()
    st.session_state[_SHOWN] = code
    return code


def _resend_choices() -> None:
    """Send every choice on the page to the browser again, in its new language: a radio or select box keeps the
    label of its option in the browser, and a label the browser cannot find among the translated ones shows as no
    choice at all, then falls back to the default at the next click (``ui.common.st_internals``)."""
    for key in labelled_widget_keys():
        if key != LANGUAGE and key in st.session_state:
            st.session_state[key] = st.session_state[key]  # a value set this run is sent with its new label


def _shown_code(text: str) -> str:
    """A link's language text as a notice may quote it: letters, digits and dashes only (never markup), short."""
    kept = re.sub(r"[^\w-]", "", text)
    return kept if len(kept) <= 20 else kept[:19] + "…"


def _picked() -> None:
    """Keep a picked language in the address (a reload keeps it), unless it is simply the browser's."""
    code = st.session_state[LANGUAGE]
    st.session_state[_LINKED] = code
    if code == browser_language() and LANG_PARAM not in st.query_params:
        return
    st.query_params[LANG_PARAM] = code


def language_picker() -> None:
    """The sidebar's language picker: each language in its own name."""
    st.selectbox(
        "🌐 " + _("Language"),
        [lang.code for lang in LANGUAGES],
        key=LANGUAGE,
        format_func=lambda code: get(code).name,
        on_change=_picked,
        help=_("The language of every page. Links you copy from the app open in it."),
    )


def mark_page_language() -> None:
    """Say the session's language on the page itself (``<html lang>``): screen readers then read German as
    German, and the browser draws Chinese characters in their Simplified forms rather than the Japanese ones a
    CJK font shows by default. Drawn in the sidebar, where its empty box takes no room in the page."""
    tag = get(session_language() or SOURCE).code
    script = f"<script>document.documentElement.lang = {json.dumps(tag)};</script>"
    st.html(script, unsafe_allow_javascript=True, width="content")


def link_language() -> dict[str, str]:
    """The ``lang=`` a link made now carries: the session's language, so a class opens it in the same one."""
    return {LANG_PARAM: get(session_language() or SOURCE).code}
