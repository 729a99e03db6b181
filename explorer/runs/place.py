"""Where a session's run trains, behind one interface.

:class:`~explorer.runs.session.RunSession` never calls a run's training methods itself: it asks its
:class:`TrainingPlace`. Today that is :class:`ThisThread`, the calling thread of this process (the page's
script thread, between two redraws). A worker process would be another ``TrainingPlace``: it receives the same
calls, trains there, and the session and the pages stay as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from explorer.runs.live import LiveRun

__all__ = ["ThisThread", "TrainingPlace"]


class TrainingPlace(Protocol):
    """Trains runs: a slice of time, one step, and the sample predictions after an evaluation."""

    def advance(self, run: LiveRun, budget_s: float, interrupted: Callable[[], bool] | None = None) -> int:
        """Train ``run`` for about ``budget_s`` seconds while it runs; returns the steps taken."""

    def step_once(self, run: LiveRun) -> int:
        """One optimisation step of a run that is not running; returns the steps taken."""

    def write_samples(self, run: LiveRun, sampling: dict[str, Any], caption: str, count: int, seed: int,
                      interrupted: Callable[[], bool] | None = None) -> bool:
        """Write the sample predictions of a new evaluation; returns whether any were added."""


class ThisThread:
    """Trains in the calling thread of this process, with the run's own torch thread count."""

    def advance(self, run: LiveRun, budget_s: float, interrupted: Callable[[], bool] | None = None) -> int:
        return run.advance(budget_s, interrupted=interrupted)

    def step_once(self, run: LiveRun) -> int:
        return run.step_once()

    def write_samples(self, run: LiveRun, sampling: dict[str, Any], caption: str, count: int, seed: int,
                      interrupted: Callable[[], bool] | None = None) -> bool:
        return run.update_samples(sampling, caption, count, seed, interrupted=interrupted)
