"""How many *Watch it write* writings run at once: one per client, and a few per server.

Each token of a writing is a forward pass of a model as large as GPT-2, on the server's cores, like a training
step; a page (or a script) that starts writings in many tabs would take them all. :class:`WritingLimit` admits a
new writing only when its client (a browser, see :mod:`explorer.runs.clients`) writes nothing else and fewer than
the server's most writings run; otherwise :class:`WritingRefused` says why, for the page to show, as training's
line does for runs. A writing holds its place until it finishes, is stopped or released, or makes no progress for
:data:`STALE_S` seconds (its tab was closed mid-writing); places are kept by weak reference, so a writing that
nobody holds any more holds no place either.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass

from explorer.host import limits
from explorer.i18n import _, ngettext, num
from explorer.lab.generation import Writing

__all__ = ["PER_CLIENT", "STALE_S", "WRITINGS", "WritingLimit", "WritingRefused"]

PER_CLIENT = 1  # writings one client runs at once
STALE_S = 15.0  # a writing that wrote no token for this long has no page left driving it: its place is free


class WritingRefused(Exception):
    """A writing could not start now; the message says why and what to do."""


@dataclass
class _Place:
    writing: weakref.ref  # the Writing holding the place
    client: str  # whom it counts against
    written: int  # tokens written when last looked at
    moved: float  # when that count last changed


class WritingLimit:
    """The server's writings and their clients (thread-safe); ``most`` says how many may run at once."""

    def __init__(self, most: Callable[[], int], *, per_client: int = PER_CLIENT, stale_s: float = STALE_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.most, self.per_client, self.stale_s, self._clock = most, per_client, stale_s, clock
        self._places: dict[int, _Place] = {}
        self._lock = threading.Lock()

    def admit(self, client: str, writing: Writing) -> None:
        """Give ``writing`` a place for ``client``; :class:`WritingRefused` (the writing stopped) when its client
        writes already or the server writes as many as it allows."""
        with self._lock:
            live = self._live_locked()
            most = max(1, self.most())
            if sum(p.client == client for p in live) >= self.per_client:
                writing.stop()
                raise WritingRefused(_("This browser is already writing in another tab: stop it there (or let it "
                                       "finish), then press Write here."))
            if len(live) >= most:
                writing.stop()
                raise WritingRefused(ngettext(
                    "This server writes at most {most} text at once (one per browser) to stay responsive, and {n} "
                    "are being written now. Each takes a few seconds: press Write again in a moment.",
                    "This server writes at most {most} texts at once (one per browser) to stay responsive, and {n} "
                    "are being written now. Each takes a few seconds: press Write again in a moment.",
                    most).format(most=num(most), n=num(len(live))))
            self._places[id(writing)] = _Place(weakref.ref(writing), client, len(writing.written), self._clock())

    def release(self, writing: Writing | None) -> None:
        """``writing`` gives its place back (it ended, or its page let it go)."""
        if writing is not None:
            with self._lock:
                place = self._places.get(id(writing))
                if place is not None and place.writing() is writing:
                    del self._places[id(writing)]

    def running(self) -> int:
        """Writings holding a place now."""
        with self._lock:
            return len(self._live_locked())

    def _live_locked(self) -> list[_Place]:
        now, live = self._clock(), []
        for key, place in list(self._places.items()):
            writing = place.writing()
            if writing is not None and len(writing.written) != place.written:
                place.written, place.moved = len(writing.written), now
            if writing is None or writing.finished or now - place.moved > self.stale_s:
                del self._places[key]
            else:
                live.append(place)
        return live


def _server_most() -> int:
    return limits().max_live_runs  # as many as runs train at once: each takes a core while it works


WRITINGS = WritingLimit(_server_most)  # the server's one limit: every browser session of this process shares it
