"""Numbers as the active language writes them, with Babel (1,234.5 in English, 1.234,5 in German)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from babel import Locale
from babel.numbers import format_decimal, format_percent, get_decimal_symbol, get_group_symbol

from explorer.i18n.active import language
from explorer.i18n.languages import get


def _pattern(digits: int | None, group: bool) -> str | None:
    """A Babel pattern with exactly ``digits`` decimals (None: the locale's own, up to three)."""
    if digits is None:
        return None if group else "0.###"
    if digits < 0:
        raise ValueError(f"digits must be 0 or more, got {digits}")
    whole = "#,##0" if group else "0"
    return whole + ("." + "0" * digits if digits else "")


def num(value: float, digits: int | None = None, *, group: bool = True) -> str:
    """``value`` in the active language's format; ``digits`` fixes the decimals, ``group`` the thousands separator.

    ``num(1234.5, 1)`` is "1,234.5" in English, "1.234,5" in German and Spanish-style "1234,5" where the language
    groups only from five digits. Non-finite values read as the language writes them (∞, NaN).
    """
    locale = get(language()).locale
    return format_decimal(value, format=_pattern(digits, group), locale=locale, decimal_quantization=True)


def percent(share: float, digits: int = 0) -> str:
    """``share`` (0.25) as a percentage in the active language ("25%", "25 %")."""
    if digits < 0:
        raise ValueError(f"digits must be 0 or more, got {digits}")
    locale = get(language()).locale
    pattern = Locale.parse(locale).percent_formats[None].pattern  # the language's own: "#,##0%", "#,##0 %"
    if digits:  # the decimals go after the last whole digit, before any space and the sign
        pattern = re.sub(r"0(?=[^0-9]*%$)", "0." + "0" * digits, pattern, count=1)
    return format_percent(share, format=pattern, locale=locale, decimal_quantization=True)


def separators() -> tuple[str, str]:
    """The active language's decimal and thousands separators ("." and "," in English, "," and "." in German),
    for charts that format their own axis numbers."""
    locale = get(language()).locale
    return get_decimal_symbol(locale), get_group_symbol(locale)


def vector(values: Sequence[float] | Sequence[Sequence[float]], digits: int) -> str:
    """A vector "(0.5403, 0.8415)" or a matrix "[[0.540, 0.841], [-0.841, 0.540]]" (rows of ``values``) with
    ``digits`` decimals; where the decimal sign is a comma the items are parted with semicolons ("(0,5403; 0,8415)").
    """
    part = "; " if separators()[0] == "," else ", "
    if values and isinstance(values[0], Sequence):
        rows = ("[" + part.join(num(v, digits, group=False) for v in row) + "]" for row in values)
        return "[" + part.join(rows) + "]"
    return "(" + part.join(num(v, digits, group=False) for v in values) + ")"
