"""A sentence for the user made where no language is known (a trainer, a background thread, a cached result).

A :class:`Message` is the English sentence itself (a ``str``: logs, tests and stores see English), and it keeps its
template (marked with ``N_``) and its values apart, so that the page that shows it can say it in the reader's
language: ``localized(message)``. A value may be a number (written as the language writes numbers, see
:class:`Num`), a name, or another message (translated too).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from explorer.i18n.active import using_language
from explorer.i18n.catalogs import _, ngettext
from explorer.i18n.numbers import num


@dataclass(frozen=True)
class Num:
    """A number inside a message: ``digits`` decimals (``None``: as many as it has, up to three)."""

    value: float
    digits: int | None = None

    def text(self) -> str:
        return num(self.value, self.digits)


class Message(str):
    """The English text of ``template`` filled with ``values``; :meth:`text` says it in the active language.

    ``plural`` (with the name of the value that counts, ``count``) makes it an ``ngettext`` message.
    """

    template: str
    values: Mapping[str, Any]
    plural: str
    count: str

    def __new__(
        cls, template: str, values: Mapping[str, Any] | None = None, *, plural: str = "", count: str = ""
    ) -> Message:
        values = dict(values or {})
        with using_language("en"):
            english = _fill(template, plural, count, values)
        message = super().__new__(cls, english)
        message.template, message.values, message.plural, message.count = template, values, plural, count
        return message

    def text(self) -> str:
        """The message in the active language."""
        return _fill(self.template, self.plural, self.count, self.values)

    def __reduce__(self) -> tuple:  # pickled (a trainer process) as what it is, not as a plain str
        return (_rebuild, (self.template, self.values, self.plural, self.count))


def _rebuild(template: str, values: Mapping[str, Any], plural: str, count: str) -> Message:
    return Message(template, values, plural=plural, count=count)


def _shown(value: Any) -> str:
    if isinstance(value, Message | Num):
        return value.text()
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float):
        return num(value)
    return str(value)


def _fill(template: str, plural: str, count: str, values: Mapping[str, Any]) -> str:
    if not template:  # gettext's "" is the catalogue's header
        return ""
    if plural:
        n = values[count]
        words = ngettext(template, plural, int(n.value if isinstance(n, Num) else n))
    else:
        words = _(template)
    return words.format(**{name: _shown(value) for name, value in values.items()})


def message_of(err: BaseException) -> str:
    """What ``err`` says, keeping a :class:`Message` (its only argument) as it is, to be shown later."""
    return err.args[0] if len(err.args) == 1 and isinstance(err.args[0], str) else str(err)


def localized(value: Any) -> str:
    """What a page shows for ``value``: a :class:`Message` (or an exception made with one) in the active language;
    any other text looked up in the catalogue as it is (an English sentence marked with ``N_`` that came through a
    store or a process as plain text), else itself; nothing as ""."""
    if isinstance(value, BaseException):
        value = message_of(value)
    if isinstance(value, Message):
        return value.text()
    if isinstance(value, str):
        return _(value) if value else value
    return "" if value is None else str(value)
