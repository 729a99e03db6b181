"""The translation layer: languages from tags, the active language, catalogues, plurals and numbers."""

from __future__ import annotations

import threading

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import write_po

from explorer import i18n
from explorer.i18n import _, catalogs, match, ngettext, num, percent, using_language


@pytest.mark.parametrize(
    ("tag", "code"),
    [("de", "de"), ("de-AT", "de"), ("DE_ch", "de"), ("es-419", "es"), ("es-ES", "es"), ("zh", "zh-CN"),
     ("zh-Hans-CN", "zh-CN"), ("zh-SG", "zh-CN"), ("en-GB", "en"), ("zh-TW", None), ("zh-Hant", None),
     ("fr-FR", None), ("", None), (None, None)],
)
def test_a_browser_tag_picks_the_nearest_language(tag, code):
    found = match(tag)
    assert (found.code if found else None) == code


def test_unknown_codes_are_refused_with_the_list():
    with pytest.raises(KeyError, match="de, es, zh-CN"):
        i18n.get("fr")


def test_english_is_the_default_and_a_context_overrides_it_in_its_own_thread_only():
    assert i18n.language() == "en"
    seen = []
    with using_language("de"):
        worker = threading.Thread(target=lambda: seen.append(i18n.language()))
        worker.start()
        worker.join()
        assert i18n.language() == "de"
    assert seen == ["en"] and i18n.language() == "en"


def test_a_registered_source_speaks_for_the_session_and_a_context_wins_over_it():
    i18n.set_language_source(lambda: "es")
    try:
        assert i18n.language() == "es"
        with using_language("de"):
            assert i18n.language() == "de"
    finally:
        i18n.set_language_source(None)
    assert i18n.language() == "en"


@pytest.mark.parametrize(
    ("code", "number", "share"),
    [("en", "1,234.5", "25.7%"), ("de", "1.234,5", "25,7\u00a0%"), ("es", "1.234,5", "25,7\u00a0%"),
     ("zh-CN", "1,234.5", "25.7%")],
)
def test_numbers_are_written_as_the_language_writes_them(code, number, share):
    with using_language(code):
        assert num(1234.5, 1) == number
        assert percent(0.2567, 1) == share
        assert num(3) == "3" and num(2.0, 2).replace(",", ".") == "2.00"


def test_negative_decimals_are_refused():
    with pytest.raises(ValueError):
        num(1.0, -1)
    with pytest.raises(ValueError):
        percent(0.5, -2)


@pytest.fixture
def tiny_catalogues(tmp_path, monkeypatch):
    """A German catalogue with one plain, one plural and one fuzzy entry, in a folder of its own."""
    catalogue = Catalog(locale="de")
    catalogue.add("Start", "Los")
    catalogue.add(("{n} head", "{n} heads"), ("{n} Kopf", "{n} Köpfe"))
    catalogue.add("Unchecked", "Ungeprüft", flags=["fuzzy"])
    folder = tmp_path / "de" / "LC_MESSAGES"
    folder.mkdir(parents=True)
    with (folder / "messages.po").open("wb") as po:
        write_po(po, catalogue)
    monkeypatch.setattr(catalogs, "LOCALES", tmp_path)
    catalogs.translations.cache_clear()
    yield
    catalogs.translations.cache_clear()


def test_a_catalogue_translates_counts_and_skips_fuzzy_entries(tiny_catalogues):
    with using_language("de"):
        assert _("Start") == "Los"
        assert ngettext("{n} head", "{n} heads", 1).format(n=1) == "1 Kopf"
        assert ngettext("{n} head", "{n} heads", 4).format(n=4) == "4 Köpfe"
        assert _("Unchecked") == "Unchecked"  # fuzzy: the English source, never an unchecked guess
        assert _("Not in the catalogue") == "Not in the catalogue"
    with using_language("es"):  # no Spanish catalogue in this folder: English
        assert _("Start") == "Start"
    assert _("Start") == "Start"


@pytest.mark.parametrize(("code", "marks"), [("en", (".", ",")), ("de", (",", ".")), ("es", (",", ".")),
                                             ("zh-CN", (".", ","))])
def test_charts_get_the_languages_separators(code, marks):
    with using_language(code):
        assert i18n.separators() == marks
