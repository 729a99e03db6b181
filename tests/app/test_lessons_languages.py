"""The Lessons page in German and in Chinese: every lesson's title and goal in that language, no English left.

Reads the catalogues (``locales/<locale>/LC_MESSAGES/messages.po``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from babel.messages.pofile import read_po
from streamlit.testing.v1 import AppTest

from explorer.i18n import _, get, using_language
from explorer.i18n.catalogs import catalogue_path
from explorer.lessons import not_explanation as ne
from tests.app.conftest import app_at, assert_no_exception
from ui.lessons import not_explanation as ne_view
from ui.lessons.frame import LESSON
from ui.lessons.texts import LESSONS

PAGE = "pages/lessons.py"
LANGUAGES = ("de", "zh-CN")
# the lesson model's own words: English tokens on purpose, in every language (one is also a msgid, "key")
MODEL_WORDS = {*ne.WORDS, *ne_view.LABELS, *ne_view.CHANGE_LABELS}


def _english_msgids(code: str) -> set[str]:
    """The English msgids whose translation into ``code`` differs from them: none of these may stay on screen."""
    with catalogue_path(get(code).locale).open("rb") as po:
        catalogue = read_po(po, locale=get(code).locale)
    found = set()
    for message in catalogue:
        if not message.id or message.fuzzy:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if all(strings):
            found.update(i for i in ids if i not in strings)
    return found


def _texts(node) -> Iterator[str]:
    """Every text a person reads in ``node`` and below: values, labels, options and helps of its elements."""
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            yield from _texts(child)
        return
    try:
        options = getattr(node, "options", None)
    except Exception:  # noqa: BLE001 — an element without options
        options = None
    # a choice widget's value is the option's value, not what it shows (its options are shown, formatted)
    for name in ("label", "help", "body") if options else ("value", "label", "help", "body"):
        try:
            text = getattr(node, name, None)
        except Exception:  # noqa: BLE001 — an element without that field (or a widget without a value)
            continue
        if isinstance(text, str) and text:
            yield text
    for option in options or ():
        if isinstance(option, str):
            yield option


def _translated(code: str, message: str) -> str:
    with using_language(code):
        return _(message)


@pytest.mark.parametrize("code", LANGUAGES)
def test_every_lesson_speaks_the_language(code):
    english = _english_msgids(code)
    at: AppTest = app_at(PAGE, query={"lang": code})
    assert_no_exception(at)
    for lesson in LESSONS:
        # AppTest formats the picked value with the widget's format_func here, outside the session's script run,
        # where the session's language is unknown: it must be the language the options were drawn in
        with using_language(code):
            at.segmented_control(key=LESSON).set_value(lesson.key).run()
        assert_no_exception(at)
        title, goal = _translated(code, lesson.title), _translated(code, lesson.goal)
        assert title != lesson.title and goal != lesson.goal, f"{lesson.key}: no {code} translation"
        assert at.header[0].value == f"{lesson.icon} {title}"
        assert any(goal in m.value for m in at.markdown), f"{lesson.key}: the goal is not shown in {code}"
        left = sorted({t for t in _texts(at.main) if t in english and t not in MODEL_WORDS})
        assert not left, f"{lesson.key} shows English in {code}: {left}"
