"""Where a session's runs train, behind one interface: a :class:`TrainingPlace` creates runs and puts them first.

A place decides only where a new run lives: :class:`~explorer.runs.worker.InWorker` makes a
:class:`~explorer.runs.worker.WorkerRun`, trained in a trainer process of its own (the default: a run trained
beside the other sessions' script threads shares their interpreter lock, and a class redrawing starves it), and
:class:`ThisThread` a plain :class:`~explorer.runs.live.LiveRun`, trained on the thread that advances it (the
page's script thread, between two redraws). Everything after that goes to the run itself, whichever kind it is
(:meth:`~explorer.runs.live.LiveRun.advance`, ``step_once``, ``update_samples``), so no place forwards calls;
:func:`default_place` picks one from ``TE_TRAINER`` (``process``, the default, ``thread``, or ``redis`` for
trainers on other hosts). Where trainer processes cannot start (a platform without a fork server, or one that
failed to start), ``process`` runs train on the calling thread, and the log says why once.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Protocol

from explorer.runs.live import LIVE_THREADS, LiveRun, RunSpec
from transformer_core.tasks.base import Task

__all__ = ["PLACES", "ThisThread", "TrainingPlace", "default_place"]

PLACES = ("process", "thread", "redis")  # the values of TE_TRAINER


class TrainingPlace(Protocol):
    """Creates runs where they train, and puts the ones others watch first.

    ``overhead_bytes``: memory a run takes here besides its model and training state (the resource guard counts it).
    """

    overhead_bytes: int

    def new_run(self, task: Task, specs: Sequence[RunSpec], *, shared: bool = False) -> LiveRun:
        """A run of ``specs`` on ``task`` that trains here (``shared``: watched by others, or a lesson)."""

    def prioritize(self, run: LiveRun) -> None:
        """Put ``run`` before visitors' own runs: others watch it (it is shared, or a lesson on the projector)."""


class ThisThread:
    """Trains in the calling thread of this process, with the run's own torch thread count."""

    overhead_bytes = 0  # the web server is there anyway

    def new_run(self, task: Task, specs: Sequence[RunSpec], *, shared: bool = False) -> LiveRun:
        return LiveRun(task, specs, threads=LIVE_THREADS)

    def prioritize(self, run: LiveRun) -> None:
        """Threads of one process share its priority: nothing to do."""


def default_place() -> TrainingPlace:
    """The place ``TE_TRAINER`` names: ``process`` (the default: a trainer process per run, or this thread where
    none can start), ``thread`` (the calling thread), or ``redis`` (trainers on any host that reaches
    ``TE_REDIS_URL``: ``python -m explorer.runs.trainer``)."""
    choice = os.environ.get("TE_TRAINER", "process").strip().lower() or "process"
    if choice not in PLACES:
        raise ValueError(f"TE_TRAINER={choice!r}: use one of {', '.join(PLACES)}.")
    if choice == "thread":
        return ThisThread()
    from explorer.runs.trainer_link import mark_unavailable, unavailable

    if choice == "process" and (why := unavailable()) is not None:
        mark_unavailable(why)  # logged once
        return ThisThread()
    from explorer.runs.worker import InWorker  # the trainer processes start only when a run first trains

    return InWorker(remote=choice == "redis")
