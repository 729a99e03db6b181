"""Runs that train in a trainer process of their own: :class:`WorkerRun` and the place :class:`InWorker`.

Why runs leave the web server, and a run's whole life there, are told once in docs/runs.md. Here: a
:class:`WorkerRun` is the server's mirror of a run its trainer process (:mod:`explorer.runs.trainer_process`)
trains: its trainers hold the history, snapshots, samples and where each lane stands, as the trainer's news brings
them, and its models the weights of the last pause, step, stop or end, so everything that reads a run reads the
mirror unchanged. The buttons become commands (:meth:`~WorkerRun.start`, :meth:`~WorkerRun.pause`,
:meth:`~WorkerRun.step_once`, :meth:`~WorkerRun.stop`, :meth:`~WorkerRun.reset`); a pause waits for the trainer's
answer, which lands after the step in progress. :meth:`~WorkerRun.advance` only reads news: nobody reading means
the pipe fills and the trainer waits. A trainer that crashes or is killed loses its run with a message; the server
only ever reads bytes from a pipe. The run's end of that pipe, which keeps the mirror, is its base
:class:`~explorer.runs.mirror.TrainerMirror`.

Priority: a visitor's own run trains :data:`OWN_NICE` nicer than the web server, a shared run or a lesson
:data:`SHARED_NICE`; :meth:`WorkerRun.prioritize` moves a run that becomes shared to a thread at the server's
niceness. Giving the trainer back (:meth:`WorkerRun.give_back`, asked by the registry and the places): the run's
training state goes to the run store (:class:`~explorer.runs.training_state.ParkedState`), the trainer exits, and
Resume starts a new one from there, at the same step; a state the store no longer holds loses the run with a message.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from explorer.runs.live import LIVE_THREADS, LiveRun, RunSpec
from explorer.runs.mirror import TrainerMirror
from explorer.runs.store import RunStore, StoreUnavailable
from explorer.runs.trainer_link import RemoteLink, TrainerLink, warm
from explorer.runs.training_state import ParkedState
from explorer.runs.wire import portable_text
from transformer_core.tasks.base import Task

__all__ = ["OWN_NICE", "SHARED_NICE", "TRAINER_BYTES", "InWorker", "WorkerRun"]

OWN_NICE = 15  # a visitor's own run yields to shared and lesson runs: a thirtieth of their time slices
SHARED_NICE = 0  # a run others watch, or a lesson on the projector
# A trainer's own memory besides its run's model and training state: its private pages, measured at 36 MB (PSS:
# torch's libraries and the fork server's heap are shared by every trainer); the resource guard counts it per run.
TRAINER_BYTES = 40 * 2**20
LOG = logging.getLogger(__name__)


class WorkerRun(TrainerMirror, LiveRun):
    """A :class:`LiveRun` trained by a trainer process; see the module docstring.

    Args:
        task, specs: what the run trains.
        nice: the trainer's niceness (:data:`OWN_NICE` or :data:`SHARED_NICE`).
        connect: starts a trainer and returns the link to it (replaced in tests).
        fall_back: when no trainer process takes the run before any has held it, train it on the calling thread
            instead (:attr:`here` says why) rather than lose it.

    ``ValueError`` when the task's data cannot travel to a trainer (then train it on a thread instead).
    """

    def __init__(
        self,
        task: Task,
        specs: Sequence[RunSpec],
        *,
        nice: int = OWN_NICE,
        connect: Callable[[], TrainerLink] | None = None,
        fall_back: bool = False,
    ) -> None:
        self._text = portable_text(task)
        self._link: TrainerLink | None = None
        self._connect = connect if connect is not None else TrainerLink.start
        self.nice = nice
        self._fall_back = fall_back
        self.here: str | None = None  # why the run trains on the calling thread (no trainer process could start)
        self._held = False  # whether a trainer has answered: before, the mirror is the whole run
        self._state_bytes = 0
        self.trainer_nice: int | None = None  # how much nicer than the web server the run trains, as last reported
        self._sampling: dict[str, Any] | None = None  # the last samples request, sent to every new trainer
        self._status_seq = 0  # the last command that changes the status: older news does not say the status
        self._wire = threading.RLock()  # one reader of the pipe at a time, and news applied in order
        # While the trainer is given back: (the store, the key of the run's training state there, whether the
        # optimiser state is in it); a new trainer starts from it.
        self._parked: ParkedState | None = None
        super().__init__(task, specs, threads=LIVE_THREADS)

    # Commands.

    def reset(self) -> None:
        self._close()
        self._drop_parked()
        self._held = False
        super().reset()

    def start(self) -> None:
        """Start or resume: the trainer is told at once, or, for a run no trainer holds yet, by the first
        :meth:`advance` (so a click never waits for a trainer process to start)."""
        if self.finished:
            return
        super().start()
        if self._link is not None:
            self._ask({"op": "start"}, wait=False)

    def pause(self) -> None:
        if self.status == "running" and self._link is not None:
            self._ask({"op": "pause"})
        super().pause()

    def _snapshot_here(self) -> None:
        """The trainer process takes the snapshot (its own run pauses); only a run trained here takes it here."""
        if self.here is not None:
            super()._snapshot_here()

    def step_once(self) -> int:
        if self.status == "running" or self.finished or not self._connected():
            return super().step_once() if self.here is not None else 0
        before = self._steps()
        self._ask({"op": "step"})
        return self._steps() - before

    def stop(self, reason: str = "stopped by the user") -> None:
        if self.finished:
            return
        if self._link is not None:
            self._ask({"op": "stop", "reason": reason})
        if not self.finished:  # never connected, or lost meanwhile
            super().stop(reason)

    def release(self, reason: str) -> None:
        self.stop(reason)
        self._close()
        self._drop_parked()
        super().release(reason)

    @property
    def needs_trainer(self) -> bool:
        return self.here is None and not self.finished

    @property
    def holds_trainer(self) -> bool:
        return self._link is not None

    def give_back(self, store: RunStore, ttl_s: float) -> bool:
        """Give the trainer process back while the run is paused (see the module docstring): its training state
        goes to ``store`` for ``ttl_s`` seconds — with the optimiser state when the store's budget has room for
        it — and the trainer exits. Returns whether it did; the trainer stays when the run is not paused or the
        store cannot keep the state."""
        with self.lock, self._wire:  # no command nor news between the state sent and the trainer's exit
            if self.status != "paused" or self._link is None:
                return False
            data = self._fetch_state()
            if data is None:
                return False
            try:
                parked = ParkedState.put(store, data, ttl_s)
            except StoreUnavailable as err:
                LOG.warning("paused run keeps its trainer: %s", err)
                return False
            if parked is None:
                LOG.info("paused run keeps its trainer: its state (%.1f MB) does not fit the store", len(data) / 2**20)
                return False
            self._parked = parked
            self.recordable = False  # the models kept for a replay stayed with the trainer
            self._close()
            LOG.info(
                "paused run at step %d gave its trainer back (optimiser state %s)",
                self.step,
                "kept" if parked.optimizer else "not kept",
            )
            return True

    def prioritize(self, nice: int = SHARED_NICE) -> None:
        """Ask the trainer to run at niceness ``nice`` (a shared run or a lesson: :data:`SHARED_NICE`)."""
        if nice != self.nice:
            self.nice = nice
            if self._link is not None:
                self._ask({"op": "priority", "nice": nice}, wait=False)

    @property
    def training_state_bytes(self) -> int:
        return self._state_bytes if self._link is not None else super().training_state_bytes

    @property
    def trainer_pid(self) -> int | None:
        """The trainer process's id while it holds the run."""
        return self._link.pid if self._link is not None else None

    # Training: the trainer trains, the server reads.

    def advance(self, time_budget_s: float, *, interrupted: Callable[[], bool] | None = None) -> int:
        if self.here is not None:
            return super().advance(time_budget_s, interrupted=interrupted)
        if self.status != "running":
            return 0
        self.driven_at = time.monotonic()
        if self._link is None and not (self._connected() and self._ask({"op": "start"}, wait=False)):
            if self.here is not None:  # no trainer process could start: the run trains here
                return super().advance(time_budget_s, interrupted=interrupted)
            return 0  # no trainer could start: the run is lost, with a message
        start = self._clock()
        self._note_rate(start)
        gap = start - self._slice_end if self._slice_end is not None else 0.0
        before = self._steps()
        self._read(until=time.monotonic() + time_budget_s, interrupted=interrupted)
        now = self._clock()
        self._note_rate(now)
        self._slice_end = now
        self.timeline.append((self.timeline[-1][0] + (gap if gap < 1.0 else 0.0) + now - start, self.step))
        return self._steps() - before

    def update_samples(
        self,
        sampling: dict[str, Any],
        caption: str,
        count: int,
        seed: int,
        *,
        interrupted: Callable[[], bool] | None = None,
    ) -> bool:
        request = {"op": "samples", "sampling": sampling, "caption": caption, "count": count, "seed": seed}
        if self._link is None:  # no trainer yet: the mirror's weights are the trainer's; it is asked once it starts
            self._sampling = request
            return super().update_samples(sampling, caption, count, seed, interrupted=interrupted)
        # The trainer writes them after every evaluation from now on; a new request only when the way changes.
        held = sum(len(s) for s in self.samples)
        if request != self._sampling:
            self._sampling = request
            self._ask(request, wait=self.status != "running")
        return sum(len(s) for s in self.samples) > held

    def current_weights(self) -> None:
        """Bring the trainer's weights now, while it trains (a download of the model as it is)."""
        if self.status == "running" and self._link is not None:
            self._ask({"op": "weights"})


class InWorker:
    """The place that makes each run a :class:`WorkerRun`, trained in a trainer process of its own (see the module
    docstring); the run itself answers every call after that."""

    def __init__(self, *, remote: bool = False) -> None:
        self.remote = remote  # trainers on other hosts, reached through Redis (they cost this server nothing)
        self.overhead_bytes = 0 if remote else TRAINER_BYTES
        if not remote:
            warm()

    def new_run(self, task: Task, specs: Sequence[RunSpec], *, shared: bool = False) -> LiveRun:
        """A :class:`WorkerRun`, or a run on this thread when the task's data cannot travel."""
        try:
            return WorkerRun(
                task,
                specs,
                nice=SHARED_NICE if shared else OWN_NICE,
                connect=RemoteLink.start if self.remote else None,
                fall_back=not self.remote,
            )
        except ValueError as err:
            LOG.info("this run trains in the web server (%s)", err)
            return LiveRun(task, specs, threads=LIVE_THREADS)

    def prioritize(self, run: LiveRun) -> None:
        """Put ``run`` before visitors' own runs (it is shared, or a lesson on the projector)."""
        if isinstance(run, WorkerRun):
            run.prioritize(SHARED_NICE)
