"""A :class:`~explorer.runs.worker.WorkerRun`'s end of the pipe to its trainer process: :class:`TrainerMirror`.

A worker run is the server's mirror of a run its trainer trains (see :mod:`explorer.runs.worker`). This is how the
mirror stays one: :meth:`~TrainerMirror._connected` starts a trainer with the run's weights, or with the training
state it left in the run store when it gave its last trainer back; :meth:`~TrainerMirror._ask` sends a command and
waits for its answer, reading news meanwhile (a pause lands after the step in progress); :meth:`~TrainerMirror._read`
and :meth:`~TrainerMirror._apply` bring the trainer's news into the lanes, in order, one reader at a time; and a
trainer that crashes or is killed loses its run with a message (:meth:`~TrainerMirror._lose`), unless no trainer
ever held it and the run may fall back: then it trains on the calling thread. A run that ends lets its trainer go
as soon as the news of its end is applied. The server only ever reads bytes from a pipe.

The mirror's state is the worker run's, set in its constructor: ``_link`` (the trainer, while one holds the run),
``_wire`` (the lock of the pipe), ``_parked`` (the training state of a run that gave its trainer back), ``_held``,
``_status_seq``, ``_state_bytes``, ``_sampling``, ``_connect``, ``_fall_back``, ``_text``, ``nice``,
``trainer_nice`` and ``here``.
"""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from explorer.i18n import N_
from explorer.i18n.message import Message
from explorer.runs.codec import decode_checkpoints, decode_update, encode_update
from explorer.runs.store import LaneUpdate, RunUpdate
from explorer.runs.trainer_link import TrainerLost, mark_unavailable
from explorer.runs.watch import state_of
from explorer.runs.wire import describe_run, load_kept_weights, load_weights_bytes, weights_bytes

__all__ = ["ANSWER_S", "TrainerMirror"]

ANSWER_S = 30.0  # longest wait for a command's answer (a pause comes within a step; samples may take longer)
LOG = logging.getLogger(__name__)


class TrainerMirror:
    """The link of a :class:`~explorer.runs.worker.WorkerRun` to its trainer; see the module docstring."""

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
        if self.finished:
            # The last news came with the final weights and the kept models: the trainer has nothing left to do.
            # It ends here, whoever read the news (the page's loop, a pause, a park), so a run whose end no page
            # loop saw does not keep its process.
            self._close()

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
