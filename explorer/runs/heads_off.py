"""Switching heads off in a trained model: the held-out metric, loss and samples without them, and head importance.

A heatmap shows where a head looks; switching the head off shows whether the model needs it. For one trained model
at one training step, a :class:`HeadProbe` answers two questions and remembers the answers:

- :meth:`HeadProbe.outcome`: the task's held-out metrics (``task.evaluate(model, seed=EVAL_SEED)``, exactly as
  the trainer measures them) and sample predictions with some heads switched off (zeroed before W_O, see
  :func:`transformer_core.interventions.ablate_heads`); no heads gives the model as trained.
- :meth:`HeadProbe.importance`: for every head alone, how much the task's headline metric gets *worse* when it is
  off (accuracy lost, or validation loss gained), as a ``(layers, heads)`` map per attention stack.

:func:`probe_for` keeps one probe per lane of a live run and starts a fresh one when the lane's model has trained
further, so a paused run is measured once per step. Heads travel in links as text keys such as ``cross.1.3``
(stack, then 1-based layer and head), made by :func:`head_key` and read by :func:`parse_head_key`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import nn

from explorer.i18n import _
from explorer.runs.frame import SAMPLE_SEED, SAMPLES
from explorer.runs.threads import torch_threads
from transformer_core.interventions import HeadRef, ablate_heads, attention_stacks, head_importance
from transformer_core.tasks.base import Sample, Task
from transformer_core.training import EVAL_SEED, Trainer

__all__ = [
    "STACKS",
    "HeadProbe",
    "Importance",
    "Outcome",
    "all_head_keys",
    "head_key",
    "head_label",
    "model_heads",
    "parse_head_key",
    "probe_for",
    "refs_from_keys",
    "stacked_rows",
]

STACKS = ("encoder", "decoder", "cross")  # attention stacks in the order they are shown


def head_key(ref: HeadRef) -> str:
    """The text of a head in a link: stack, 1-based layer and head, e.g. ``("cross", 0, 2)`` -> ``"cross.1.3"``."""
    stack, layer, head = ref
    return f"{stack}.{layer + 1}.{head + 1}"


def parse_head_key(text: str) -> HeadRef:
    """The head named by ``text`` (see :func:`head_key`); ``ValueError`` with a friendly message otherwise."""
    parts = text.split(".")
    if len(parts) != 3 or parts[0] not in STACKS or not all(p.isdigit() and int(p) >= 1 for p in parts[1:]):
        raise ValueError(
            _(
                "{text} does not name a head: write the stack ({stacks}), then the layer and the head "
                "counted from 1, e.g. cross.1.3."
            ).format(text=repr(text), stacks=", ".join(STACKS))
        )
    return parts[0], int(parts[1]) - 1, int(parts[2]) - 1


def all_head_keys(max_layers: int, max_heads: int) -> tuple[str, ...]:
    """Every head key a model of at most ``max_layers`` layers and ``max_heads`` heads per stack can have."""
    return tuple(head_key((s, layer, head)) for s in STACKS for layer in range(max_layers) for head in range(max_heads))


def head_label(ref: HeadRef) -> str:
    """A head as the page names it, e.g. ``("cross", 0, 2)`` -> ``"cross L1 H3"``."""
    stack, layer, head = ref
    return f"{stack} L{layer + 1} H{head + 1}"


def model_heads(model: nn.Module) -> dict[str, tuple[int, int]]:
    """Layers and heads per attention stack of ``model``, in :data:`STACKS` order."""
    stacks = attention_stacks(model)
    return {s: (len(stacks[s]), stacks[s][0].n_heads) for s in STACKS if stacks.get(s)}


def stacked_rows(maps: Mapping[str, np.ndarray]) -> tuple[np.ndarray, list[str]]:
    """Per-stack ``(layers, heads)`` maps as one matrix, stack under stack, and a label per row ("cross L1").

    Stacks with fewer heads than the widest are padded with NaN (drawn grey).
    """
    shown = [s for s in STACKS if s in maps] + [s for s in maps if s not in STACKS]
    width = max(maps[s].shape[1] for s in shown)
    rows = [
        np.pad(np.asarray(maps[s], dtype=float), ((0, 0), (0, width - maps[s].shape[1])), constant_values=np.nan)
        for s in shown
    ]
    names = [f"{s} L{layer + 1}" for s in shown for layer in range(maps[s].shape[0])]
    return np.concatenate(rows), names


@dataclass(frozen=True)
class Outcome:
    """The model measured with some heads switched off (none: the model as trained)."""

    heads: tuple[HeadRef, ...]  # the heads switched off, sorted
    metrics: dict[str, float]  # task.evaluate on the held-out data: "loss" and the task's metrics
    samples: tuple[Sample, ...]  # held-out sample predictions (the live view's examples)


@dataclass(frozen=True)
class Importance:
    """How much the task's headline metric gets worse when each head alone is switched off."""

    metric_name: str  # the metric watched, e.g. "accuracy"
    base: float  # its value with every head on
    drop: dict[str, np.ndarray]  # stack -> (layers, heads): the metric's loss of quality; > 0 = the model needs it

    def top(self) -> tuple[HeadRef, float]:
        """The head whose loss costs most, and what it costs."""
        best = max(
            ((s, int(i), int(j)) for s, z in self.drop.items() for i, j in np.ndindex(z.shape) if np.isfinite(z[i, j])),
            key=lambda r: self.drop[r[0]][r[1], r[2]],
        )
        return best, float(self.drop[best[0]][best[1], best[2]])

    def of(self, ref: HeadRef) -> float:
        """What switching ``ref`` off alone costs."""
        return float(self.drop[ref[0]][ref[1], ref[2]])


