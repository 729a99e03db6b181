"""The interface every built-in task implements, plus small helpers they share.

A task owns its data (generated on the fly from a ``torch.Generator``, so the same seed gives the same batches),
its loss and metric, a fixed example whose attention maps are recorded during training, and the patterns a
well-trained model is known to show on that example.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..config import TransformerConfig, ViTConfig

ModelConfig = TransformerConfig | ViTConfig
Batch = dict[str, torch.Tensor]

HELD_OUT_BUCKETS = 10  # one sequence in this many is for evaluation only (never in a training batch)
MIN_SPLIT_SEQUENCES = 1000  # with fewer possible sequences there is nothing to hold out; evaluation reuses them
_HASH_PRIME = 2_147_483_647  # 2^31 - 1: keeps the rolling hash below 2^62, inside int64
_HASH_MULTIPLIER = 1_000_003
_HASH_MIX = 2_654_435_761  # Knuth's multiplicative hash constant (about 2^32 / golden ratio)
_MAX_DRAWS = 1000  # rounds of rejection sampling before giving up (each round draws several times the batch)


@dataclass(frozen=True)
class Sample:
    """One worked example for display: what went in, what should come out, and what the model said."""

    input: str  # the input as text (digits, characters, residues or a short description of an image)
    target: str  # the right answer as text
    prediction: str  # the model's answer as text
    correct: bool  # whether the prediction counts as right for the task's metric
    detail: str = ""  # a short extra remark, e.g. "2 of 8 digits wrong" or "error 0.12"


class Task:
    """Base class of the built-in tasks; subclasses fill in the class attributes and the methods."""

    name: str = ""  # registry name, e.g. "reverse"
    title: str = ""  # human title for menus
    family: str = ""  # "seq2seq", "causal_lm", "regression" or "vision"
    description: str = ""  # one or two sentences for students
    metric_name: str = "accuracy"  # key of the headline metric in evaluate(): "accuracy", "r2" or "val_loss"
    metric_target: float = 0.99  # value of the metric that counts as "learned"
    higher_is_better: bool = True  # False for losses
    pattern_names: tuple[str, ...] = ()  # keys returned by pattern_scores(), e.g. "cross:anti_diagonal"
    notice: str | None = None  # a remark about the data for the user (e.g. "text was shortened"), or None

    def options(self) -> dict[str, Any]:
        """The keyword options that rebuild this task with ``get_task(name, **options)``."""
        return {}

    def input_vocabulary(self) -> dict[str, int] | None:
        """Character -> token id of the task's inputs when they are single characters, else None.

        The Attention Lab encodes typed text with it to take a model trained on the task apart.
        """
        return None

    def checkpoint_extra(self) -> dict[str, Any]:
        """JSON data a saved model needs besides its weights (e.g. the character vocabulary)."""
        return {}

    def train_defaults(self) -> dict[str, Any]:
        """Training settings (``TrainConfig`` fields) that reach the target quickly with the default model."""
        return {}

    def default_model_config(self) -> ModelConfig:
        """A small model configuration that reaches the target in well under a minute on a laptop CPU."""
        raise NotImplementedError

    def build_model(self, config: ModelConfig) -> nn.Module:
        """Build the model this task trains, after checking the configuration fits the data."""
        raise NotImplementedError

    def sample_batch(self, batch_size: int, generator: torch.Generator) -> Batch:
        """A fresh training batch drawn with ``generator``."""
        raise NotImplementedError

    def loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        """Scalar training loss of ``model`` on ``batch``."""
        raise NotImplementedError

    def evaluate(self, model: nn.Module, *, seed: int = 0) -> dict[str, float]:
        """Loss and metric on held-out data generated from ``seed`` (the same ``seed`` gives the same data)."""
        raise NotImplementedError

    def attention_example(self) -> dict[str, Any]:
        """The fixed small example whose attention is recorded, with axis labels under ``"labels"``."""
        raise NotImplementedError

    def attention(self, model: nn.Module, example: dict[str, Any]) -> dict[str, list[torch.Tensor]]:
        """Per-layer attention maps ``(H, T, S)`` of ``model`` on ``example``, keyed by attention kind."""
        raise NotImplementedError

    def pattern_scores(self, attention: dict[str, Any], example: dict[str, Any]) -> dict[str, np.ndarray]:
        """Per-head scores ``(L, H)`` for each known pattern; ``{}`` when the task has none."""
        return {}

    def samples(self, model: nn.Module, n: int = 8, *, seed: int = 0) -> list[Sample]:
        """``n`` held-out examples with the model's answers, for display."""
        raise NotImplementedError

    def reached_target(self, metrics: dict[str, float]) -> bool:
        """Whether ``metrics`` (from :meth:`evaluate`) meet the task's target."""
        value = metrics.get(self.metric_name)
        if value is None or not np.isfinite(value):
            return False
        return value >= self.metric_target if self.higher_is_better else value <= self.metric_target


