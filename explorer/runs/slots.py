"""The places for runs training at once in this server process, and the first-come, first-served line for them.

A server trains at most ``Limits.max_live_runs`` runs at once (it protects the host: every run takes a core).
:func:`start_if_free` starts a run when a place is free and nobody waits before it; otherwise its page joins the
line (:data:`LINE`) and asks again every half second, keeping its ticket alive. A ticket that nobody renewed for
:data:`TICKET_STALE_S` seconds (its tab was closed) leaves the line by itself, and so does the ticket of a page
that was left. :func:`estimated_wait_s` tells a waiting page about how long it will wait.

What counts: every run that holds training state (:func:`holds_training_state`) — a run training, and a paused
run whose trainer process or optimiser state is still held here — and every ticket waiting in line. One client (a
browser, or an address when the browser is unknown; :func:`held_by` is the one place that counts for a client)
holds at most :data:`PER_CLIENT` of them, whatever number of tabs it opens, and on a server with few places one fewer
than there are (:func:`per_client_limit`: on a small host's two places, one), so one client never holds the whole
server; above the server's own cap on trainer
processes and on training memory (:class:`Capacity`, from the host's limits) no run starts either. Before refusing,
paused runs give their trainer back (:meth:`~explorer.runs.live.LiveRun.give_back`: the state goes to the run
store, the run resumes from it later), the client's own for its quota and the server's oldest for its caps; only
then does :func:`take_place` refuse with :class:`QuotaExceeded` (whose message says the limit), or the run waits in
line for the caps. A paused run that gave its trainer back counts among the parked runs instead
(:mod:`explorer.runs.registry`). :func:`server_load` says what the server holds, for the sidebar's line.

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
from dataclasses import dataclass

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.live import LiveRun
from explorer.runs.pace import TICKET_STALE_S, UNDRIVEN_S

__all__ = [
    "LINE",
    "PER_CLIENT",
    "Capacity",
    "QuotaExceeded",
    "RunLine",
    "ServerLoad",
    "capacity",
    "estimated_wait_s",
    "held_by",
    "holds_training_state",
    "per_client_limit",
    "run_memory",
    "running_count",
    "server_load",
    "start_if_free",
    "take_place",
    "track",
]

PER_CLIENT = 2  # places and line entries one client holds at once (its runs training plus its tickets waiting)
LOG = logging.getLogger(__name__)
# Every run started through start_if_free, process-wide, with the client it counts against. Weak references: a
# session's run disappears from it with the session, so a run left behind cannot hold a place for ever.
_STARTED: weakref.WeakKeyDictionary[LiveRun, str | None] = weakref.WeakKeyDictionary()
_STARTED_LOCK = threading.RLock()
_MEMORY: weakref.WeakKeyDictionary[LiveRun, int] = weakref.WeakKeyDictionary()  # run_memory's estimates
_PAUSING: weakref.WeakSet[LiveRun] = weakref.WeakSet()  # runs _pause_undriven is pausing now (outside the lock)
GiveBack = Callable[[LiveRun], bool]  # asks a paused run to give its trainer back (see LiveRun.give_back)


@dataclass(frozen=True)
class Capacity:
    """The server-wide caps on what runs hold (see :func:`capacity`)."""

    max_trainers: int  # trainer processes held at once, by running and paused runs together
    memory_bytes: int  # estimated training memory of every run holding training state, together


def capacity() -> Capacity:
    """This server's caps, from the host's limits (``Limits.max_trainers``, ``Limits.training_memory_bytes``)."""
    from explorer.host import limits

    held = limits()
    return Capacity(held.max_trainers, held.training_memory_bytes)


@dataclass(frozen=True)
class ServerLoad:
    """What the runs of this server hold now (the sidebar's line)."""

    running: int  # runs training
    paused: int  # paused runs still holding a trainer process or training memory here
    waiting: int  # pages waiting in line
    trainers: int  # trainer processes held
    memory_bytes: int  # estimated training memory held
    capacity: Capacity  # the caps they count against


class QuotaExceeded(Exception):
    """A client asked for more runs (training, paused or waiting) than :data:`PER_CLIENT` (the message says so)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        one = N_(
            "This browser already holds {limit} run training, paused or waiting in line, the most one visitor "
            "may hold at once on this server (so that everyone gets a turn). Stop one of them, or leave the line "
            "in another tab, then try again."
        )
        more = N_(
            "This browser already holds {limit} runs training, paused or waiting in line, the most one visitor "
            "may hold at once on this server (so that everyone gets a turn). Stop one of them, or leave the "
            "line in another tab, then try again."
        )
        super().__init__(Message(one if limit == 1 else more, {"limit": limit}))


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
    a reload of its page finds it paused, with everything kept.

    Call it without ``_STARTED_LOCK``: it is taken only to pick the runs. Pausing a run that trains in a trainer
    process waits for the trainer's answer (up to ``explorer.runs.mirror.ANSWER_S``, from a low-priority process on
    a busy host), and every page's sidebar reads the server's load under that lock, so the lock is never held while
    a run pauses. A run another thread is pausing already is left to it: no second page waits for the same answer.
    """
    with _STARTED_LOCK:
        stray = [run for run in list(_STARTED) if run.status == "running" and not run.driven() and run not in _PAUSING]
        _PAUSING.update(stray)
    for run in stray:
        try:
            run.pause()  # no loop holds it: nothing to wait for
            LOG.info("live run paused: no page has trained it for %.0f s (its page's script ended)", UNDRIVEN_S)
        finally:
            with _STARTED_LOCK:
                _PAUSING.discard(run)


def holds_training_state(run: LiveRun) -> bool:
    """Whether ``run`` counts against its client's quota and the server's caps: it trains, or it is paused and
    still holds its trainer process or its optimiser state here (one that gave its trainer back does not)."""
    if run.status == "running":
        return True
    return run.status == "paused" and (run.holds_trainer or run.training_state_bytes > 0)


def run_memory(run: LiveRun) -> int:
    """Estimated memory ``run`` takes while it holds training state: the resource guard's estimate of each lane
    (weights, gradients, AdamW's averages, activations), plus its trainer process's own when it trains in one."""
    known = _MEMORY.get(run)
    if known is None:
        from explorer.guard import check_budget
        from explorer.runs.worker import TRAINER_BYTES

        try:
            known = sum(
                check_budget(run.task, s.model_config, s.train_config, threads=1).memory_bytes for s in run.specs
            )
        except ValueError:  # a configuration the sizing cannot build: its weights, gradients and AdamW's two
            known = 4 * sum(p.nbytes for t in run.trainers for p in t.model.parameters())
        known += TRAINER_BYTES if run.needs_trainer else 0
        _MEMORY[run] = known
    return known


def track(run: LiveRun, client: str | None) -> None:
    """Count ``run`` for ``client`` from now on (a run that holds a trainer without having started: Step once)."""
    with _STARTED_LOCK:
        _STARTED.setdefault(run, client)


def running_count(exclude: LiveRun | None = None) -> int:
    """Runs started through :func:`start_if_free` that are training right now (all sessions of this process)."""
    _pause_undriven()
    with _STARTED_LOCK:
        return sum(1 for run in list(_STARTED) if run is not exclude and run.status == "running")


def held_by(client: str, *, line: RunLine = LINE, run: LiveRun | None = None, ticket: str | None = None) -> int:
    """What ``client`` holds against its quota: its runs holding training state (training, or paused with their
    trainer or optimiser state here) plus its tickets waiting (``run`` and ``ticket``, the ones asking now, not
    counted). The one place that says what counts for a client."""
    _pause_undriven()
    with _STARTED_LOCK:
        held = sum(
            1
            for other, owner in list(_STARTED.items())
            if owner == client and other is not run and holds_training_state(other)
        )
    return held + line.held_by(client, besides=ticket)


def server_load(*, line: RunLine = LINE, caps: Capacity | None = None) -> ServerLoad:
    """What the runs of this server hold now, against its caps."""
    _pause_undriven()
    with _STARTED_LOCK:
        holding = [r for r in list(_STARTED) if holds_training_state(r)]
        running = sum(1 for r in holding if r.status == "running")
        trainers = sum(1 for r in list(_STARTED) if r.holds_trainer)
        memory = sum(run_memory(r) for r in holding)
    return ServerLoad(
        running, len(holding) - running, len(line), trainers, memory, caps if caps is not None else capacity()
    )


def per_client_limit(max_running: int, per_client: int = PER_CLIENT) -> int:
    """Places and line entries one client may hold on a server training ``max_running`` runs at once: at most
    ``per_client``, and fewer than all the places when there are two or more (a server with one place cannot
    keep a client from holding it)."""
    return per_client if max_running < 2 else max(1, min(per_client, max_running - 1))


def take_place(
    run: LiveRun,
    max_running: int,
    ticket: str,
    client: str,
    *,
    line: RunLine = LINE,
    per_client: int = PER_CLIENT,
    give_back: GiveBack | None = None,
    caps: Capacity | None = None,
) -> int | None:
    """Start ``run`` when a place is free for it (returns ``None``), else keep ``ticket`` in line (returns its
    place, 1 for the first); :class:`QuotaExceeded` when ``client`` holds its limit of runs and entries already
    (:func:`per_client_limit` of ``per_client``) and none of its paused runs could give its trainer back
    (``give_back``) to make room."""
    per_client = per_client_limit(max_running, per_client)
    if held_by(client, line=line, run=run, ticket=ticket) >= per_client:
        mine = _paused_holders(lambda owner: owner == client, besides=run)
        if not _give_back_until(
            mine, give_back, lambda: held_by(client, line=line, run=run, ticket=ticket) < per_client
        ):
            line.leave(ticket)
            raise QuotaExceeded(per_client)
    if start_if_free(run, max_running, ticket, line, client=client, give_back=give_back, caps=caps):
        return None
    return line.join(ticket, client)


def start_if_free(
    run: LiveRun,
    max_running: int,
    ticket: str | None = None,
    line: RunLine = LINE,
    *,
    client: str | None = None,
    give_back: GiveBack | None = None,
    caps: Capacity | None = None,
) -> bool:
    """Start (or resume) ``run`` if a place is free for it; returns whether it runs now.

    A place is free for it when fewer than ``max_running`` other runs train in this process, fewer pages wait
    in ``line`` before its ``ticket`` than there are free places (a page not in line counts everyone waiting),
    and the server's caps (``caps``, by default the host's :func:`capacity`) have room for its trainer and its
    memory, if need be once the oldest paused runs gave their trainers back (``give_back``). Paused, finished
    and released runs take no place, so a place frees itself when a run pauses or ends. A run that starts
    leaves the line.
    """
    caps = caps if caps is not None else capacity()
    run_memory(run)  # estimated once, before any lock is taken

    def place_free() -> bool:
        busy = sum(1 for other in list(_STARTED) if other is not run and other.status == "running")
        return max_running - busy > line.ahead(ticket)

    _pause_undriven()
    with _STARTED_LOCK:
        if not place_free():
            return False
    # Trainers are given back outside the lock (each takes a message to and from its trainer): other sessions
    # never wait for it.
    _give_back_until(_paused_holders(lambda owner: True, besides=run), give_back, lambda: _fits(run, caps))
    with _STARTED_LOCK:
        if not (place_free() and _fits(run, caps)):
            return False
        _STARTED[run] = client
        run.start()
        if ticket is not None:
            line.leave(ticket)
        return run.status == "running"


def _fits(run: LiveRun, caps: Capacity) -> bool:
    """Whether the server's caps hold ``run``'s trainer and memory besides what the other runs hold."""
    with _STARTED_LOCK:
        others = [r for r in list(_STARTED) if r is not run]
        trainers = sum(1 for r in others if r.holds_trainer) + (1 if run.needs_trainer or run.holds_trainer else 0)
        memory = sum(run_memory(r) for r in others if holds_training_state(r)) + run_memory(run)
    return trainers <= caps.max_trainers and memory <= caps.memory_bytes


def _paused_holders(whose: Callable[[str | None], bool], *, besides: LiveRun) -> list[LiveRun]:
    """Paused runs of the clients ``whose`` accepts that hold a trainer, the longest untrained first."""
    with _STARTED_LOCK:
        paused = [
            r
            for r, owner in list(_STARTED.items())
            if r is not besides and whose(owner) and r.status == "paused" and r.holds_trainer
        ]
    return sorted(paused, key=lambda r: r.driven_at)


def _give_back_until(runs: list[LiveRun], give_back: GiveBack | None, enough: Callable[[], bool]) -> bool:
    """Ask ``runs``, in order, to give their trainers back until ``enough`` says so; returns ``enough()``."""
    for other in runs if give_back is not None else ():
        if enough():
            break
        if give_back(other):
            LOG.info("a paused run gave its trainer back to make room (step %d)", other.step)
    return enough()


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
