"""Taking a place to train in this server process: :func:`take_place` and :func:`start_if_free`, within the
client's quota and the server's caps, paused runs giving their trainers back to make room.

A server trains at most ``Limits.max_live_runs`` runs at once (it protects the host: every run takes a core).
:func:`start_if_free` starts a run when a place is free and nobody waits before it; otherwise its page joins the
line (:data:`explorer.runs.line.LINE`) and asks again every half second. :func:`estimated_wait_s` tells a waiting
page about how long it will wait.

One client (a browser, or an address when the browser is unknown; :func:`held_by` is the one place that counts for a
client) holds at most :data:`PER_CLIENT` runs and tickets: its runs that hold training state
(:func:`~explorer.runs.load.holds_training_state`) and its tickets waiting in line, whatever number of tabs it
opens, and on a server with few places one fewer than there are (:func:`per_client_limit`: on a small host's two
places, one), so one client never holds the whole server; above the server's own caps on trainer processes and on
training memory (:class:`~explorer.runs.load.Capacity`) no run starts either. Before refusing, paused runs give
their trainer back (:meth:`~explorer.runs.live.LiveRun.give_back`: the state goes to the run store, the run resumes
from it later), the client's own for its quota and the server's oldest for its caps; only then does
:func:`take_place` refuse with :class:`QuotaExceeded` (whose message says the limit), or the run waits in line for
the caps. What the runs hold is counted in :mod:`explorer.runs.load`.

The places are per process on purpose: runs train on the server their owner's session is on (sticky sessions), so
each server's cap protects that server, whatever store shares the watch links.
"""

from __future__ import annotations

import heapq
import logging
from collections.abc import Callable

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.line import LINE, RunLine
from explorer.runs.live import LiveRun
from explorer.runs.load import (
    STARTED,
    STARTED_LOCK,
    Capacity,
    capacity,
    holds_training_state,
    pause_undriven,
    run_memory,
)

__all__ = [
    "PER_CLIENT",
    "QuotaExceeded",
    "estimated_wait_s",
    "held_by",
    "per_client_limit",
    "start_if_free",
    "take_place",
]

PER_CLIENT = 2  # places and line entries one client holds at once (its runs training plus its tickets waiting)
LOG = logging.getLogger(__name__)
GiveBack = Callable[[LiveRun], bool]  # asks a paused run to give its trainer back (see LiveRun.give_back)


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


def held_by(client: str, *, line: RunLine = LINE, run: LiveRun | None = None, ticket: str | None = None) -> int:
    """What ``client`` holds against its quota: its runs holding training state (training, or paused with their
    trainer or optimiser state here) plus its tickets waiting (``run`` and ``ticket``, the ones asking now, not
    counted). The one place that says what counts for a client."""
    pause_undriven()
    with STARTED_LOCK:
        held = sum(
            1
            for other, owner in list(STARTED.items())
            if owner == client and other is not run and holds_training_state(other)
        )
    return held + line.held_by(client, besides=ticket)


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
    and the server's caps (``caps``, by default the host's :func:`~explorer.runs.load.capacity`) have room for
    its trainer and its memory, if need be once the oldest paused runs gave their trainers back (``give_back``).
    Paused, finished and released runs take no place, so a place frees itself when a run pauses or ends. A run
    that starts leaves the line.
    """
    caps = caps if caps is not None else capacity()
    run_memory(run)  # estimated once, before any lock is taken

    def place_free() -> bool:
        busy = sum(1 for other in list(STARTED) if other is not run and other.status == "running")
        return max_running - busy > line.ahead(ticket)

    pause_undriven()
    with STARTED_LOCK:
        if not place_free():
            return False
    # Trainers are given back outside the lock (each takes a message to and from its trainer): other sessions
    # never wait for it.
    _give_back_until(_paused_holders(lambda owner: True, besides=run), give_back, lambda: _fits(run, caps))
    with STARTED_LOCK:
        if not (place_free() and _fits(run, caps)):
            return False
        STARTED[run] = client
        run.start()
        if ticket is not None:
            line.leave(ticket)
        return run.status == "running"


def _fits(run: LiveRun, caps: Capacity) -> bool:
    """Whether the server's caps hold ``run``'s trainer and memory besides what the other runs hold."""
    with STARTED_LOCK:
        others = [r for r in list(STARTED) if r is not run]
        trainers = sum(1 for r in others if r.holds_trainer) + (1 if run.needs_trainer or run.holds_trainer else 0)
        memory = sum(run_memory(r) for r in others if holds_training_state(r)) + run_memory(run)
    return trainers <= caps.max_trainers and memory <= caps.memory_bytes


def _paused_holders(whose: Callable[[str | None], bool], *, besides: LiveRun) -> list[LiveRun]:
    """Paused runs of the clients ``whose`` accepts that hold a trainer, the longest untrained first."""
    with STARTED_LOCK:
        paused = [
            r
            for r, owner in list(STARTED.items())
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
    with STARTED_LOCK:
        running = [r for r in list(STARTED) if r.status == "running"]
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
