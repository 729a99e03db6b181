"""The gettext catalogues under ``locales/``: read with Babel, compiled in memory once per process.

A catalogue is ``locales/<locale>/LC_MESSAGES/messages.po``; there is no build step, since compiling all of them
takes a fraction of a second at first use. Fuzzy entries are left out, so an unchecked translation shows the
English source instead; a missing catalogue means English.
"""

from __future__ import annotations

import functools
import gettext
import io
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from explorer.i18n.active import language
from explorer.i18n.languages import SOURCE, get

LOCALES = Path(__file__).resolve().parents[2] / "locales"  # the catalogues, beside the app's code
DOMAIN = "messages"  # one domain: every string of the app


def catalogue_path(locale: str) -> Path:
    """Where the catalogue of Babel locale ``locale`` lives."""
    return LOCALES / locale / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def translations(code: str) -> gettext.NullTranslations:
    """The compiled catalogue of language ``code`` (read-only, shared by every session)."""
    if code == SOURCE:
        return gettext.NullTranslations()
    path = catalogue_path(get(code).locale)
    if not path.is_file():
        return gettext.NullTranslations()
    with path.open("rb") as po:
        catalogue = read_po(po, locale=get(code).locale)
    compiled = io.BytesIO()
    write_mo(compiled, catalogue, use_fuzzy=False)
    compiled.seek(0)
    return gettext.GNUTranslations(compiled)


def _(message: str) -> str:
    """``message`` in the active language (itself where no translation exists)."""
    return translations(language()).gettext(message)


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form of ``singular``/``plural`` that ``n`` takes in the active language (Chinese has one, German two)."""
    return translations(language()).ngettext(singular, plural, n)


def pgettext(context: str, message: str) -> str:
    """``message`` translated in ``context``, for one English word with two meanings ("Head" of a model, of a list)."""
    return translations(language()).pgettext(context, message)


def N_(message: str) -> str:
    """Mark ``message`` for translation and return it unchanged: it is translated where it is shown, ``_(message)``."""
    return message
