"""The places for runs training at once in this server process, and the first-come, first-served line for them.

A server trains at most ``Limits.max_live_runs`` runs at once (it protects the host: every run takes a core).
:func:`start_if_free` starts a run when a place is free and nobody waits before it; otherwise its page joins the
line (:data:`LINE`) and asks again every half second, keeping its ticket alive. A ticket that nobody renewed for
:data:`TICKET_STALE_S` seconds (its tab was closed) leaves the line by itself, and so does the ticket of a page
that was left. :func:`estimated_wait_s` tells a waiting page about how long it will wait.

One client (a browser, or an address when the browser is unknown) holds at most :data:`PER_CLIENT` places and
line entries together, whatever number of tabs it opens, and on a server with few places one fewer than there
are (:func:`per_client_limit`: on a small host's two places, one), so one client never holds the whole server:
:func:`take_place` refuses more with :class:`QuotaExceeded`, whose message says the limit.

The places and the line are per process on purpose: runs train on the server their owner's session is on (sticky
sessions), so each server's cap protects that server, whatever store shares the watch links.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable

from explorer.runs.live import LiveRun
from explorer.runs.pace import TICKET_STALE_S, UNDRIVEN_S

__all__ = ["LINE", "PER_CLIENT", "QuotaExceeded", "RunLine", "estimated_wait_s", "held_by", "per_client_limit",
           "running_count", "start_if_free", "take_place"]

PER_CLIENT = 2  # places and line entries one client holds at once (its runs training plus its tickets waiting)
LOG = logging.getLogger(__name__)
# Every run started through start_if_free, process-wide, with the client it counts against. Weak references: a
# session's run disappears from it with the session, so a run left behind cannot hold a place for ever.
_STARTED: weakref.WeakKeyDictionary[LiveRun, str | None] = weakref.WeakKeyDictionary()
_STARTED_LOCK = threading.Lock()


class QuotaExceeded(Exception):
    """A client asked for more places and line entries than :data:`PER_CLIENT` (the message says so)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        super().__init__(f"This browser already trains or waits for {limit} run{'s' if limit != 1 else ''}, the "
                         f"most one visitor may hold at once on this server (so that everyone gets a turn). "
                         "Pause or stop one of them, or leave the line in another tab, then try again.")


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


def _pause_undriven() -> None:
    """Pause every run that says "running" but that no page loop has driven lately (see :meth:`LiveRun.driven`);
    a reload of its page finds it paused, with everything kept. Call with ``_STARTED_LOCK`` held."""
    for run in list(_STARTED):
        if run.status == "running" and not run.driven():
            run.pause()  # no loop holds it: nothing to wait for
            LOG.info("live run paused: no page has trained it for %.0f s (its page's script ended)", UNDRIVEN_S)


def running_count(exclude: LiveRun | None = None) -> int:
    """Runs started through :func:`start_if_free` that are training right now (all sessions of this process)."""
    with _STARTED_LOCK:
        _pause_undriven()
        return sum(1 for run in list(_STARTED) if run is not exclude and run.status == "running")


def held_by(client: str, *, line: RunLine = LINE, run: LiveRun | None = None, ticket: str | None = None) -> int:
    """Places and line entries ``client`` holds: its runs training plus its tickets waiting (``run`` and
    ``ticket``, the ones asking now, not counted)."""
    with _STARTED_LOCK:
        _pause_undriven()
        training = sum(1 for other, owner in list(_STARTED.items())
                       if owner == client and other is not run and other.status == "running")
    return training + line.held_by(client, besides=ticket)


def per_client_limit(max_running: int, per_client: int = PER_CLIENT) -> int:
    """Places and line entries one client may hold on a server training ``max_running`` runs at once: at most
    ``per_client``, and fewer than all the places when there are two or more (a server with one place cannot
    keep a client from holding it)."""
    return per_client if max_running < 2 else max(1, min(per_client, max_running - 1))


def take_place(run: LiveRun, max_running: int, ticket: str, client: str, *, line: RunLine = LINE,
               per_client: int = PER_CLIENT) -> int | None:
    """Start ``run`` when a place is free for it (returns ``None``), else keep ``ticket`` in line (returns its
    place, 1 for the first); :class:`QuotaExceeded` when ``client`` holds its limit of places and entries
    already (:func:`per_client_limit` of ``per_client``)."""
    per_client = per_client_limit(max_running, per_client)
    if held_by(client, line=line, run=run, ticket=ticket) >= per_client:
        line.leave(ticket)
        raise QuotaExceeded(per_client)
    if start_if_free(run, max_running, ticket, line, client=client):
        return None
    return line.join(ticket, client)


def start_if_free(run: LiveRun, max_running: int, ticket: str | None = None, line: RunLine = LINE, *,
                  client: str | None = None) -> bool:
    """Start (or resume) ``run`` if a place is free for it; returns whether it runs now.

    A place is free for it when fewer than ``max_running`` other runs train in this process and fewer pages wait
    in ``line`` before its ``ticket`` than there are free places (a page not in line counts everyone waiting).
    Paused, finished and released runs do not count, so a place frees itself when a run pauses or ends. A run
    that starts leaves the line.
    """
    with _STARTED_LOCK:
        _pause_undriven()
        busy = sum(1 for other in list(_STARTED) if other is not run and other.status == "running")
        if max_running - busy <= line.ahead(ticket):
            return False
        _STARTED[run] = client
        run.start()
        if ticket is not None:
            line.leave(ticket)
        return run.status == "running"


def estimated_wait_s(place: int, max_running: int, run_s: float | None = None) -> float | None:
    """About how many seconds the page at ``place`` in line (1 for the first) waits for a place.

    The runs training now free their places at their estimated ends; each page before this one then takes the
    first free place for ``run_s`` seconds (by default the mean length of the runs training now). ``None`` when
    no training run knows its speed yet.
    """
    with _STARTED_LOCK:
        running = [r for r in list(_STARTED) if r.status == "running"]
        ends = [r.eta_s for r in running]
        lengths = [r.eta_s + r.seconds_running for r in running if r.eta_s is not None]
    if any(e is None for e in ends) or (not ends and run_s is None):
        return None
    run_s = run_s if run_s is not None else (sum(lengths) / len(lengths) if lengths else 0.0)
    frees = [float(e) for e in ends] + [0.0] * max(0, max_running - len(ends))
    heapq.heapify(frees)
    wait = 0.0
    for _ in range(place):
        wait = heapq.heappop(frees)
        heapq.heappush(frees, wait + run_s)
    return wait
