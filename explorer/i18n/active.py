"""Which language is active: a context's own choice, else the app's registered source, else English."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from explorer.i18n.languages import SOURCE, get

_chosen: ContextVar[str | None] = ContextVar("te_language", default=None)
_source: list[Callable[[], str | None]] = []  # at most one: the app's "what did this session choose?"


def set_language_source(source: Callable[[], str | None] | None) -> None:
    """Register (or, with None, remove) the function that says the current session's language code.

    The app registers one that reads the session's choice; it must return None, not raise, where it has no
    session (a background thread), so that such code speaks English.
    """
    _source.clear()
    if source is not None:
        _source.append(source)


def language() -> str:
    """The active language's code ("en", "de", "es", "zh-CN")."""
    code = _chosen.get()
    if code is None and _source:
        code = _source[0]()
    return code or SOURCE


@contextmanager
def using_language(code: str) -> Iterator[None]:
    """Speak ``code`` inside the block, in this thread or task only (tests, exports made for another language)."""
    token = _chosen.set(get(code).code)
    try:
        yield
    finally:
        _chosen.reset(token)