@contextlib.contextmanager
def evaluating(model: nn.Module) -> Iterator[nn.Module]:
    """Evaluation mode without gradients; restores the previous mode afterwards."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield model
    finally:
        model.train(was_training)


def generator_for(seed: int) -> torch.Generator:
    """A CPU random generator seeded with ``seed``."""
    return torch.Generator().manual_seed(int(seed))


def model_device(model: nn.Module) -> torch.device:
    """Device of the model's parameters."""
    return next(model.parameters()).device


def to_device(batch: Batch, device: torch.device) -> Batch:
    """Move every tensor of a batch to ``device``."""
    return {k: v.to(device) for k, v in batch.items()}


def squeeze_attention(attention: dict[str, list[torch.Tensor]]) -> dict[str, list[torch.Tensor]]:
    """Drop the batch dimension of a single-example attention dict: ``(1, H, T, S)`` -> ``(H, T, S)``."""
    return {kind: [w[0].detach().float().cpu() for w in maps] for kind, maps in attention.items()}


def check_config_type(config: object, expected: type, task: Task) -> None:
    """Raise a friendly ``ValueError`` when a task gets the wrong kind of model configuration."""
    if not isinstance(config, expected):
        raise ValueError(f"The {task.title} task trains a model described by {expected.__name__}, "
                         f"not {type(config).__name__}.")


def held_out_mask(tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Which sequences belong to the evaluation-only split: a fixed rule on their content, about 1 in
    ``HELD_OUT_BUCKETS``.

    The rule hashes the first ``lengths[i]`` token ids of each row (a polynomial rolling hash, then a
    multiplicative mix), so it depends only on the sequence itself: the same digits are held out in every run,
    whatever the seed.

    Shape:
        tokens ``(B, S)`` non-negative ids, lengths ``(B,)`` -> ``(B,)`` bool.
    """
    h = lengths.to(torch.int64).clone()  # (B,); starting from the length separates "1" from "01"
    for pos in range(tokens.size(1)):
        step = (h * _HASH_MULTIPLIER + tokens[:, pos].to(torch.int64) + 1) % _HASH_PRIME
        h = torch.where(pos < lengths, step, h)
    mixed = (h * _HASH_MIX) % 2**32 >> 16  # the high bits of the product mix every input bit
    return mixed % HELD_OUT_BUCKETS == 0


def has_split(possible: int) -> bool:
    """Whether a task with ``possible`` different sequences holds some out for evaluation (enough to spare)."""
    return possible >= MIN_SPLIT_SEQUENCES


def no_split_notice(possible: int) -> str:
    """The notice of a task whose data space is too small for a held-out split."""
    return (f"Only {possible:,} different sequences exist with these settings, so evaluation uses sequences the "
            "model also trains on.")


def draw_split(draw: Callable[[int], Batch], held_out: Callable[[Batch], torch.Tensor], n: int, *,
               evaluation: bool) -> Batch:
    """``n`` rows drawn with ``draw(m)`` (a batch of ``m`` rows) keeping only those of one split.

    Args:
        draw: makes ``m`` candidate rows from the caller's generator (so the result is as reproducible as it).
        held_out: ``(B,)`` mask of the candidate rows that are evaluation-only.
        evaluation: keep the held-out rows (True) or the training rows (False).
    """
    chunk = n * (HELD_OUT_BUCKETS + 2) if evaluation else n + n // 4 + 8  # expected to suffice in one round
    kept: list[Batch] = []
    have = 0
    for _ in range(_MAX_DRAWS):
        rows = draw(chunk)
        keep = held_out(rows) == evaluation
        kept.append({k: v[keep] for k, v in rows.items()})
        have += int(keep.sum())
        if have >= n:
            return {k: torch.cat([part[k] for part in kept])[:n] for k in rows}
    raise RuntimeError("Could not draw enough sequences of the requested split; the data space is too small.")