class HeadProbe:
    """One trained model at one step, measured with heads switched off; every answer is remembered.

    Args:
        task: the task the model was trained on (its held-out data, metrics and samples).
        model: the trained model; it is never changed.
        step: the training step the model is at (only to tell probes apart).
        lock: held while measuring, e.g. the live run's lock, so no training step runs at the same time.
        threads: torch intra-op threads while measuring (as the live run trains with); ``None`` keeps torch's.
        sampling: keyword arguments for ``task.samples`` (the language model's temperature and top-k).
    """

    def __init__(
        self,
        task: Task,
        model: nn.Module,
        step: int,
        *,
        lock: AbstractContextManager | None = None,
        threads: int | None = None,
        sampling: Mapping[str, Any] | None = None,
    ) -> None:
        self.task, self.model, self.step, self.threads = task, model, step, threads
        self.sampling = dict(sampling or {})
        self._lock = lock if lock is not None else nullcontext()
        self._guard = threading.Lock()  # the remembered answers; two reruns may ask at once
        self._outcomes: dict[tuple[HeadRef, ...], Outcome] = {}
        self._importance: Importance | None = None
        self._scores: dict[str, np.ndarray] | None = None

    @property
    def heads(self) -> dict[str, tuple[int, int]]:
        """Layers and heads per attention stack of the model."""
        return model_heads(self.model)

    def known(self, heads: Iterable[HeadRef]) -> tuple[HeadRef, ...]:
        """``heads`` that exist in this model, sorted and without repeats."""
        shape = self.heads
        return tuple(sorted({h for h in heads if h[0] in shape and h[1] < shape[h[0]][0] and h[2] < shape[h[0]][1]}))

    def outcome(self, heads: Iterable[HeadRef] = ()) -> Outcome:
        """Held-out metrics and samples with ``heads`` switched off (heads this model lacks are ignored)."""
        chosen = self.known(heads)
        with self._guard:
            if chosen in self._outcomes:
                return self._outcomes[chosen]
        with self._lock, torch_threads(self.threads), ablate_heads(self.model, chosen):
            metrics = self.task.evaluate(self.model, seed=EVAL_SEED)
            samples = self.task.samples(self.model, SAMPLES, seed=SAMPLE_SEED, **self.sampling)
        result = Outcome(chosen, dict(metrics), tuple(samples))
        with self._guard:
            return self._outcomes.setdefault(chosen, result)

    def pattern_scores(self) -> dict[str, np.ndarray]:
        """The task's pattern scores (pattern key -> ``(layers, heads)``) of the model as it is, every head on."""
        if self._scores is None:
            example = self.task.attention_example()
            with self._lock, torch_threads(self.threads):
                scores = self.task.pattern_scores(self.task.attention(self.model, example), example)
            self._scores = {k: np.asarray(v, dtype=float) for k, v in scores.items()}
        return self._scores

    @property
    def measured_importance(self) -> Importance | None:
        """The importance map if it was measured already, else ``None`` (never measures)."""
        return self._importance

    def importance(self, progress: Callable[[int, int], None] | None = None) -> Importance:
        """Every head's importance for the task's headline metric (measured once, then remembered)."""
        if self._importance is not None:
            return self._importance
        name, sign = self.task.metric_name, 1.0 if self.task.higher_is_better else -1.0

        def score(model: nn.Module) -> float:
            return sign * self.task.evaluate(model, seed=EVAL_SEED)[name]

        with self._lock, torch_threads(self.threads):
            change = head_importance(self.model, score, progress=progress)
        base = self.outcome().metrics[name]
        result = Importance(name, float(base), {s: -change[s] for s in STACKS if s in change})
        with self._guard:
            self._importance = self._importance or result
        return self._importance


def probe_for(
    store: MutableMapping[int, tuple[Any, HeadProbe]],
    lane: int,
    trainer: Trainer,
    *,
    lock: AbstractContextManager | None = None,
    threads: int | None = None,
    sampling: Mapping[str, Any] | None = None,
    at: tuple[nn.Module, int] | None = None,
) -> HeadProbe:
    """Lane ``lane``'s probe kept in ``store``: the same one while its trainer stays at the same step.

    ``store`` maps lane -> (weak reference to the trainer, probe); a new run, a further step, another model
    (``at``: the model and step to measure instead of the trainer's own, e.g. a paused replay's recorded model)
    or other sampling settings replace the entry.
    """
    model, step = at if at is not None else (trainer.model, trainer.step)
    kept = store.get(lane)
    if kept is not None:
        ref, probe = kept
        if ref() is trainer and probe.model is model and probe.step == step and probe.sampling == dict(sampling or {}):
            return probe
    probe = HeadProbe(trainer.task, model, step, lock=lock, threads=threads, sampling=sampling)
    store[lane] = (weakref.ref(trainer), probe)
    return probe


def refs_from_keys(keys: Sequence[str]) -> list[HeadRef]:
    """The heads of link keys (see :func:`head_key`); keys that name no head are left out."""
    refs = []
    for key in keys:
        try:
            refs.append(parse_head_key(key))
        except ValueError:
            continue
    return refs
