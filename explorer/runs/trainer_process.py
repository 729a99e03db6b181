"""The trainer process: it owns one run's models and optimisers, trains on command and sends its news back.

The web server starts one per run (:mod:`explorer.runs.worker`) through a ``forkserver`` that imported this module,
and torch with it, once: a trainer is a fork of that small, single-threaded process, never of the threaded web
server. :func:`serve` reads commands from its end of a pipe (:mod:`explorer.runs.wire`): ``create`` (the run's
task, lanes and starting weights), ``start``, ``pause``, ``step``, ``stop``, ``samples`` (how to write the sample
predictions after each evaluation), ``weights`` (send them now), ``priority`` (how much nicer than the web
server to train), ``state`` (send the run's whole training state, :mod:`explorer.runs.training_state`, before the
trainer is given back) and ``quit``. A ``create`` with ``restore`` takes such a state, and the run's attention
snapshots, as its parts instead of starting weights: the run goes on from the step it had. While the run runs it
trains in short slices, and ends a slice early when a command waits, so a pause lands within one step. Between
slices it sends what is new — rows, snapshots, samples and where each lane stands — as a channel update made by a
:class:`~explorer.runs.watch.Publisher`, exactly as a shared run reaches its watchers; after a pause, a step, a
stop or the run's end the lanes' weights follow as safetensors files, and, once the run has ended, the models each
lane kept at its evaluation steps (so that the run's recording holds them and a paused replay is the model of its
step, as for a run trained on a thread).

A trainer does all its torch work with :data:`~explorer.runs.live.LIVE_THREADS` threads, as a run on a script
thread trains: the number of threads decides the order of a matrix product's sums, so with the same count a run
trains to the same numbers, bit for bit, in either place.

A remote trainer's ``create`` command is data from elsewhere (jobs come from a shared Redis that anything reaching
it can write to): served with ``checked=True``, the run is checked before anything is built against this host's
limits with the guard the pages use (:func:`explorer.guard.run_problems`: model sizes, steps, batch, memory and
step time) and its text against ``Limits.max_text_chars``; a run beyond them fails with the reason. A local
trainer process takes commands only from the server that forked it, whose page checked the run already.

Every command is answered by news that names it (``ack``), so the server can wait for the answer. A failure
while training is sent as ``{"kind": "failed"}`` before the process ends; the server then loses the run with a
message, and goes on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from multiprocessing.connection import Connection
from typing import Any

import torch

from explorer.runs.codec import encode_checkpoints, encode_update
from explorer.runs.live import LIVE_THREADS, LiveRun
from explorer.runs.pace import TRAINER_SLICE_S
from explorer.runs.watch import Publisher
from explorer.runs.wire import kept_weights_bytes, load_weights_bytes, pack, rebuild_run, unpack, weights_bytes

__all__ = ["lower_thread", "serve", "thread_nice"]

LOG = logging.getLogger(__name__)


def thread_nice() -> int:
    """The calling thread's niceness (on Linux each thread has its own)."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def lower_thread(niceness: int) -> int:
    """Make the calling thread as nice as ``niceness`` when that is nicer than it is; returns its niceness.

    Only ever lowers a priority, which needs no privilege; a trainer that must come first again trains on a new
    thread instead (see :func:`serve`).
    """
    if niceness > thread_nice():
        try:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), niceness)
        except OSError:
            LOG.info("trainer niceness stays at %d (asked for %d)", thread_nice(), niceness)
    return thread_nice()


