"""The model library's English remarks on sample predictions, in the page's language.

The library (``transformer_core.tasks``) knows no languages: a task's samples say what is wrong in English
("2 of 5 digits wrong, 1 extra digit", "90% sure", "'cat' is not a word of the grammar"), and replays and watchers
receive those same words. Each remark the tasks write has one pattern here, read back into its numbers and words
and said again through the catalogue; a text no pattern knows is shown as it is. ``tests/app/test_remarks.py``
asks every task for its samples and fails on a remark that no pattern reads.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from explorer.i18n import N_, _, ngettext, num, percent

__all__ = ["remark_text", "sample_input_text"]

# Remarks that are whole sentences without numbers (the grammar task's verdicts), said through the catalogue
FIXED = (
    N_("a sentence of the grammar"),
    N_("the sentence does not end"),
    N_("no capital letter at the start"),
    N_("real words, but they break the grammar's rules"),
)
_DIGITS = re.compile(r"(?:(?P<wrong>\d+) of (?P<total>\d+) digits wrong)?(?:, )?(?:(?P<extra>\d+) extra digits?)?")


def _digits(match: re.Match) -> str:
    parts = []
    if match["wrong"] is not None:
        parts.append(_("{wrong} of {total} digits wrong").format(wrong=num(int(match["wrong"])),
                                                               total=num(int(match["total"]))))
    if match["extra"] is not None:
        extra = int(match["extra"])
        parts.append(ngettext("{n} extra digit", "{n} extra digits", extra).format(n=num(extra)))
    return ", ".join(parts)


def _error(match: re.Match) -> str:
    value = float(match[1])
    return _("error {error}").format(error=("−" if value < 0 else "+") + num(abs(value), 2))


def _letters(m: re.Match) -> str:
    return _("{wrong} of {total} letters wrong").format(wrong=num(int(m["wrong"])), total=num(int(m["total"])))


def _words(m: re.Match) -> str:
    return _("{real} of {words} words appear in the text").format(real=num(int(m["real"])), words=num(int(m["words"])))


def _unknown_word(m: re.Match) -> str:
    return _("“{word}” is not a word of the grammar").format(word=m["word"])


def _sure(m: re.Match) -> str:
    return _("{sure} sure").format(sure=percent(int(m["sure"]) / 100))


def _picture(m: re.Match) -> str:
    return _("picture {n} ({area} object pixels)").format(n=num(int(m["n"])), area=num(int(m["area"])))


# (pattern of the library's English, how the page says it): the first that matches the whole remark wins
PATTERNS: tuple[tuple[re.Pattern, Callable[[re.Match], str]], ...] = (
    (re.compile(r"(?P<wrong>\d+) of (?P<total>\d+) letters wrong"), _letters),
    (re.compile(r"(?P<real>\d+) of (?P<words>\d+) words appear in the text"), _words),
    (re.compile(r"'(?P<word>.+)' is not a word of the grammar"), _unknown_word),
    (re.compile(r"(?P<sure>\d+)% sure"), _sure),
    (re.compile(r"error ([+-]\d+(?:\.\d+)?)"), _error),
    (re.compile(r"picture (?P<n>\d+) \((?P<area>\d+) object pixels\)"), _picture),
)


def remark_text(remark: str) -> str:
    """``remark`` (a sample's English remark from the library) in the page's language; unknown text as it is."""
    if not remark:
        return remark
    if remark in FIXED:
        return _(remark)
    for pattern, say in PATTERNS:
        match = pattern.fullmatch(remark)
        if match is not None:
            return say(match)
    match = _DIGITS.fullmatch(remark)
    return _digits(match) if match is not None and (match["wrong"] or match["extra"]) else remark


def sample_input_text(text: str) -> str:
    """A sample's input column: the library describes a picture in words ("picture 1 (34 object pixels)"), which
    the page says in its language; any other input (digits, letters, text) is shown as it is."""
    return remark_text(text) if text.startswith("picture ") else text
