"""The language picker: each language in its own name; a link's ``lang=``, the browser's language and a pick
decide the session's language, and links made in a language carry it (the catalogues themselves are not needed)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

from streamlit.testing.v1 import AppTest

from explorer.i18n import using_language
from tests.app.conftest import APP, DEFAULT_TIMEOUT, app_at, assert_no_exception
from ui.common.language import LANG_PARAM, LANGUAGE


def _fresh(*, locale: str | None = None, query: dict[str, str] | None = None) -> AppTest:
    """The app's Home page in a new session whose browser says ``locale`` and whose address carries ``query``."""
    at = AppTest.from_file(APP, default_timeout=DEFAULT_TIMEOUT)
    if locale is not None:
        at.context = {"locale": locale}
    at.query_params.update(query or {})
    at.run()
    assert_no_exception(at)
    return at


def _links(at: AppTest) -> list[str]:
    """The share links the page shows (the "Copy link to this view" popover's boxes)."""
    return [c.value for c in at.code if c.value.startswith("http")]


def test_the_picker_names_every_language_in_its_own_name():
    at = app_at()
    assert_no_exception(at)
    picker = at.sidebar.selectbox(key=LANGUAGE)
    assert picker.options == ["English", "Deutsch", "Español", "简体中文"]
    assert picker.value == "en"


def test_a_links_lang_picks_the_language():
    at = _fresh(query={LANG_PARAM: "de"})
    assert at.session_state[LANGUAGE] == "de"
    assert at.sidebar.selectbox(key=LANGUAGE).value == "de"
    assert not [i.value for i in at.info if "lang=" in i.value]  # every page knows lang=: no notice about it


def test_the_browsers_language_is_the_default():
    assert _fresh(locale="de-AT").session_state[LANGUAGE] == "de"  # German of Austria: German
    assert _fresh(locale="zh-Hans-CN").session_state[LANGUAGE] == "zh-CN"
    assert _fresh(locale="fr-FR").session_state[LANGUAGE] == "en"  # a language the app does not speak: English


def test_a_link_in_a_language_the_app_does_not_speak_says_so_in_the_browsers_language_and_leaves_the_address():
    at = _fresh(locale="de-DE", query={LANG_PARAM: "xx**bold**"})
    assert at.session_state[LANGUAGE] == "de"
    said = [t.value for t in at.toast]
    assert len(said) == 1 and "„xxbold“" in said[0] and "English, Deutsch, Español, 简体中文" in said[0], said
    assert at.query_params.get(LANG_PARAM) in (None, [], ["de"])  # the unknown code is gone from the address
    english = _fresh(query={LANG_PARAM: "fr"})
    assert [t.value for t in english.toast] == ["The link asks for the language “fr”, which this app does not have; "
                                                "it speaks English, Deutsch, Español, 简体中文."]
    english.run()
    assert not english.toast  # said once


def test_a_link_wins_over_the_browser():
    assert _fresh(locale="de-DE", query={LANG_PARAM: "es"}).session_state[LANGUAGE] == "es"


def test_picking_a_language_puts_it_in_the_address():
    at = _fresh()
    at.sidebar.selectbox(key=LANGUAGE).set_value("es").run()
    assert_no_exception(at)
    assert at.session_state[LANGUAGE] == "es"
    assert at.query_params[LANG_PARAM] == "es"


def test_a_share_link_made_in_german_carries_it():
    at = _fresh(query={LANG_PARAM: "de"})
    links = _links(at)
    assert links, "the Home page shows no share link"
    for link in links:
        assert parse_qs(urlsplit(link).query)[LANG_PARAM] == ["de"], link


def test_a_picked_language_comes_back_into_an_address_that_lost_it():
    at = _fresh(locale="en-US")
    at.sidebar.selectbox(key=LANGUAGE).set_value("de").run()
    del at.query_params[LANG_PARAM]  # another page opened: its address starts without lang=
    with using_language("de"):  # AppTest formats the options of the widgets it sends back in the test's thread
        at.run()
    assert_no_exception(at)
    assert at.session_state[LANGUAGE] == "de" and at.query_params[LANG_PARAM] == "de"


def test_the_browsers_own_language_needs_no_lang_in_the_address():
    at = _fresh(locale="de-DE")
    assert at.session_state[LANGUAGE] == "de" and LANG_PARAM not in at.query_params


def _page_marks(at: AppTest) -> list[str]:
    """The ``<html lang>`` the sidebar's scripts set."""
    return [el.proto.body for el in at.sidebar.get("html") if "documentElement.lang" in el.proto.body]


def _mark(code: str) -> list[str]:
    return [f'<script>document.documentElement.lang = "{code}";</script>']


def test_the_page_says_its_language_to_screen_readers_and_fonts():
    assert _page_marks(_fresh(query={LANG_PARAM: "zh-CN"})) == _mark("zh-CN")
    at = _fresh(locale="de-DE")
    assert _page_marks(at) == _mark("de")
    with using_language("de"):
        at.sidebar.selectbox(key=LANGUAGE).set_value("en").run()
    assert _page_marks(at) == _mark("en")
