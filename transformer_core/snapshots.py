"""Attention snapshots: the model's attention on the task's fixed example, and its pattern scores, at one step.

A run keeps a series of them (the time-lapse): float16 maps are small enough to keep hundreds, and the scores
say how strongly each head shows the task's known patterns at that step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from torch import nn

from .tasks.base import Task


@dataclass(frozen=True)
class Snapshot:
    """Attention on the task's fixed example at one step."""

    step: int  # optimisation steps completed when it was taken
    attention: dict[str, np.ndarray]  # kind ("encoder", "decoder", "cross") -> float16 (L, H, T, S)
    scores: dict[str, np.ndarray]  # pattern key -> (L, H) scores in [0, 1]


def take_snapshot(task: Task, model: nn.Module, example: dict[str, Any], step: int) -> Snapshot:
    """Capture the attention maps of ``model`` on ``example`` and score the task's known patterns."""
    attention = task.attention(model, example)
    scores = task.pattern_scores(attention, example)
    arrays = {kind: np.stack([w.numpy() for w in maps]).astype(np.float16) for kind, maps in attention.items()}
    return Snapshot(step, arrays, {k: np.asarray(v, dtype=np.float32) for k, v in scores.items()})
