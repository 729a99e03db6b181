"""The languages the app speaks: one registry entry each, and how a browser's language tag picks one."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Language:
    """One language of the app."""

    code: str  # the tag in links and settings (BCP 47: "de", "zh-CN")
    locale: str  # Babel's locale id, also the catalogue's folder under locales/ ("de", "zh_CN")
    name: str  # the language's own name, as the picker shows it ("Deutsch")
    english_name: str  # its name in English, for docs and tests

    def __post_init__(self) -> None:
        if not self.code or not self.locale or not self.name:
            raise ValueError(f"a language needs a code, a locale and a name, got {self!r}")


SOURCE = "en"  # the language the code is written in; its strings need no catalogue

LANGUAGES: tuple[Language, ...] = (
    Language(code="en", locale="en", name="English", english_name="English"),
    Language(code="de", locale="de", name="Deutsch", english_name="German"),
    Language(code="es", locale="es", name="Español", english_name="Spanish"),
    Language(code="zh-CN", locale="zh_CN", name="简体中文", english_name="Simplified Chinese"),
)
_BY_CODE = {lang.code.lower(): lang for lang in LANGUAGES}


def get(code: str) -> Language:
    """The language of ``code`` (case-insensitive); ``KeyError`` names the languages there are."""
    try:
        return _BY_CODE[code.strip().lower()]
    except KeyError:
        known = ", ".join(lang.code for lang in LANGUAGES)
        raise KeyError(f"no language {code!r}; the app speaks {known}") from None


def match(tag: str | None) -> Language | None:
    """The app's language for a browser's or a link's tag ("de-AT" → German, "zh-Hans-CN" → Chinese), or None.

    An exact tag wins; otherwise the primary subtag decides, and any Chinese tag that is not Traditional
    (Hant, TW, HK, MO) reads as Simplified Chinese, the only Chinese the app has.
    """
    if not tag or not isinstance(tag, str):
        return None
    parts = tag.strip().replace("_", "-").lower().split("-")
    exact = _BY_CODE.get("-".join(parts))
    if exact is not None:
        return exact
    if parts[0] == "zh":
        traditional = {"hant", "tw", "hk", "mo"}
        return None if traditional & set(parts[1:]) else _BY_CODE["zh-cn"]
    return _BY_CODE.get(parts[0])
