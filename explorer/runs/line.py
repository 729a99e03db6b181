"""The first-come, first-served line of pages waiting for a place to train: :class:`RunLine` and the server's one
line, :data:`LINE`.

A page that finds no place free (:mod:`explorer.runs.slots`) joins the line and asks again every half second,
keeping its ticket alive. A ticket that nobody renewed for :data:`~explorer.runs.pace.TICKET_STALE_S` seconds (its
tab was closed) leaves the line by itself, and so does the ticket of a page that was left. Each ticket remembers the
client it counts against, because a client's tickets waiting count against its quota as its runs do.

The line is per process on purpose: runs train on the server their owner's session is on (sticky sessions), so
each server's line leads to that server's places, whatever store shares the watch links.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from explorer.runs.pace import TICKET_STALE_S

__all__ = ["LINE", "RunLine"]

LOG = logging.getLogger(__name__)


class RunLine:
    """The line of pages waiting for a place, first come, first served (thread-safe)."""

    def __init__(self, *, stale_s: float = TICKET_STALE_S, clock: Callable[[], float] = time.monotonic) -> None:
        self.stale_s, self._clock = stale_s, clock
        self._tickets: OrderedDict[str, float] = OrderedDict()  # ticket -> when it was last renewed
        self._clients: dict[str, str | None] = {}  # ticket -> the client it counts against
        self._lock = threading.Lock()

    def join(self, ticket: str, client: str | None = None) -> int:
        """Join the line (or renew the ticket's place in it) for ``client``; returns the place, 1 for the first."""
        with self._lock:
            self._expire_locked()
            self._tickets[ticket] = self._clock()  # an existing ticket keeps its place
            self._clients[ticket] = client
            return list(self._tickets).index(ticket) + 1

    def held_by(self, client: str, besides: str | None = None) -> int:
        """Tickets of ``client`` waiting in line (``besides`` not counted)."""
        with self._lock:
            self._expire_locked()
            return sum(1 for t in self._tickets if t != besides and self._clients.get(t) == client)

    def place(self, ticket: str) -> int | None:
        """The ticket's place in line (1 for the first), or ``None`` when it is not waiting."""
        with self._lock:
            self._expire_locked()
            return list(self._tickets).index(ticket) + 1 if ticket in self._tickets else None

    def ahead(self, ticket: str | None) -> int:
        """How many wait before ``ticket`` (everyone, for a ticket not in line)."""
        with self._lock:
            self._expire_locked()
            names = list(self._tickets)
            return names.index(ticket) if ticket in self._tickets else len(names)

    def leave(self, ticket: str) -> None:
        """Leave the line (the run started, or its page was left)."""
        with self._lock:
            self._tickets.pop(ticket, None)
            self._clients.pop(ticket, None)

    def __len__(self) -> int:
        with self._lock:
            self._expire_locked()
            return len(self._tickets)

    def _expire_locked(self) -> None:
        now = self._clock()
        for ticket in [t for t, seen in self._tickets.items() if now - seen > self.stale_s]:
            del self._tickets[ticket]
            self._clients.pop(ticket, None)
            LOG.info("a page left the line without a word (its tab closed)")


LINE = RunLine()  # the server's one line: every browser session of this process shares it
