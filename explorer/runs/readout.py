"""What everyone reads from a live run: :class:`RunReadout`, the base of :class:`~explorer.runs.live.LiveRun`.

The pages, the registry, the places and the line, watch channels and recordings all read a run the same way,
whatever kind it is: where its lanes stand (:attr:`~RunReadout.step`, :attr:`~RunReadout.progress`), how fast it
goes (:attr:`~RunReadout.steps_per_second`, :attr:`~RunReadout.eta_s`, and the timeline a replay follows),
whether a page still drives it (:meth:`~RunReadout.driven`), and what the live view draws
(:meth:`~RunReadout.frame`). A replay (:class:`~explorer.runs.recording.ReplayRun`) answers the same questions
from its recording by overriding them, so nothing that reads a run asks which kind it is.

The readings use the run's state, which :meth:`LiveRun.reset <explorer.runs.live.LiveRun.reset>` sets and
training moves on: ``task``, ``specs``, ``trainers``, ``samples``, ``status``, and the pace's ``_rate``,
``timeline`` and ``driven_at``.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from torch import nn

from explorer.runs.frame import LaneFrame, RunFrame
from explorer.runs.pace import UNDRIVEN_S

__all__ = ["RATE_WINDOW_S", "RunReadout"]

RATE_WINDOW_S = 5.0  # steps per second are measured over this many recent seconds


class RunReadout:
    """The readings of a run's lanes, pace and picture; see the module docstring."""

    def model_at(self, lane: int) -> tuple[nn.Module, int]:
        """Lane ``lane``'s model at the step the page shows, and that step (a replay's is a recorded model)."""
        trainer = self.trainers[lane]
        return trainer.model, trainer.step

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
        """Whether the run is over (done, stopped or diverged); only :meth:`~explorer.runs.live.LiveRun.reset` starts
        it again."""
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

    def driven(self, within_s: float = UNDRIVEN_S) -> bool:
        """Whether a page loop started or advanced this run within the last ``within_s`` seconds.

        A run can say "running" with no loop left to train it: its page's script ended between a click's rerun
        request and the rerun (a tab closed or navigated at that moment). Such a run trains nothing and must
        not hold a place among the runs training at once.
        """
        return time.monotonic() - self.driven_at < within_s

    @property
    def training_state_bytes(self) -> int:
        """Bytes of gradients and optimiser state held by every lane (0 after
        :meth:`~explorer.runs.live.LiveRun.release`)."""
        return sum(t.training_state_bytes for t in self.trainers)

    def _note_rate(self, now: float) -> None:
        self._rate.append((now, self.step))
        while len(self._rate) > 2 and now - self._rate[0][0] > RATE_WINDOW_S:
            self._rate.popleft()

    @property
    def seconds_running(self) -> float:
        """Seconds this run has spent running so far (pauses not counted)."""
        return self.timeline[-1][0]

    def frame(self) -> RunFrame:
        """The run as the live view shows it now (the lists are the run's own, not copies)."""
        lanes = tuple(
            LaneFrame(s.label, t.history, t.snapshots, self.samples[i], t.last_eval, t.step, t.config.steps, t.done)
            for i, (s, t) in enumerate(zip(self.specs, self.trainers, strict=True))
        )
        return RunFrame(self.task, lanes, self.status, self.message, self.steps_per_second, self.eta_s)

    def snapshot_count(self) -> tuple[int, ...]:
        """Snapshots held per lane, with their latest steps (changes exactly when a new snapshot arrives)."""
        return tuple(x for t in self.trainers for x in (len(t.snapshots), t.snapshots[-1].step if t.snapshots else -1))

    def config_dict(self) -> dict:
        """The run's settings as plain JSON-ready data (task, its options, and every lane's configurations)."""
        return {
            "task": self.task.name,
            "task_options": self.task.options(),
            "runs": [
                {
                    "label": s.label,
                    "model_type": type(s.model_config).__name__,
                    "model": asdict(s.model_config),
                    "training": asdict(s.train_config),
                }
                for s in self.specs
            ],
        }
