"""The training lessons' runs as live runs, so that they can be shared live and replayed like any other.

:func:`reverse_lesson_settings` gives the lessons' reverse-task runs (with and without positional encoding, one
lane each) as a task and run specs, which a :class:`~explorer.runs.session.RunSession` builds into a run like any
other; :func:`reverse_lesson_run` builds them as a :class:`~explorer.runs.live.LiveRun` directly. Its lanes train
the same models on the same batches as :func:`explorer.lessons.experiments.train_reverse_lesson`, so a page can
publish the run to a watch channel while it trains, record it, and replay the recording for the next student;
:func:`summaries` turns the finished lanes into the plain-data :class:`~explorer.lessons.experiments.VariantRun` s
the lessons draw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from explorer.i18n import N_
from explorer.lessons.experiments import (
    REVERSE_OPTIONS,
    REVERSE_STEPS,
    REVERSE_TASK,
    REVERSE_VARIANTS,
    VariantRun,
    summarize,
)
from explorer.runs.live import LIVE_THREADS, LiveRun, RunSpec
from explorer.runs.place import TrainingPlace
from transformer_core.tasks import get_task
from transformer_core.tasks.base import Task
from transformer_core.training import default_train_config

__all__ = ["LANE_TITLES", "reverse_lesson_run", "reverse_lesson_settings", "summaries"]

# legends a watcher sees: English, in the lanes' names (which recordings and links keep), marked for translation
LANE_TITLES = {"sinusoidal": N_("sinusoidal positions"), "none": N_("no positions")}


def reverse_lesson_settings(
    labels: Sequence[str], *, steps: int = REVERSE_STEPS, seed: int = 0
) -> tuple[Task, list[RunSpec]]:
    """The task and one run spec per lane of the lessons' reverse-task runs for the given ``REVERSE_VARIANTS``
    labels (one or two); ``ValueError`` for other labels."""
    unknown = [label for label in labels if label not in REVERSE_VARIANTS]
    if unknown or not 1 <= len(labels) <= 2:
        raise ValueError(f"Choose one or two of {', '.join(REVERSE_VARIANTS)}, not {', '.join(labels) or 'none'}.")
    task = get_task(REVERSE_TASK, **REVERSE_OPTIONS)
    every = max(1, steps // 6)
    train = default_train_config(task, steps=steps, seed=seed, eval_every=every, snapshot_every=every)
    specs = [
        RunSpec(
            f"{'AB'[i]} · {LANE_TITLES[label]}", replace(task.default_model_config(), **REVERSE_VARIANTS[label]), train
        )
        for i, label in enumerate(labels)
    ]
    return task, specs


def reverse_lesson_run(
    labels: Sequence[str], *, steps: int = REVERSE_STEPS, seed: int = 0, place: TrainingPlace | None = None
) -> LiveRun:
    """The lessons' reverse-task runs for ``labels`` as one live run, trained in ``place`` (this thread when not
    given) before visitors' own runs: a lesson is shown to a class."""
    task, specs = reverse_lesson_settings(labels, steps=steps, seed=seed)
    return place.new_run(task, specs, shared=True) if place is not None else LiveRun(task, specs, threads=LIVE_THREADS)


def summaries(run: LiveRun, labels: Sequence[str]) -> dict[str, VariantRun]:
    """The finished lanes of ``run`` (built for ``labels``) as the lessons' plain-data summaries."""
    return {label: summarize(label, trainer) for label, trainer in zip(labels, run.trainers, strict=True)}
