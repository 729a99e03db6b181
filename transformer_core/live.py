"""Run control for live training: one trainer, or two side by side, advanced in short time slices.

A page (or any other driver) owns a :class:`LiveRun` and calls :meth:`LiveRun.advance` with a small time budget
between redraws; the buttons map to :meth:`~LiveRun.start`, :meth:`~LiveRun.pause`, :meth:`~LiveRun.resume`,
:meth:`~LiveRun.step_once`, :meth:`~LiveRun.stop` and :meth:`~LiveRun.reset`. Everything lives on the instance,
so every browser session has its own run and nothing is shared between them.

Status moves like this::

    ready --start--> running --pause--> paused --resume--> running
    running/paused --stop--> stopped;  the last step --> done;  a NaN loss --> diverged
    any --reset--> ready (fresh trainers, same seeds, so the same initial weights)
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np
import torch

from .config import ViTConfig
from .device import trim_memory
from .host import HostProfile, host_profile, limits_for
from .tasks.base import ModelConfig, Task
from .training import TrainConfig, Trainer

if TYPE_CHECKING:  # sizing builds models; imported where used to keep this module's import light
    from .sizing import StepEstimate

MAX_LANES = 2  # a run trains one configuration, or two when comparing
RATE_WINDOW_S = 5.0  # steps per second are measured over this many recent seconds
STATUSES = ("ready", "running", "paused", "done", "stopped", "diverged")
CPU_FLOPS_PER_THREAD = 8e9  # sustained FLOP/s of one CPU thread on these small matrices (measured ~18e9, halved)
GPU_FLOPS = 2e12  # sustained FLOP/s of a GPU on these small matrices (kernel launches dominate)
STEP_OVERHEAD_S = 0.004  # fixed cost of a step: Python, optimiser bookkeeping, batch generation
SUGGESTED_BATCHES = (128, 64, 32, 16, 8)  # batch sizes the guard may suggest, largest first
SIZING_KINDS = {"seq2seq": "seq2seq", "causal_lm": "decoder", "regression": "encoder", "vision": "vit"}


@dataclass(frozen=True)
class RunSpec:
    """One configuration of a live run (a "lane")."""

    label: str  # short name shown in legends, e.g. "A" or "B · no positions"
    model_config: ModelConfig  # the architecture to train
    train_config: TrainConfig  # steps, batch size, learning rate, seed, device


class LiveRun:
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

    def __init__(self, task: Task, specs: Sequence[RunSpec], *, threads: int | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        if not 1 <= len(specs) <= MAX_LANES:
            raise ValueError(f"A live run trains 1 or {MAX_LANES} configurations, not {len(specs)}.")
        self.task = task
        self.specs = tuple(specs)
        self.threads = threads
        self._clock = clock
        self.reset()

    def reset(self) -> None:
        """Fresh trainers from the same specs (same seeds, so the same initial weights); status "ready".

        Each trainer records a snapshot of its untrained model's attention right away.
        """
        self.trainers = [Trainer(self.task, s.model_config, s.train_config) for s in self.specs]
        for trainer in self.trainers:
            if trainer.config.snapshot_every:
                trainer.snapshot()  # the untrained model's attention, shown before the first step
        self.status = "ready"
        self.message: str | None = None
        self._rate: deque[tuple[float, int]] = deque()

    def load_weights(self, state_dict: dict) -> None:
        """Start configuration A from given weights (e.g. a checkpoint's) instead of the seed's.

        Only before training; the untrained snapshot is taken again from the new weights.
        """
        if self.status != "ready" or self.trainers[0].step:
            raise ValueError("Weights can only be loaded before training starts; press Reset first.")
        trainer = self.trainers[0]
        trainer.model.load_state_dict(state_dict)
        trainer.snapshots = []
        if trainer.config.snapshot_every:
            trainer.snapshot()

    @property
    def labels(self) -> list[str]:
        """The lanes' labels, in order."""
        return [s.label for s in self.specs]

    @property
    def step(self) -> int:
        """Steps completed by the furthest lane."""
        return max(t.step for t in self.trainers)

    @property
    def total_steps(self) -> int:
        """Steps of the longest lane's whole run."""
        return max(t.config.steps for t in self.trainers)

    @property
    def progress(self) -> float:
        """Fraction of all lanes' planned steps that are done (finished lanes count as complete)."""
        planned = sum(t.config.steps for t in self.trainers)
        done = sum(t.config.steps if t.done else t.step for t in self.trainers)
        return min(1.0, done / planned)

    @property
    def finished(self) -> bool:
        """Whether the run is over (done, stopped or diverged); only :meth:`reset` starts it again."""
        return self.status in ("done", "stopped", "diverged")

    @property
    def steps_per_second(self) -> float:
        """Wall-clock training speed over the last few seconds of running (steps of one lane per second).

        0 until measured; after a pause or the end of the run it keeps the last value.
        """
        if len(self._rate) < 2:
            return 0.0
        (t0, s0), (t1, s1) = self._rate[0], self._rate[-1]
        return (s1 - s0) / (t1 - t0) if t1 > t0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Estimated seconds until the run ends at the current speed, or ``None`` when unknown."""
        rate = self.steps_per_second
        if self.finished:
            return 0.0
        if rate <= 0:
            return None
        remaining = max(t.config.steps - t.step for t in self.trainers if not t.done)
        return remaining / rate

    def start(self) -> None:
        """Start (or resume) training; does nothing once the run is over."""
        if not self.finished:
            self.status = "running"
            self._rate.clear()

    def resume(self) -> None:
        """Continue a paused run exactly where it stopped."""
        self.start()

    def pause(self) -> None:
        """Stop advancing until :meth:`resume`; the model, optimiser and history are kept."""
        if self.status == "running":
            self.status = "paused"

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

    @property
    def training_state_bytes(self) -> int:
        """Bytes of gradients and optimiser state held by every lane (0 after :meth:`release`)."""
        return sum(t.training_state_bytes for t in self.trainers)

    def step_once(self) -> int:
        """One optimisation step on every unfinished lane while not running; returns the steps taken."""
        if self.status == "running" or self.finished:
            return 0
        with torch_threads(self.threads):
            taken = self._round()
        self.status = "paused"
        self._settle()
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
        start = now = self._clock()
        self._note_rate(start)
        taken = 0
        with torch_threads(self.threads):
            while self.status == "running":
                taken += self._round()
                self._settle()
                now = self._clock()
                if now - start >= time_budget_s or (interrupted is not None and interrupted()):
                    break
        self._note_rate(now)
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
            self.message = "; ".join(f"{label}: {t.stop_reason}" if prefix else str(t.stop_reason)
                                     for label, t in diverged)
        if all(t.done for t in self.trainers):
            statuses = {t.status for t in self.trainers}
            self.status = "diverged" if "diverged" in statuses else "stopped" if "stopped" in statuses else "done"

    def _note_rate(self, now: float) -> None:
        self._rate.append((now, self.step))
        while len(self._rate) > 2 and now - self._rate[0][0] > RATE_WINDOW_S:
            self._rate.popleft()

    def snapshot_count(self) -> tuple[int, ...]:
        """Snapshots held per lane, with their latest steps (changes exactly when a new snapshot arrives)."""
        return tuple(x for t in self.trainers for x in (len(t.snapshots), t.snapshots[-1].step if t.snapshots else -1))

    def config_dict(self) -> dict:
        """The run's settings as plain JSON-ready data (task, its options, and every lane's configurations)."""
        return {
            "task": self.task.name,
            "task_options": self.task.options(),
            "runs": [
                {"label": s.label, "model_type": type(s.model_config).__name__,
                 "model": asdict(s.model_config), "training": asdict(s.train_config)}
                for s in self.specs
            ],
        }


@contextlib.contextmanager
def torch_threads(threads: int | None) -> Iterator[None]:
    """Run a block with ``threads`` torch intra-op threads in the calling thread, then restore the setting.

    The setting is per thread (and inherited by threads started meanwhile), so other sessions' script
    threads keep theirs.
    """
    if threads is None:
        yield
        return
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def thin_series(xs: Sequence[float], ys: Sequence[float], max_points: int = 400) -> tuple[np.ndarray, np.ndarray]:
    """At most ``max_points`` points of a curve: each point is the mean of an equal run of neighbours.

    Keeps redrawing a long loss curve cheap while preserving its shape (a plain stride would keep the noise).
    """
    x, y = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
    if len(x) <= max_points:
        return x, y
    edges = np.linspace(0, len(x), max_points + 1).astype(int)
    counts = np.diff(edges)
    return np.add.reduceat(x, edges[:-1]) / counts, np.add.reduceat(y, edges[:-1]) / counts


@dataclass(frozen=True)
class GuardResult:
    """The resource guard's verdict on a run before it starts."""

    ok: bool  # whether the run fits the budget
    reason: str  # what exceeds the budget, in words ("" when ok)
    suggestion: str  # what to change so that it fits ("" when ok)
    memory_bytes: int  # estimated training memory of all lanes together
    step_seconds: float  # estimated seconds of one step of all lanes together
    memory_budget_bytes: int  # the budget it was compared with
    step_budget_s: float  # the budget it was compared with


