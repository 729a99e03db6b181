"""Run control for live training: one trainer, or two side by side, advanced in short time slices.

A page (or any other driver) owns a :class:`LiveRun` and calls :meth:`LiveRun.advance` with a small time budget
between redraws; the buttons map to :meth:`~LiveRun.start`, :meth:`~LiveRun.pause`, :meth:`~LiveRun.resume`,
:meth:`~LiveRun.step_once`, :meth:`~LiveRun.stop` and :meth:`~LiveRun.reset`. Everything lives on the instance,
so every browser session has its own run and nothing is shared between them. What everyone reads from a run
(where its lanes stand, its pace, the frame the live view draws) is its base,
:class:`~explorer.runs.readout.RunReadout`.

Status moves like this::

    ready --start--> running --pause--> paused --resume--> running
    running/paused --stop--> stopped;  the last step --> done;  a NaN loss --> diverged
    any --reset--> ready (fresh trainers, same seeds, so the same initial weights)

The server may train only so many runs at once (``Limits.max_live_runs``): :mod:`explorer.runs.slots` starts a
run only while a place is free, and keeps the others in line. The resource guard that judges a run before it
starts lives in :mod:`explorer.guard`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from explorer.i18n import _
from explorer.runs.frame import SampleSet
from explorer.runs.readout import RunReadout
from explorer.runs.threads import torch_threads
from explorer.runs.user_data import user_data
from transformer_core.device import trim_memory
from transformer_core.tasks.base import ModelConfig, Task
from transformer_core.training import TrainConfig, Trainer

__all__ = ["LIVE_THREADS", "LiveRun", "RunSpec"]

# Torch threads per training session. Several sessions may train at once on a few cores; with one thread
# each they run side by side, while more threads per session make OpenMP threads spin against each other
# (measured on 2 busy cores: 4 steps/s with 2 threads, 54 with 1).
LIVE_THREADS = 1

KEPT_WEIGHTS_BYTES = 8 * 2**20  # per lane: copies of the model at evaluation steps, so a replay is a model too
MAX_LANES = 2  # a run trains one configuration, or two when comparing
STATUSES = ("ready", "running", "paused", "done", "stopped", "diverged")


@dataclass(frozen=True)
class RunSpec:
    """One configuration of a live run (a "lane")."""

    label: str  # short name shown in legends, e.g. "A" or "B · no positions"
    model_config: ModelConfig  # the architecture to train
    train_config: TrainConfig  # steps, batch size, learning rate, seed, device


class LiveRun(RunReadout):
    """One or two trainers on the same task, driven step by step; see the module docstring.

    Args:
        task: the task every lane trains on.
        specs: one :class:`RunSpec`, or two to compare configurations.
        threads: torch intra-op threads while advancing (e.g. 1, so that several sessions training at once
            each use one core instead of fighting over all of them); ``None`` keeps torch's setting.
        clock: seconds since an arbitrary origin (replaced in tests).

    Attributes:
        task, specs: what the run trains.
        trainers: one :class:`~transformer_core.training.Trainer` per lane.
        status: one of :data:`STATUSES`.
        message: why the run ended early (divergence), in words, or ``None``.
    """

    def __init__(
        self,
        task: Task,
        specs: Sequence[RunSpec],
        *,
        threads: int | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        if not 1 <= len(specs) <= MAX_LANES:
            raise ValueError(f"A live run trains 1 or {MAX_LANES} configurations, not {len(specs)}.")
        self.task = task
        self.specs = tuple(specs)
        self.threads = threads
        self._clock = clock
        # Held for each training round and by anyone who pauses the run from another thread (a reloaded page
        # taking the run over), so that a pause never lands in the middle of a step.
        self.lock = threading.RLock()
        self.reset()

    def reset(self) -> None:
        """Fresh trainers from the same specs (same seeds, so the same initial weights); status "ready".

        Each trainer records a snapshot of its untrained model's attention right away.
        """
        self.trainers = [
            Trainer(self.task, s.model_config, s.train_config, keep_weights_bytes=KEPT_WEIGHTS_BYTES)
            for s in self.specs
        ]
        for trainer in self.trainers:
            if trainer.config.snapshot_every:
                trainer.snapshot()  # the untrained model's attention, shown before the first step
        self.status = "ready"
        self.message: str | None = None
        self._rate: deque[tuple[float, int]] = deque()
        self.driven_at = time.monotonic()  # when a page loop last started or advanced it (see :meth:`driven`)
        # (seconds spent running, step) after every slice: the run's pace, which a replay of it follows.
        self.timeline: list[tuple[float, int]] = [(0.0, 0)]
        self._slice_end: float | None = None  # when the last slice ended (None after a pause)
        self.samples: list[list[SampleSet]] = [[] for _spec in self.specs]  # per lane, per evaluation
        self._sample_marks: list[tuple | None] = [None for _spec in self.specs]
        # Whether the run may be kept in, and replayed from, the recordings all sessions share: not after
        # load_weights (the settings no longer determine it), never on a user's own data (it is private).
        self.recordable = user_data(self.task) is None

    def load_weights(self, state_dict: dict) -> None:
        """Start configuration A from given weights (e.g. a checkpoint's) instead of the seed's.

        Only before training; the untrained snapshot is taken again from the new weights.
        """
        if self.status != "ready" or self.trainers[0].step:
            raise ValueError(_("Weights can only be loaded before training starts; press Reset first."))
        trainer = self.trainers[0]
        trainer.model.load_state_dict(state_dict)
        self.recordable = False
        trainer.snapshots = []
        if trainer.config.snapshot_every:
            trainer.snapshot()

    def start(self) -> None:
        """Start (or resume) training; does nothing once the run is over."""
        if not self.finished:
            self.status = "running"
            self._rate.clear()
            self.driven_at = time.monotonic()

    def resume(self) -> None:
        """Continue a paused run exactly where it stopped."""
        self.start()

    def pause(self) -> None:
        """Stop advancing until :meth:`resume`; the model, optimiser and history are kept, and the heatmaps catch
        up with the step it stops at (:meth:`_snapshot_here`)."""
        if self.status == "running":
            self.status = "paused"
            self._snapshot_here()

    def _snapshot_here(self) -> None:
        """Record each unfinished lane's attention at the step it rests on, where its last snapshot is older: a
        paused run's heatmaps then show the model its heads-off panel measures (they showed step 174 beside a
        panel measured at 178), and each "Step once" moves them."""
        with torch_threads(self.threads), self.lock:
            for trainer in self.trainers:
                if trainer.config.snapshot_every and trainer.step and not trainer.done:
                    trainer.snapshot()

    def stop(self, reason: str = "stopped by the user") -> None:
        """End the run early; the trained model and its history stay available."""
        if self.finished:
            return
        for trainer in self.trainers:
            trainer.stop(reason)
        self.status = "stopped"

    def release(self, reason: str) -> None:
        """Stop the run (if it can still train) and free its gradients and optimiser state.

        For a run nobody is watching any more (its page was left or its tab closed): the trained model,
        curves and snapshots stay for the other pages, the time-lapse and the downloads.
        """
        self.stop(reason)
        for trainer in self.trainers:
            trainer.release()
        trim_memory()

    def current_weights(self) -> None:
        """Make the trainers' models those of the latest step (they are, here; a run trained elsewhere brings
        them back)."""

    @property
    def needs_trainer(self) -> bool:
        """Whether the run trains in a trainer process of its own (and takes one when it starts)."""
        return False

    @property
    def holds_trainer(self) -> bool:
        """Whether a trainer process holds the run (:class:`~explorer.runs.worker.WorkerRun`); one trained on a
        thread holds none."""
        return False

    def give_back(self, store: Any, ttl_s: float) -> bool:
        """Give the run's trainer process back while it is paused, its state kept in ``store`` (see
        :meth:`WorkerRun.give_back <explorer.runs.worker.WorkerRun.give_back>`); a run on a thread has none."""
        return False

    def step_once(self) -> int:
        """One optimisation step on every unfinished lane while not running; returns the steps taken."""
        if self.status == "running" or self.finished:
            return 0
        with torch_threads(self.threads), self.lock:
            taken = self._round()
        self.status = "paused"
        self._settle()
        self._snapshot_here()
        return taken

    def advance(self, time_budget_s: float, *, interrupted: Callable[[], bool] | None = None) -> int:
        """Train for about ``time_budget_s`` seconds (at least one step per lane) while running.

        Lanes take turns one step at a time, so two compared configurations stay at the same step.
        ``interrupted`` is asked after every round; when it says True the slice ends early (the caller has a
        click to handle, say). Returns the number of steps taken (all lanes together); 0 when the run is not
        running.
        """
        if self.status != "running":
            return 0
        self.driven_at = time.monotonic()
        start = now = self._clock()
        self._note_rate(start)
        # The redraw between two slices belongs to the run's pace; a pause (no slice for a while) does not.
        gap = start - self._slice_end if self._slice_end is not None else 0.0
        taken = 0
        with torch_threads(self.threads):
            while self.status == "running":
                with self.lock:
                    if self.status != "running":  # paused from another thread while this one waited
                        break
                    taken += self._round()
                    self._settle()
                now = self._clock()
                if now - start >= time_budget_s or (interrupted is not None and interrupted()):
                    break
        self._note_rate(now)
        self._slice_end = now
        self.timeline.append((self.timeline[-1][0] + (gap if gap < 1.0 else 0.0) + now - start, self.step))
        return taken

    def _round(self) -> int:
        taken = 0
        for trainer in self.trainers:
            if not trainer.done:
                trainer.train_step()
                taken += 1
        return taken

    def _settle(self) -> None:
        """Update the run's status and message from the lanes' statuses."""
        diverged = [(s.label, t) for s, t in zip(self.specs, self.trainers, strict=True) if t.status == "diverged"]
        if diverged:
            prefix = len(self.trainers) > 1
            self.message = "; ".join(
                f"{label}: {t.stop_reason}" if prefix else str(t.stop_reason) for label, t in diverged
            )
        if all(t.done for t in self.trainers):
            statuses = {t.status for t in self.trainers}
            self.status = "diverged" if "diverged" in statuses else "stopped" if "stopped" in statuses else "done"

    def update_samples(
        self,
        sampling: dict[str, Any],
        caption: str,
        count: int,
        seed: int,
        *,
        interrupted: Callable[[], bool] | None = None,
    ) -> bool:
        """Write each lane's sample predictions after a new evaluation (or new ``sampling``); returns whether any
        were added to :attr:`samples`.

        ``sampling`` holds keyword arguments for the task's ``samples`` (a language model's temperature and top-k),
        described by ``caption``. Written text takes a forward pass a character: when ``interrupted`` says True
        the writing ends, nothing is added, and the next call tries again.
        """
        added = False
        for i, trainer in enumerate(self.trainers):
            mark = (id(trainer.last_eval), caption)  # a new evaluation is a new dict
            if mark == self._sample_marks[i]:
                continue
            extra = {"interrupted": interrupted} if sampling and interrupted is not None else {}
            with torch_threads(self.threads), self.lock:
                items = self.task.samples(trainer.model, count, seed=seed, **sampling, **extra)
            if len(items) == count:
                self.samples[i].append(SampleSet(trainer.step, caption, tuple(items)))
                self._sample_marks[i] = mark
                added = True
        return added
