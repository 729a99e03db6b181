"""Runs that train in a trainer process of their own: :class:`WorkerRun` and the place :class:`InWorker`.

Why runs leave the web server, and a run's whole life there, are told once in docs/runs.md. Here: a
:class:`WorkerRun` is the server's mirror of a run its trainer process (:mod:`explorer.runs.trainer_process`)
trains: its trainers hold the history, snapshots, samples and where each lane stands, as the trainer's news brings
them, and its models the weights of the last pause, step, stop or end, so everything that reads a run reads the
mirror unchanged. The buttons become commands (:meth:`~WorkerRun.start`, :meth:`~WorkerRun.pause`,
:meth:`~WorkerRun.step_once`, :meth:`~WorkerRun.stop`, :meth:`~WorkerRun.reset`); a pause waits for the trainer's
answer, which lands after the step in progress. :meth:`~WorkerRun.advance` only reads news: nobody reading means
the pipe fills and the trainer waits. A trainer that crashes or is killed loses its run with a message; the server
only ever reads bytes from a pipe.

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
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.codec import decode_checkpoints, decode_update, encode_update
from explorer.runs.live import LIVE_THREADS, LiveRun, RunSpec
from explorer.runs.store import LaneUpdate, RunStore, RunUpdate, StoreUnavailable
from explorer.runs.trainer_link import RemoteLink, TrainerLink, TrainerLost, mark_unavailable, warm
from explorer.runs.training_state import ParkedState
from explorer.runs.watch import state_of
from explorer.runs.wire import describe_run, load_kept_weights, load_weights_bytes, portable_text, weights_bytes
from transformer_core.tasks.base import Task

__all__ = ["ANSWER_S", "OWN_NICE", "SHARED_NICE", "TRAINER_BYTES", "InWorker", "WorkerRun"]

OWN_NICE = 15  # a visitor's own run yields to shared and lesson runs: a thirtieth of their time slices
SHARED_NICE = 0  # a run others watch, or a lesson on the projector
# A trainer's own memory besides its run's model and training state: its private pages, measured at 36 MB (PSS:
# torch's libraries and the fork server's heap are shared by every trainer); the resource guard counts it per run.
TRAINER_BYTES = 40 * 2**20
ANSWER_S = 30.0  # longest wait for a command's answer (a pause comes within a step; samples may take longer)
LOG = logging.getLogger(__name__)


class WorkerRun(LiveRun):
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

    # The link.

    def _connected(self) -> bool:
        """Make sure a trainer holds the run (started with its current weights); False when none could start."""
        if self._link is not None:
            return True
        if self.here is not None:
            return False
        create: dict[str, Any] = {
            "op": "create",
            "nice": self.nice,
            "run": describe_run(self.task, self.specs, self._text),
        }
        if self._parked is not None:
            parts = self._stored_state()
            if parts is None:
                return False
            create["restore"] = True
        else:
            parts = [weights_bytes(t.model) for t in self.trainers]
        try:
            self._link = self._connect()
            weakref.finalize(self, self._link.close)
            self._link.send(create, parts)
            if self._sampling is not None:
                self._link.send(self._sampling)
        except (OSError, TrainerLost) as err:
            self._lose(Message(N_("no trainer process could start ({error})"), {"error": str(err)}))
            return False
        self._drop_parked()  # the new trainer holds it now
        return True

    def _stored_state(self) -> list[bytes] | None:
        """The parts of a ``create`` that restores the run: its stored training state and its snapshots; ``None``
        (the run is lost, with a message) when the store no longer has the state."""
        data, why = self._parked.read()
        if data is None:
            self._parked = None
            self._lose(Message(N_("its training state could not be read back: {why}"), {"why": why}))
            return None
        lanes = [LaneUpdate(snapshots=list(t.snapshots)) for t in self.trainers]
        return [data, encode_update(RunUpdate(state_of(self.frame()), lanes, None))]

    def _fetch_state(self) -> bytes | None:
        """Ask the trainer for the run's training state (news sent before it is applied); ``None`` when the
        trainer is lost meanwhile."""
        with self._wire:
            link = self._link
            try:
                seq = link.send({"op": "state", "optimizer": True})
                deadline = time.monotonic() + ANSWER_S
                while time.monotonic() < deadline and self._link is link:
                    message = link.receive(0.1)
                    if message is None:
                        continue
                    header, parts = message
                    if header.get("kind") == "state" and header.get("ack") == seq and parts:
                        return parts[0]
                    self._apply(header, parts)
            except TrainerLost as err:
                self._lose(str(err))
        return None

    def _drop_parked(self) -> None:
        parked, self._parked = self._parked, None
        if parked is not None:
            parked.drop()

    def _ask(self, command: dict[str, Any], *, wait: bool = True) -> bool:
        """Send ``command``; with ``wait``, read news until the trainer answers it. Returns whether it was sent."""
        with self._wire:
            link = self._link
            if link is None:
                return False
            try:
                seq = link.send(command)
            except TrainerLost as err:
                self._lose(str(err))
                return False
            if command["op"] in ("start", "pause", "step", "stop"):
                self._status_seq = seq  # news sent before the trainer read this command has an older status
        if wait:
            self._read(until=time.monotonic() + ANSWER_S, answer=seq)
        return True

    def _read(self, *, until: float, answer: int | None = None, interrupted: Callable[[], bool] | None = None) -> None:
        """Apply the trainer's news until ``until``, the answer to command ``answer``, or ``interrupted``."""
        while True:
            with self._wire:
                link = self._link
                if link is None or (answer is not None and link.answered >= answer):
                    return
                try:
                    message = link.receive(min(0.05, max(0.0, until - time.monotonic())))
                except TrainerLost as err:
                    self._lose(str(err))
                    return
                if message is not None:
                    self._apply(*message)
                    continue
            if time.monotonic() >= until or (interrupted is not None and interrupted()):
                return

    def _apply(self, header: dict[str, Any], parts: list[bytes]) -> None:
        if header.get("kind") == "failed":
            self._lose(f"its trainer failed: {header.get('message')}")
            return
        if header.get("kind") == "state":  # a late answer to a give-back that stopped waiting: nothing to apply
            return
        self._held = True
        update = decode_update(parts[0])
        for trainer, held, lane, info, state in zip(
            self.trainers, self.samples, update.lanes, header["lanes"], update.state["lanes"], strict=True
        ):
            trainer.snapshots = lane.merge_into(trainer.history, trainer.snapshots, held)
            trainer.status, trainer.stop_reason, trainer.step = info["status"], info["stop_reason"], info["step"]
            trainer.target_step, trainer.seconds, trainer.last_eval = (
                info["target_step"],
                info["seconds"],
                state["last_eval"],
            )
        answered = self._link.answered if self._link is not None else 0
        if answered >= self._status_seq or header["status"] in ("done", "stopped", "diverged"):
            self.status = header["status"]
        self.message, self._state_bytes = header["message"], header["state_bytes"]
        self.trainer_nice = header.get("nice")
        if len(parts) > 1:
            _, files = decode_checkpoints(parts[1])
            for trainer, data in zip(self.trainers, files, strict=True):
                load_weights_bytes(trainer.model, data)
        if len(parts) > 2:  # the run ended: the models its lanes kept, which its recording holds for a replay
            for trainer, kept in zip(self.trainers, load_kept_weights(parts[2]), strict=True):
                trainer.weights = kept

    def _lose(self, why: str) -> None:
        """The trainer is gone: the run ends, stopped, with a message (its weights are those of its last pause)."""
        if self._fall_back and not self._held and not self.finished:
            self._close()
            self.here = why
            mark_unavailable(why)  # the next runs train on the web server's threads from the start
            return
        LOG.warning("live run lost at step %d: %s", self.step, why)
        self._close()
        if not self.finished:
            self.message = Message(
                N_(
                    "its trainer process ended unexpectedly at step {step} ({why}), and the run "
                    "could not go on. The model of its last pause stays for the other pages; press "
                    "Start for a new run"
                ),
                {"step": self.step, "why": why},
            )
            for trainer in self.trainers:
                trainer.status, trainer.stop_reason = "stopped", Message(N_("its trainer process ended"))
            self.status = "stopped"

    def _close(self) -> None:
        link = getattr(self, "_link", None)
        if link is not None:
            self._link, self._state_bytes, self._status_seq = None, 0, 0
            link.close()

    def _steps(self) -> int:
        return sum(t.step for t in self.trainers)


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
