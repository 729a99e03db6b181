"""What the runs of this server hold, and the caps they hold it against: the server's load.

Every run started here (:func:`~explorer.runs.slots.start_if_free`, or :func:`track` for a run that holds a trainer
without having started) is kept in :data:`STARTED` with the client it counts against, process-wide, so that the
places, the client quota and the sidebar all count the same runs. What counts is every run that holds training
state (:func:`holds_training_state`) — a run training, and a paused run whose trainer process or optimiser state is
still held here — each for its estimated training memory (:func:`run_memory`). Above the server's own cap on trainer
processes and on training memory (:class:`Capacity`, from the host's limits) no run starts. A paused run that gave
its trainer back counts among the parked runs instead (:mod:`explorer.runs.registry`). :func:`server_load` says what
the server holds, for the sidebar's line.

Before counting, a run that says "running" but that no page drives any more is paused (:func:`pause_undriven`), so a
run whose page's script ended cannot hold a place for ever. The count is per process on purpose: runs train on the
server their owner's session is on (sticky sessions), so each server's caps protect that server.
"""

from __future__ import annotations

import logging
import threading
import weakref
from dataclasses import dataclass

from explorer.runs.line import LINE, RunLine
from explorer.runs.live import LiveRun
from explorer.runs.pace import UNDRIVEN_S

__all__ = [
    "STARTED",
    "STARTED_LOCK",
    "Capacity",
    "ServerLoad",
    "capacity",
    "holds_training_state",
    "pause_undriven",
    "run_memory",
    "running_count",
    "server_load",
    "track",
]

LOG = logging.getLogger(__name__)
# Every run started through start_if_free, process-wide, with the client it counts against. Weak references: a
# session's run disappears from it with the session, so a run left behind cannot hold a place for ever. Read and
# written only under STARTED_LOCK, which a start holds while it checks for a free place and takes it.
STARTED: weakref.WeakKeyDictionary[LiveRun, str | None] = weakref.WeakKeyDictionary()
STARTED_LOCK = threading.RLock()
_MEMORY: weakref.WeakKeyDictionary[LiveRun, int] = weakref.WeakKeyDictionary()  # run_memory's estimates
_PAUSING: weakref.WeakSet[LiveRun] = weakref.WeakSet()  # runs pause_undriven is pausing now (outside the lock)


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


def pause_undriven() -> None:
    """Pause every run that says "running" but that no page loop has driven lately (see :meth:`LiveRun.driven`);
    a reload of its page finds it paused, with everything kept.

    Call it without ``STARTED_LOCK``: it is taken only to pick the runs. Pausing a run that trains in a trainer
    process waits for the trainer's answer (up to ``explorer.runs.mirror.ANSWER_S``, from a low-priority process on
    a busy host), and every page's sidebar reads the server's load under that lock, so the lock is never held while
    a run pauses. A run another thread is pausing already is left to it: no second page waits for the same answer.
    """
    with STARTED_LOCK:
        stray = [run for run in list(STARTED) if run.status == "running" and not run.driven() and run not in _PAUSING]
        _PAUSING.update(stray)
    for run in stray:
        try:
            run.pause()  # no loop holds it: nothing to wait for
            LOG.info("live run paused: no page has trained it for %.0f s (its page's script ended)", UNDRIVEN_S)
        finally:
            with STARTED_LOCK:
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
    with STARTED_LOCK:
        STARTED.setdefault(run, client)


def running_count(exclude: LiveRun | None = None) -> int:
    """Runs started through :func:`~explorer.runs.slots.start_if_free` that are training right now (all sessions of
    this process)."""
    pause_undriven()
    with STARTED_LOCK:
        return sum(1 for run in list(STARTED) if run is not exclude and run.status == "running")


def server_load(*, line: RunLine = LINE, caps: Capacity | None = None) -> ServerLoad:
    """What the runs of this server hold now, against its caps."""
    pause_undriven()
    with STARTED_LOCK:
        holding = [r for r in list(STARTED) if holds_training_state(r)]
        running = sum(1 for r in holding if r.status == "running")
        trainers = sum(1 for r in list(STARTED) if r.holds_trainer)
        memory = sum(run_memory(r) for r in holding)
    return ServerLoad(
        running, len(holding) - running, len(line), trainers, memory, caps if caps is not None else capacity()
    )