def estimate_step_seconds(flops_per_step: float, device: str, threads: int) -> float:
    """Rough wall-clock seconds of one training step with ``flops_per_step`` FLOPs on ``device``."""
    rate = GPU_FLOPS if device in ("cuda", "mps") else CPU_FLOPS_PER_THREAD * max(1, threads)
    return STEP_OVERHEAD_S + flops_per_step / rate


def check_budget(task: Task, model_config: ModelConfig, train_config: TrainConfig, *,
                 host: HostProfile | None = None, lanes: int = 1, threads: int | None = None) -> GuardResult:
    """Refuse runs whose estimated memory or step time exceed this host's budget (tighter on small hosts).

    ``lanes`` counts the configurations trained side by side (2 when comparing); each is assumed as large as
    this one. ``threads`` is the number of torch threads the run will train with (``None``: the host's
    ``limits.threads``); a page that trains each session on one thread must say so, or the step time is
    underestimated on hosts with more cores. The estimate comes from
    :func:`transformer_core.sizing.estimate_training_step`.
    """
    limits = limits_for(host if host is not None else host_profile())
    threads = limits.threads if threads is None else threads
    estimate = _estimate(task, model_config, train_config.batch_size)
    batch, device = train_config.batch_size, train_config.device
    memory, seconds = _cost(estimate, batch, batch, device, lanes, threads)
    problems = []
    if memory > limits.memory_budget_bytes:
        problems.append(f"it needs about {_mib(memory)} of memory for training, more than the "
                        f"{_mib(limits.memory_budget_bytes)} this server allows per visitor")
    if seconds > limits.step_time_budget_s:
        problems.append(f"one step would take about {seconds:.1f} s, longer than the "
                        f"{limits.step_time_budget_s:g} s allowed")
    fixes = []
    if problems:
        for smaller in SUGGESTED_BATCHES:
            if smaller < batch:
                m, t = _cost(estimate, batch, smaller, device, lanes, threads)
                if m <= limits.memory_budget_bytes and t <= limits.step_time_budget_s:
                    fixes.append(f"a batch size of {smaller}")
                    break
        fixes.append("a smaller d_model or d_ff, or fewer layers")
        if lanes > 1:
            fixes.append("turning Compare off")
    return GuardResult(
        ok=not problems, reason=("This run is too big: " + " and ".join(problems) + ".") if problems else "",
        suggestion=("Try " + ", or ".join(fixes) + ".") if problems else "",
        memory_bytes=memory, step_seconds=seconds, memory_budget_bytes=limits.memory_budget_bytes,
        step_budget_s=limits.step_time_budget_s,
    )


def _estimate(task: Task, model_config: ModelConfig, batch_size: int) -> StepEstimate:
    """The sizing estimate of one step of ``task`` with this model at ``batch_size``."""
    from .sizing import estimate_training_step

    length = None if isinstance(model_config, ViTConfig) else model_config.max_len
    return estimate_training_step(model_config, kind=SIZING_KINDS[task.family], batch_size=batch_size,
                                  seq_len=length)


def _cost(estimate: StepEstimate, estimated_batch: int, batch_size: int, device: str, lanes: int,
          threads: int) -> tuple[int, float]:
    """(memory in bytes, seconds) of one step of ``lanes`` such configurations at ``batch_size``.

    ``estimate`` was made at ``estimated_batch``. Activations and FLOPs grow linearly with the batch while
    weights, gradients and AdamW states do not, so other batch sizes are scaled from that one estimate
    instead of building the model again for each.
    """
    ratio = batch_size / estimated_batch
    memory = estimate.total_bytes - estimate.activations_bytes + round(estimate.activations_bytes * ratio)
    seconds = estimate_step_seconds(estimate.flops_per_step * ratio, device, threads)
    return lanes * memory, lanes * seconds


def _mib(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"
