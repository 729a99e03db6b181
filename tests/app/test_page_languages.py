"""Every page in every language: it opens without an error, its heading is the language's, and no text it shows
is an English message that the language's catalogue translates differently."""

from __future__ import annotations

import functools

import pytest
from babel.messages.pofile import read_po

from explorer.i18n import LANGUAGES, SOURCE, _, get, using_language
from explorer.i18n.catalogs import catalogue_path
from tests.app.conftest import app_at, assert_no_exception
from ui.pages import PAGES

TRANSLATIONS = [lang.code for lang in LANGUAGES if lang.code != SOURCE]
_TEXTS = ("title", "header", "subheader", "caption", "markdown", "info", "warning", "error", "success")  # read: .value
_LABELLED = ("button", "selectbox", "radio", "slider", "select_slider", "checkbox", "toggle", "text_input", "text_area",
             "number_input", "multiselect", "expander", "tabs", "metric")  # read: .label (a widget's value is data)


@functools.cache
def english_left(code: str) -> frozenset[str]:
    """The English messages the catalogue of ``code`` translates into something else."""
    with catalogue_path(get(code).locale).open("rb") as po:
        catalogue = read_po(po)
    return frozenset(m.id for m in catalogue if isinstance(m.id, str) and m.id and m.string and m.string != m.id)


INSIDE_CHARS = 24  # an English message this long, without fields, is looked for inside longer texts too


@functools.cache
def long_english(code: str) -> tuple[str, ...]:
    """The messages of :func:`english_left` long enough to be looked for inside another text."""
    return tuple(m for m in english_left(code) if len(m) >= INSIDE_CHARS and "{" not in m)


def shown_texts(at) -> list[str]:
    """Every text and label of the page's elements, main area and sidebar."""
    texts = [element.value for kind in _TEXTS for element in at.get(kind)]
    texts += [element.label for kind in _LABELLED for element in at.get(kind)]
    return [text.strip() for text in texts if isinstance(text, str) and text.strip()]


@pytest.mark.parametrize("code", TRANSLATIONS)
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_the_page_speaks_the_language_of_its_link(page, code):
    if not catalogue_path(get(code).locale).is_file():
        pytest.fail(f"no catalogue for {code}: docs/translating.md says how to make one")
    at = app_at(page.path, query={"lang": code})
    assert_no_exception(at)
    with using_language(code):
        title = _(page.title)
    assert title != page.title
    headings = [t.value for t in at.title] + [h.value for h in at.header]
    if not page.headline:  # Home's heading is the app's name, the same in every language
        assert any(title in heading for heading in headings), f"{page.name} in {code}: {title!r} not in {headings}"
    texts = shown_texts(at)
    english = {text for text in texts if text in english_left(code)}
    english |= {m for m in long_english(code) if any(m in text for text in texts)}  # inside a row or a menu line
    assert not english, f"{page.name} in {code} still shows English: {sorted(english)[:10]}"


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_english_stays_the_source(page):
    at = app_at(page.path, query={"lang": "en"})
    assert_no_exception(at)
    headings = [t.value for t in at.title] + [h.value for h in at.header]
    assert any((page.headline or page.title) in heading for heading in headings)
