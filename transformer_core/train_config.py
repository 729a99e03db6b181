"""A training run's settings and what they decide: the seeded initial model, the optimiser, the learning rates.

``TrainConfig`` is frozen and checked when made, so a bad setting fails with a readable message before any
model is built. Everything here follows from the settings alone (and the seed), which is what lets a paused,
resumed or repeated run give exactly the same curve; the step-by-step ``Trainer`` in ``training.py`` uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from torch import nn

from .optim import AdamW
from .seeding import seeded, stream_seed
from .tasks.base import ModelConfig, Task

SCHEDULES = ("constant", "cosine")
MIN_LR_FRACTION = 0.1  # the cosine schedule ends at this fraction of the peak learning rate


@dataclass(frozen=True)
class TrainConfig:
    """Settings of one training run."""

    steps: int = 300  # optimisation steps in the whole run
    batch_size: int = 64  # examples per step
    lr: float = 3e-3  # peak learning rate of AdamW
    schedule: str = "constant"  # "constant", or "cosine" decay to 10% of lr after the warm-up
    warmup_steps: int = 0  # steps over which the learning rate rises linearly from 0 to lr
    grad_clip: float = 1.0  # largest allowed gradient norm; 0 turns clipping off
    weight_decay: float = 0.01  # AdamW weight decay on weight matrices (not on biases, norms)
    seed: int = 0  # seed of the initial weights, the batches and dropout
    eval_every: int = 25  # evaluate on held-out data every this many steps (and at the end); 0 = only at the end
    snapshot_every: int = 25  # record attention on the fixed example every this many steps; 0 = never
    max_snapshots: int = 200  # when exceeded, every other snapshot is dropped and the interval doubles
    device: str = "cpu"  # "cpu", "cuda" or "mps"

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "max_snapshots"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)} must be at least 1.")
        for name in ("warmup_steps", "eval_every", "snapshot_every"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}={getattr(self, name)} cannot be negative.")
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr={self.lr} must be a positive number (try 3e-3).")
        if self.grad_clip < 0 or self.weight_decay < 0:
            raise ValueError("grad_clip and weight_decay cannot be negative.")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule={self.schedule!r} is not one of {', '.join(SCHEDULES)}.")
        if self.warmup_steps > self.steps:
            raise ValueError(f"warmup_steps={self.warmup_steps} is longer than the whole run ({self.steps} steps).")


def default_train_config(task: Task, **overrides: Any) -> TrainConfig:
    """The task's recommended settings, with ``overrides`` (``TrainConfig`` field names) applied on top."""
    names = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise ValueError(f"Unknown training setting(s): {', '.join(unknown)}.")
    settings = {**task.train_defaults(), **overrides}
    if "warmup_steps" not in overrides and "warmup_steps" in settings:
        # A shorter run than the task recommends keeps a proportionate warm-up (at most a tenth of the run).
        settings["warmup_steps"] = min(settings["warmup_steps"], settings.get("steps", TrainConfig.steps) // 10)
    return TrainConfig(**settings)


def learning_rate(config: TrainConfig, step: int) -> float:
    """Learning rate for the step with 0-based index ``step``: linear warm-up, then constant or cosine."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return config.lr
    progress = (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps)
    low = config.lr * MIN_LR_FRACTION
    return low + 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0))) * (config.lr - low)


def build_seeded_model(task: Task, model_config: ModelConfig, seed: int) -> nn.Module:
    """``task.build_model(model_config)`` with initial weights that depend only on ``seed``."""
    with seeded(stream_seed(seed, 0)):
        return task.build_model(model_config)


def make_optimizer(model: nn.Module, config: TrainConfig) -> AdamW:
    """AdamW with weight decay on weight matrices and embeddings only (not on biases, norms, CLS vectors)."""
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": config.weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
    return AdamW(groups, lr=config.lr, betas=(0.9, 0.99))
