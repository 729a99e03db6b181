"""The app in the class's own language: gettext catalogues, the active language, numbers in its format.

Every string a person reads goes through :func:`_` (or :func:`ngettext` when it counts something); a string that
must be written down before a language is known (a module constant, a registry entry) is marked with :func:`N_`
and translated where it is shown, ``_(TITLE)``. Placeholders are named and filled after translation, so that a
translator can move them: ``_("Step {step} of {steps}").format(step=num(s), steps=num(n))``. Numbers go through
:func:`num` and :func:`percent`, which write them as the language does (1,234.5 · 1.234,5 · 1 234,5).

The active language is the one :func:`using_language` set in this context, else the one the registered source
says (the app registers the session's choice), else English. This package imports Babel and nothing of the app.
"""

from explorer.i18n.active import language, set_language_source, using_language
from explorer.i18n.catalogs import N_, _, ngettext, pgettext
from explorer.i18n.languages import LANGUAGES, SOURCE, Language, get, match
from explorer.i18n.numbers import num, percent, separators, vector

__all__ = [
    "LANGUAGES",
    "SOURCE",
    "Language",
    "N_",
    "_",
    "get",
    "language",
    "match",
    "ngettext",
    "num",
    "percent",
    "separators",
    "pgettext",
    "set_language_source",
    "using_language",
    "vector",
]
