"""The computations behind the guided lessons: small, real experiments with the library's own models.

- :func:`causal_attention` runs a randomly initialised decoder on a few tokens and returns its attention, to show
  that a causal mask leaves exactly zero weight on future tokens.
- :func:`scaling_demo` shows why attention divides the scores by √d_k before the softmax.
- :func:`train_variants` trains one task several times with different model settings (for example with and
  without positional encoding) and returns plain-data summaries for display.
- :func:`train_reverse_lesson` is the run the training lessons share (reverse 8 digits, 120 steps);
  :func:`train_reverse_model` is the same run with its trained model kept (to switch its heads off);
  :func:`output_labels` names the decoder's rows by the digit each one writes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch

from transformer_core.config import TransformerConfig
from transformer_core.models import CausalLM
from transformer_core.tasks import Task, get_task
from transformer_core.training import TrainConfig, Trainer, default_train_config, seeded

REVERSE_TASK = "reverse"  # the task of the two training lessons
REVERSE_OPTIONS = {"min_len": 8}  # every sequence 8 digits long, as the lessons say
REVERSE_STEPS = 120  # steps per run: with positions, every sequence is reversed exactly by about step 100
REVERSE_VARIANTS = {"sinusoidal": {"positional": "sinusoidal"}, "none": {"positional": "none"}}


@torch.no_grad()
def causal_attention(ids: Sequence[int], *, vocab_size: int = 1024, d_model: int = 32, n_heads: int = 2,
                     seed: int = 0) -> np.ndarray:
    """Attention weights of the first layer of a random one-layer decoder (GPT style) on ``ids``.

    Shape:
        returns ``(H, T, T)``; row ``t`` is the distribution of query ``t`` over the keys ``0..T-1``.
    """
    if not ids:
        raise ValueError("Give at least one token.")
    if max(ids) >= vocab_size or min(ids) < 0:
        raise ValueError(f"Token ids must lie in 0..{vocab_size - 1}.")
    config = TransformerConfig(vocab_size=vocab_size, max_len=len(ids), d_model=d_model, n_heads=n_heads,
                               n_layers=1, d_ff=2 * d_model)
    with seeded(seed):
        model = CausalLM(config).eval()
    _, attention = model.forward_with_attention(torch.tensor([list(ids)]))
    return attention["decoder"][0][0].numpy()  # (1, H, T, T) -> (H, T, T)


@dataclass(frozen=True)
class ScalingDemo:
    """One query against ``n_keys`` random keys, with and without the 1/√d_k factor."""

    d_k: int  # size of each query and key vector
    scores: np.ndarray  # (n_keys,) raw dot products q·k
    weights_unscaled: np.ndarray  # (n_keys,) softmax(q·k)
    weights_scaled: np.ndarray  # (n_keys,) softmax(q·k / √d_k), what attention uses

    @property
    def score_std(self) -> float:
        """Spread of the raw scores; grows like √d_k."""
        return float(np.std(self.scores))


def scaling_demo(d_k: int, n_keys: int = 8, seed: int = 0) -> ScalingDemo:
    """Score one random query against random keys whose entries have mean 0 and variance 1."""
    if d_k < 1 or n_keys < 2:
        raise ValueError("d_k must be at least 1 and there must be at least 2 keys.")
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(d_k)
    keys = rng.standard_normal((n_keys, d_k))
    scores = keys @ q  # (n_keys,)
    return ScalingDemo(d_k, scores, _softmax(scores), _softmax(scores / math.sqrt(d_k)))


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max())
    return e / e.sum()


@dataclass(frozen=True)
class VariantRun:
    """The outcome of one short training run, as plain data (no model is kept)."""

    label: str  # name of the variant, e.g. "sinusoidal"
    steps: list[int]  # evaluation steps
    metric: list[float]  # the task's metric at those steps
    losses: list[float]  # training loss at every step
    final_metric: float  # metric after the last step
    seconds: float  # training time
    snapshot_steps: list[int]  # steps of the attention snapshots
    snapshots: list[dict[str, np.ndarray]]  # kind -> (L, H, T, S) attention on the task's fixed example
    scores: list[dict[str, np.ndarray]]  # pattern key -> (L, H) score, per snapshot
    labels: dict[str, Any]  # axis labels of the fixed example, per attention kind


def summarize(label: str, trainer: Trainer) -> VariantRun:
    """The plain-data summary of a finished (or stopped) trainer."""
    metric_name = trainer.task.metric_name
    evals = [row for row in trainer.history if metric_name in row]
    return VariantRun(
        label=label, steps=[int(r["step"]) for r in evals], metric=[float(r[metric_name]) for r in evals],
        losses=[float(r["loss"]) for r in trainer.history],
        final_metric=float(evals[-1][metric_name]) if evals else math.nan, seconds=trainer.seconds,
        snapshot_steps=[s.step for s in trainer.snapshots], snapshots=[s.attention for s in trainer.snapshots],
        scores=[s.scores for s in trainer.snapshots], labels=trainer.example.get("labels", {}),
    )


def train_variants(task_name: str, variants: Mapping[str, Mapping[str, Any]], *, steps: int, seed: int = 0,
                   progress: Callable[[str, int, int], None] | None = None,
                   task_options: Mapping[str, Any] | None = None) -> dict[str, VariantRun]:
    """Train the task's default model once per variant, changing only the given model settings.

    Args:
        variants: label -> ``TransformerConfig`` fields to change, e.g. ``{"none": {"positional": "none"}}``.
        steps: optimisation steps per run (same seed, same batches for every variant).
        progress: called as ``progress(label, step, steps)`` after every step.
    """
    task = get_task(task_name, **dict(task_options or {}))
    train_config = _lesson_config(task, steps, seed)
    return {label: summarize(label, _trained(task, label, changes, train_config, progress))
            for label, changes in variants.items()}


def _trained(task: Task, label: str, changes: Mapping[str, Any], train_config: TrainConfig,
             progress: Callable[[str, int, int], None] | None) -> Trainer:
    """The task's default model with ``changes``, trained to the end (``progress`` as in :func:`train_variants`)."""
    trainer = Trainer(task, replace(task.default_model_config(), **changes), train_config)
    steps = train_config.steps
    report = None if progress is None else (lambda row: progress(label, int(row["step"]), steps))
    trainer.run(callback=report)
    return trainer


