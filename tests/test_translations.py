"""The catalogues keep up with the code: every string a person reads is marked, every language translates every
message (none missing, none fuzzy) with the source's placeholders, and nothing is translated before a session has
a language."""

from __future__ import annotations

import re

import pytest
from babel.messages.pofile import read_po

from explorer.i18n import LANGUAGES, SOURCE
from explorer.i18n.catalogs import LOCALES, catalogue_path
from tests import i18n_scan

PLACEHOLDER = re.compile(r"\{[^{}]*\}")
TRANSLATIONS = [lang for lang in LANGUAGES if lang.code != SOURCE]


@pytest.fixture(scope="module")
def marked():
    return i18n_scan.messages()


def _catalogue(locale: str):
    path = catalogue_path(locale)
    assert path.is_file(), f"{path.relative_to(LOCALES.parent)} is missing: docs/translating.md says how to make it"
    with path.open("rb") as po:
        return read_po(po, locale=locale)


def test_every_string_a_person_reads_is_marked_for_translation():
    found = i18n_scan.unwrapped()
    assert not found, "wrap these in _() (or N_() where they are defined and _() where shown):\n" + "\n".join(
        map(str, found[:40])
    )


def test_the_scan_finds_a_bare_label_a_bare_message_constant_and_lets_wrapped_ones_pass():
    source = (
        'import streamlit as st\n'
        'WAIT_MESSAGE = "Please wait a moment"\n'
        'DONE_MESSAGE = N_("All done now")\n'
        'st.button("Go now")\n'
        'col.caption(f"Trained {n} steps")\n'
        'st.markdown("<style>.x {color: red}</style>")\n'
        'st.button(_("Go now"))\n'
        'st.caption(_("Trained {n} steps").format(n=n))\n'
        'st.selectbox(_("Pick"), ["a b", "c d"], help=_("A help text"))\n'
        'st.slider(_("Heads"), help="Not wrapped help")\n'
    )
    found = [u.text for u in i18n_scan.unwrapped_in(source, "x.py")]
    assert sorted(found) == sorted(["Please wait a moment", "Go now", "Trained  steps", "Not wrapped help"])


def test_nothing_is_translated_at_import_time():
    found = []
    for path in i18n_scan.python_files():
        if path.name == "app.py" or path.parent.name == "pages":
            continue  # scripts: they run on every rerun, inside the session, never at import
        found += i18n_scan.translated_at_import(path.read_text(encoding="utf-8"), str(path))
    assert not found, "_() runs before any session has a language here (use N_ and translate where shown):\n" + (
        "\n".join(found)
    )
    sample = 'TITLE = _("Hello")\ndef f(x=_("Hi")):\n    return _("Fine")\n'
    assert len(list(i18n_scan.translated_at_import(sample, "x.py"))) == 2


def test_no_file_that_translates_uses_underscore_as_a_variable():
    found = []
    for path in i18n_scan.python_files():
        found += i18n_scan.underscore_assigned(path.read_text(encoding="utf-8"), str(path))
    assert not found, "`_` is assigned where it is also the translator:\n" + "\n".join(found)


def test_the_template_holds_exactly_the_marked_messages(marked):
    with (LOCALES / "messages.pot").open("rb") as pot:
        template = {(m.context, m.id if isinstance(m.id, str) else m.id[0]) for m in read_po(pot) if m.id}
    missing, stale = set(marked) - template, template - set(marked)
    assert not missing and not stale, (
        f"locales/messages.pot is out of date ({len(missing)} new, {len(stale)} gone): run the extract and update "
        f"commands of docs/translating.md. New: {sorted(m for _c, m in missing)[:5]}"
    )


@pytest.mark.parametrize("language", TRANSLATIONS, ids=lambda lang: lang.code)
def test_each_catalogue_translates_every_message_with_the_same_placeholders(language, marked):
    catalogue = _catalogue(language.locale)
    problems = []
    for (context, msgid), (message, where) in marked.items():
        entry = catalogue.get(msgid, context=context)
        if entry is None:
            problems.append(f"missing: {msgid!r} ({where})")
            continue
        if entry.fuzzy:
            problems.append(f"fuzzy: {msgid!r}")
        sources = message if isinstance(message, tuple) else (message,)
        strings = entry.string if isinstance(entry.string, tuple) else (entry.string,)
        if not all(strings):
            problems.append(f"untranslated: {msgid!r} ({where})")
            continue
        wanted = set().union(*(PLACEHOLDER.findall(s) for s in sources))
        for string in strings:
            if set(PLACEHOLDER.findall(string)) != wanted:
                problems.append(f"placeholders {sorted(PLACEHOLDER.findall(string))} ≠ {sorted(wanted)}: {msgid!r}")
    assert not problems, f"{language.english_name}: {len(problems)} problems:\n" + "\n".join(problems[:40])


@pytest.mark.parametrize("language", TRANSLATIONS, ids=lambda lang: lang.code)
def test_each_catalogue_counts_as_its_language_does(language):
    catalogue = _catalogue(language.locale)
    assert catalogue.num_plurals == (1 if language.locale.startswith("zh") else 2)