class _Trainer:
    """One run, driven by the commands on ``conn``.

    ``base``: the niceness of the thread that serves the run (the web server's); the run trains ``level`` nicer.
    """

    def __init__(self, conn: Connection, base: int, checked: bool = False) -> None:
        self.conn, self.checked = conn, checked
        self.base, self.level = base, 0
        self.run: LiveRun | None = None
        self.publisher = Publisher(None, "trainer")  # what is new since the last news, as a channel update
        self.sampling: dict[str, Any] | None = None  # the page's last samples request, written after each evaluation
        self.kept_sent = False  # whether the ended run's kept models went to the server
        self.moved: int | None = None  # the priority command that moved the run to a new thread, answered there

    def loop(self) -> bool:
        """Train and obey on this thread; returns True when the run must move to a new thread (to come first
        again: a thread cannot raise its own priority), False when told to quit."""
        torch.set_num_threads(LIVE_THREADS)  # per thread
        lower_thread(self.base + self.level)
        if self.moved is not None:
            self.send(self.moved, weights=False)
            self.moved = None
        while True:
            running = self.run is not None and self.run.status == "running"
            if running and not self.conn.poll():
                self.run.advance(TRAINER_SLICE_S, interrupted=self.conn.poll)
                self.write_samples()
                if self.run.status != "running":  # done or diverged: the server gets the final weights
                    self.send(None, weights=True)
                else:
                    self.send(None, weights=False, quiet=True)
                continue
            header, parts = unpack(self.conn.recv_bytes())  # blocks while idle; EOFError once the server is gone
            if header["op"] == "quit":
                return False
            if header["op"] == "priority" and self.base + header["nice"] < thread_nice():
                self.level, self.moved = header["nice"], header["seq"]
                return True
            self.handle(header, parts)

    def handle(self, header: dict[str, Any], parts: list[bytes]) -> None:
        op, seq = header["op"], header["seq"]
        if op == "state":  # answered by the state alone: the trainer is about to be given back
            # Imported here, not by the fork server: with it preloaded, a first pause's answer took 0.5-2 s instead
            # of 0.1-0.3 s on a loaded 2-core machine (in copying the weights; the cause was not pinned down).
            from explorer.runs.training_state import encode_state

            state = encode_state(self.run, optimizer=bool(header.get("optimizer", True)))
            self.conn.send_bytes(pack({"kind": "state", "ack": seq}, [state]))
            return
        if op == "create":
            self.create(header, parts)
        run = self.run
        if op == "start":
            run.start()
        elif op == "pause":
            run.pause()
        elif op == "step":
            run.step_once()
        elif op == "stop":
            run.stop(header["reason"])
        elif op == "samples":
            self.sampling = {k: header[k] for k in ("sampling", "caption", "count", "seed")}
        elif op == "priority":
            self.level = header["nice"]
            lower_thread(self.base + self.level)
        self.write_samples()
        self.send(seq, weights=op in ("pause", "step", "stop", "weights") or run.finished)

    def write_samples(self) -> None:
        """The sample predictions of a new evaluation, as the page asked for them (a waiting command ends the
        writing early; the next call writes them again)."""
        if self.run is not None and self.sampling is not None:
            self.run.update_samples(**self.sampling, interrupted=self.conn.poll)

    def create(self, header: dict[str, Any], parts: list[bytes]) -> None:
        self.level = header["nice"]
        lower_thread(self.base + self.level)
        if self.checked:  # a remote trainer's job; imported here, not in the fork server (see restore)
            from explorer.guard import run_problems
            from explorer.host import limits

            task, specs = rebuild_run(header["run"], max_text_chars=limits().max_text_chars)
            problems = run_problems(task, specs, threads=LIVE_THREADS)
            if problems:
                raise ValueError("this trainer refuses the run: " + "; ".join(problems))
        else:
            task, specs = rebuild_run(header["run"])
        run = LiveRun(task, specs, threads=LIVE_THREADS)
        if header.get("restore"):
            self.restore(run, parts)
            return
        for trainer, data in zip(run.trainers, parts, strict=True):
            load_weights_bytes(trainer.model, data)
            if trainer.config.snapshot_every:  # the untrained snapshot, of the weights given
                trainer.snapshots = []
                trainer.snapshot()
        self.run = run

    def restore(self, run: LiveRun, parts: list[bytes]) -> None:
        """A run given back earlier goes on here: its training state and snapshots (``parts``), paused, with the
        news it had already sent counted as sent."""
        from explorer.runs.codec import decode_update
        from explorer.runs.training_state import decode_state, restore_state

        restore_state(run, decode_state(parts[0]))
        for trainer, lane in zip(run.trainers, decode_update(parts[1], limit=len(parts[1])).lanes, strict=True):
            trainer.snapshots = list(lane.snapshots)
        run.status, self.run = "paused", run
        self.publisher.news(run.frame(), None, force=True)  # what the server holds already: counted, not sent again

    def send(self, ack: int | None, *, weights: bool, quiet: bool = False) -> None:
        """News of the run (``ack``: the command it answers); ``quiet``: only when something is new."""
        run = self.run
        update = self.publisher.news(run.frame(), None, force=not quiet)
        if update is None:
            return
        lanes = [{"status": t.status, "stop_reason": t.stop_reason, "target_step": t.target_step,
                  "seconds": t.seconds, "step": t.step} for t in run.trainers]
        header = {"kind": "news", "ack": ack, "status": run.status, "message": run.message, "lanes": lanes,
                  "state_bytes": run.training_state_bytes, "nice": thread_nice() - self.base}
        parts = [encode_update(update)]
        if weights:
            parts.append(encode_checkpoints(run.step, [weights_bytes(t.model) for t in run.trainers]))
            if run.finished and not self.kept_sent:
                parts.append(kept_weights_bytes([t.weights for t in run.trainers]))
                self.kept_sent = True
        self.conn.send_bytes(pack(header, parts))


def serve(conn: Connection, *, checked: bool = False) -> None:
    """A trainer's whole life: obey ``conn`` until told to quit or the server's end closes (``checked``: check the
    run against this host's limits first, for commands from elsewhere; see the module docstring).

    The run trains on a thread of its own, made nicer than the calling thread for a visitor's own run. A run that
    must come first again (it became shared) moves to a new thread, which starts as nice as the calling thread:
    an unprivileged process can lower a priority but never raise it back.
    """
    trainer = _Trainer(conn, thread_nice(), checked)
    while True:
        outcome: dict[str, Any] = {}
        thread = threading.Thread(target=_train_on_thread, args=(trainer, outcome), name="trainer-run")
        thread.start()
        thread.join()
        err = outcome.get("error")
        if isinstance(err, (EOFError, BrokenPipeError, ConnectionResetError)):
            return  # the server went away: nothing is left to train for
        if err is not None:  # any failure must reach the owner's page as a message
            LOG.error("trainer failed", exc_info=err)
            with contextlib.suppress(OSError):
                conn.send_bytes(pack({"kind": "failed", "message": f"{type(err).__name__}: {err}"}))
            raise SystemExit(1) from err
        if not outcome.get("move"):
            return


def _train_on_thread(trainer: _Trainer, outcome: dict[str, Any]) -> None:
    try:
        outcome["move"] = trainer.loop()
    except Exception as err:  # noqa: BLE001 - serve reports it
        outcome["error"] = err
