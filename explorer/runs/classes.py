"""A class link: one link (and one short code) per sharing owner, which follows the owner's runs until sharing stops.

Every run shared live has its own watch channel (:class:`~explorer.runs.channel.WatchChannel`), ended when the
owner starts another. A :class:`ClassLink` stands above them: its id is the ``?class=`` of one link handed out
once, and the run store keeps a pointer from that id to the owner's current channel (:meth:`ClassLink.follow`).
A student's page reads the pointer (:func:`class_channel`) and moves to the next channel by itself.

The short code is what a student types instead of scanning the link: :data:`CODE_CHARS` characters long, from an
alphabet without letters that read alike (no I, L, O, 0 or 1), kept in the store as a pointer to the class id.
Both come from :mod:`secrets`: the id carries 128 bits and cannot be guessed; a code's 31⁶ (about 9·10⁸) values
last only while the class is shared, and a code leads to the read-only watch view and nothing else. Neither is
made from, nor leads to, the owner's session or reload token.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from explorer.i18n import _
from explorer.runs.store import CHANNEL_TTL_S, RunStore
from explorer.runs.watch import WatchedRun, new_watcher_id

__all__ = [
    "CODE_ALPHABET",
    "CODE_CHARS",
    "ClassLink",
    "FollowedClass",
    "class_channel",
    "class_for_code",
    "normalise_code",
]

CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"  # no I, L, O, 0, 1: nothing a student can misread
CODE_CHARS = 6
RENEW_S = CHANNEL_TTL_S / 4  # the owner renews its pointers this often while sharing
_CLASS, _CODE = "class:", "code:"


def normalise_code(text: str) -> str:
    """A typed class code in its stored form (upper case, spaces and dashes dropped); ``ValueError`` with a
    friendly message when it cannot be one."""
    code = re.sub(r"[\s-]", "", text or "").upper()
    if len(code) != CODE_CHARS or any(c not in CODE_ALPHABET for c in code):
        raise ValueError(
            _(
                "A class code is {count} letters and digits, e.g. {example}, as your teacher's screen "
                "shows it (no I, L, O, 0 or 1)."
            ).format(count=CODE_CHARS, example="K7M3QX"[:CODE_CHARS])
        )
    return code


def class_for_code(store: RunStore, text: str) -> str | None:
    """The class id that the typed code ``text`` names now, or ``None``; ``ValueError`` for a malformed code."""
    return store.pointer(_CODE + normalise_code(text))


def class_channel(store: RunStore, class_id: str) -> str | None:
    """The channel the class shows now, or ``None`` when its owner stopped sharing (or it expired)."""
    return store.pointer(_CLASS + class_id)


@dataclass
class ClassLink:
    """One owner's class link: its id, its short code and the channel it points to (see the module docstring)."""

    class_id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    code: str = field(default_factory=lambda: "".join(secrets.choice(CODE_ALPHABET) for _i in range(CODE_CHARS)))
    channel: str | None = None  # the channel it points to
    clock: Callable[[], float] = time.monotonic
    _renewed: float = -1e18

    def follow(self, store: RunStore, channel: str) -> None:
        """Point the class at ``channel`` (and renew its pointers when due); may raise ``StoreUnavailable``."""
        now = self.clock()
        if channel == self.channel and now - self._renewed < RENEW_S:
            return
        store.point(_CLASS + self.class_id, channel)
        store.point(_CODE + self.code, self.class_id)
        self.channel, self._renewed = channel, now

    def end(self, store: RunStore) -> None:
        """Sharing stopped: the link and the code lead nowhere any more."""
        store.drop_pointer(_CLASS + self.class_id)
        store.drop_pointer(_CODE + self.code)
        self.channel = None


class FollowedClass:
    """A student's side of a class link: the mirror of the channel the class shows now.

    Args:
        store: the run store.
        class_id: the ``?class=`` of the link.
        watcher_id: this student's random watcher id (one per browser session; a new one when not given).
    """

    def __init__(self, store: RunStore, class_id: str, watcher_id: str | None = None) -> None:
        self.store, self.class_id, self.watcher_id = store, class_id, watcher_id or new_watcher_id()
        self.watched: WatchedRun | None = None

    def current(self) -> WatchedRun | None:
        """The mirror of the class's channel now (a fresh one once the owner moved on to another run), or
        ``None`` when the owner stopped sharing; may raise ``StoreUnavailable``."""
        channel = class_channel(self.store, self.class_id)
        if channel is None:
            return None
        if self.watched is None or self.watched.run_id != channel:
            self.watched = WatchedRun(self.store, channel, self.watcher_id)
        return self.watched

    def moved(self) -> bool:
        """Whether the class now shows another channel than the one mirrored (or none at all)."""
        channel = class_channel(self.store, self.class_id)
        return self.watched is None or channel != self.watched.run_id