def _lesson_config(task: Task, steps: int, seed: int) -> TrainConfig:
    """A lesson run's training: ``steps`` steps, evaluated and snapshotted six times."""
    every = max(1, steps // 6)
    return default_train_config(task, steps=steps, seed=seed, eval_every=every, snapshot_every=every)


def train_reverse_model(*, steps: int = REVERSE_STEPS, seed: int = 0,
                        progress: Callable[[str, int, int], None] | None = None) -> Trainer:
    """The lessons' reverse run with sinusoidal positions (as :func:`train_reverse_lesson`), keeping its model."""
    task = get_task(REVERSE_TASK, **REVERSE_OPTIONS)
    return _trained(task, "sinusoidal", REVERSE_VARIANTS["sinusoidal"], _lesson_config(task, steps, seed), progress)


def train_reverse_lesson(labels: Sequence[str], *, steps: int = REVERSE_STEPS, seed: int = 0,
                         progress: Callable[[str, int, int], None] | None = None) -> dict[str, VariantRun]:
    """The lessons' reverse-task runs for the given ``REVERSE_VARIANTS`` labels (e.g. ``["sinusoidal"]``)."""
    unknown = [label for label in labels if label not in REVERSE_VARIANTS]
    if unknown:
        raise ValueError(f"Unknown lesson variant(s): {', '.join(unknown)}; choose from {', '.join(REVERSE_VARIANTS)}.")
    return train_variants(REVERSE_TASK, {label: REVERSE_VARIANTS[label] for label in labels}, steps=steps,
                          seed=seed, progress=progress, task_options=REVERSE_OPTIONS)


def output_labels(decoder_input: Sequence[str]) -> list[str]:
    """Row labels of a seq2seq run's cross-attention: the token each decoder position *writes*.

    The decoder reads ``BOS d1 … dn`` and writes ``d1 … dn EOS``: row ``t`` is named by what it predicts,
    not by the token it reads, so the labels match "output position" in the lessons' text.
    """
    return [*decoder_input[1:], "end"]
