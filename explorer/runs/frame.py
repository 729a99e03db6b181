"""What the live view draws of a run: a :class:`RunFrame`, the same for its owner, a watcher and a replay.

A frame is plain data: the task, and per configuration ("lane") the metrics history, the attention snapshots,
the sample predictions made so far and where training stands. The owner's frame is made from the
:class:`~explorer.runs.live.LiveRun` itself (:meth:`~explorer.runs.live.LiveRun.frame`, no copies), a watcher's
from what the owner published (:mod:`explorer.runs.watch`), and a replay's from a recording cut at the replayed step
(:meth:`RunFrame.upto`). The live view draws any of them the same way, so watching and replaying show exactly
what training showed.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from transformer_core.tasks.base import Sample, Task
from transformer_core.training import Snapshot

__all__ = ["SAMPLES", "SAMPLE_SEED", "LaneFrame", "RunFrame", "SampleSet", "thin_to"]

SAMPLES = 6  # sample predictions the live view shows per lane and evaluation (its owner's, a watcher's, a lesson's)
SAMPLE_SEED = 7  # the same held-out examples at every evaluation, so students can follow them


@dataclass(frozen=True)
class SampleSet:
    """The sample predictions of one lane's model at one evaluation."""

    step: int  # the step of the model that made them
    caption: str  # how they were written, e.g. " · temperature 0.8, top-k 5" ("" for tasks without sampling)
    items: tuple[Sample, ...]  # the worked examples, in order


@dataclass(frozen=True)
class LaneFrame:
    """One configuration of a run as shown: what it measured and where it stands."""

    label: str  # the lane's legend, e.g. "A" or "B · 1 layer, 4 heads, no positions, pre-norm"
    history: Sequence[dict[str, float]]  # one row per step (see Trainer.history)
    snapshots: Sequence[Snapshot]  # attention on the task's fixed example, oldest first
    samples: Sequence[SampleSet]  # sample predictions per evaluation, oldest first
    last_eval: dict[str, float] | None  # the latest held-out metrics
    step: int  # steps completed
    steps: int  # steps planned
    done: bool  # whether this lane's training is over


@dataclass(frozen=True)
class RunFrame:
    """A run as the live view shows it; see the module docstring."""

    task: Task  # what every lane trains on
    lanes: tuple[LaneFrame, ...]  # one or two configurations
    status: str  # one of explorer.runs.live.STATUSES
    message: str | None = None  # why the run ended early, in words
    steps_per_second: float = 0.0  # training speed of one lane, wall clock (0 when unknown)
    eta_s: float | None = None  # estimated seconds left, None when unknown
    extra: dict[str, Any] = field(default_factory=dict)  # what the page adds (e.g. "replay": True)

    @property
    def labels(self) -> list[str]:
        """The lanes' labels, in order."""
        return [lane.label for lane in self.lanes]

    @property
    def step(self) -> int:
        """Steps completed by the furthest lane."""
        return max(lane.step for lane in self.lanes)

    @property
    def total_steps(self) -> int:
        """Steps of the longest lane's whole run."""
        return max(lane.steps for lane in self.lanes)

    @property
    def progress(self) -> float:
        """Fraction of all lanes' planned steps that are done (finished lanes count as complete)."""
        planned = sum(lane.steps for lane in self.lanes)
        done = sum(lane.steps if lane.done else lane.step for lane in self.lanes)
        return min(1.0, done / planned) if planned else 1.0

    def snapshot_count(self) -> tuple[int, ...]:
        """Snapshots held per lane, with their latest steps (changes exactly when a new snapshot arrives)."""
        return tuple(x for lane in self.lanes
                     for x in (len(lane.snapshots), lane.snapshots[-1].step if lane.snapshots else -1))

    def upto(self, step: int, *, status: str, steps_per_second: float = 0.0,
             eta_s: float | None = None) -> RunFrame:
        """This frame as it was when the furthest lane had done ``step`` steps (a replay's frame)."""
        return replace(self, lanes=tuple(_lane_upto(lane, step) for lane in self.lanes), status=status,
                       message=self.message if status == "diverged" else None,
                       steps_per_second=steps_per_second, eta_s=eta_s)


def _lane_upto(lane: LaneFrame, step: int) -> LaneFrame:
    """``lane`` cut at ``step``: the rows, snapshots and samples made by then."""
    rows = lane.history[: bisect.bisect_right([r["step"] for r in lane.history], step)]
    evals = [r for r in rows if "eval_loss" in r]
    last_eval = None
    if evals:
        last_eval = {("loss" if k == "eval_loss" else k): v for k, v in evals[-1].items()
                     if k not in ("step", "loss", "lr", "seconds")}
    reached = rows[-1]["step"] if rows else 0
    return replace(lane, history=rows, snapshots=[s for s in lane.snapshots if s.step <= reached],
                   samples=[s for s in lane.samples if s.step <= reached], last_eval=last_eval, step=reached,
                   done=lane.done and reached >= (lane.history[-1]["step"] if lane.history else 0))


def thin_to(snapshots: list[Snapshot], kept_steps: Sequence[int]) -> list[Snapshot]:
    """The snapshots whose steps are in ``kept_steps`` (a trainer thins its snapshots as they grow)."""
    kept = set(kept_steps)
    return [s for s in snapshots if s.step in kept]
