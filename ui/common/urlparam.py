"""One setting that can travel in a page's URL: its checks, and its value as query-parameter text and back.

:class:`UrlParam` knows nothing of session state or the address bar (``urlstate.py`` binds it to both), so the
way a link's text becomes a value, or is refused with a reason a notice can quote, is one small, testable thing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from explorer.i18n import _, num


@dataclass(frozen=True)
class UrlParam:
    """One setting that can travel in the URL."""

    key: str  # widget / session-state key
    default: Any  # value when the URL has none or an invalid one; its type decides how the text is parsed
    choices: tuple | None = None  # allowed values (of each item, for a list setting), if it is a choice
    lo: float | None = None  # smallest allowed number
    hi: float | None = None  # largest allowed number
    max_chars: int = 300  # longest allowed text
    name: str | None = None  # query-parameter name, when it should differ from ``key``

    @property
    def query_name(self) -> str:
        """The name of this setting in the URL."""
        return self.name or self.key

    def parse(self, raw: str) -> Any:
        """Convert the URL text to a value, raising ``ValueError`` if it is not allowed.

        A list or tuple default makes a list setting, written as comma-separated items (``heads=0,2``).
        """
        if isinstance(self.default, list | tuple):
            items = [item for item in raw.split(",") if item != ""]
            return type(self.default)(self._parse_one(item, self._item_sample()) for item in items)
        return self._parse_one(raw, self.default)

    def _item_sample(self) -> Any:
        for source in (self.choices, self.default):
            if source:
                return next(iter(source))
        return ""

    def _parse_one(self, raw: str, sample: Any) -> Any:
        value = _convert(raw, sample, self.max_chars)
        if self.choices is not None and value not in self.choices:
            shown = ", ".join(str(c) for c in self.choices if c != "")  # an empty choice (none picked) goes unsaid
            raise ValueError(_("must be one of {choices}").format(choices=shown))
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        too_low = numeric and self.lo is not None and value < self.lo
        if too_low or (numeric and self.hi is not None and value > self.hi):
            raise ValueError(_("must be between {low} and {high}").format(low=_number(self.lo), high=_number(self.hi)))
        return value

    def format(self, value: Any) -> str:
        """The URL text of ``value`` (``None``, a choice widget with nothing picked, is the empty text)."""
        if value is None:
            return ""
        if isinstance(value, list | tuple):
            return ",".join(self.format(v) for v in value)
        if value is None:  # a choice left empty (a segmented control with nothing picked): no text
            return ""
        return str(value).lower() if isinstance(value, bool) else str(value)

    def is_default(self, value: Any) -> bool:
        """Whether ``value`` equals the default (as URL text, so ``[1, 2]`` equals ``(1, 2)``)."""
        return self.format(value) == self.format(self.default)


def _number(value: float | None) -> str:
    if value is None:
        return _("any")
    if float(value).is_integer():
        return num(value)  # 2147483647 reads "2,147,483,647" in English, not "2.14748e+09"
    text = f"{value:g}"
    return text if "e" in text else num(value)  # 1e-05 stays as it is; 0.5 reads "0,5" in German


def _convert(raw: str, sample: Any, max_chars: int) -> Any:
    """Parse ``raw`` as the type of ``sample``."""
    if isinstance(sample, bool):
        if raw.lower() not in ("true", "false", "1", "0"):
            raise ValueError(_("must be true or false"))
        return raw.lower() in ("true", "1")
    if isinstance(sample, int):
        try:
            return int(raw)
        except ValueError:
            raise ValueError(_("must be a whole number")) from None
    if isinstance(sample, float):
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(_("must be a number")) from None
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(_("must be a finite number"))
        return value
    if len(raw) > max_chars:
        raise ValueError(_("is longer than {n} characters").format(n=num(max_chars)))
    return raw
