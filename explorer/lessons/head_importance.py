"""The experiment of the lesson "Which head does the work?": switch heads of the trained reverse model off.

:func:`head_lesson_probe` trains the lessons' reverse model (8 digits, 2 layers, 4 heads in each of the encoder
self-attention, the decoder self-attention and the cross-attention) and wraps it in a
:class:`~explorer.runs.heads_off.HeadProbe`; :func:`findings` measures what the lesson's reveal reports: the
cost of the cross-attention head with the clearest anti-diagonal, the head the model needs most, and what the
four cross-attention heads of the first layer cost together compared with one at a time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from explorer.lessons.experiments import REVERSE_STEPS, train_reverse_model
from explorer.runs.heads_off import HeadProbe, HeadRef

PATTERN = "cross:anti_diagonal"  # the pattern that solves reversing: output digit i reads input digit n - i


def head_lesson_probe(*, steps: int = REVERSE_STEPS, seed: int = 0,
                      progress: Callable[[str, int, int], None] | None = None) -> HeadProbe:
    """The lesson's trained reverse model, ready to have heads switched off."""
    trainer = train_reverse_model(steps=steps, seed=seed, progress=progress)
    return HeadProbe(trainer.task, trainer.model, trainer.step)


@dataclass(frozen=True)
class Findings:
    """What switching heads of the lesson's model off shows (accuracies in 0..1)."""

    accuracy: float  # every head on
    clearest: HeadRef  # the cross-attention head with the highest anti-diagonal score
    clearest_score: float  # ...that score
    clearest_cost: float  # accuracy lost with that head alone off
    needed: HeadRef  # the head (of any stack) whose loss alone costs most
    needed_cost: float  # ...what it costs
    first_layer_cost: float  # accuracy lost with the four cross-attention heads of layer 1 off together
    first_layer_sum: float  # the sum of those four heads' costs one at a time


def findings(probe: HeadProbe) -> Findings:
    """Measure the lesson's claims on ``probe``'s model (every head alone, then layer 1's cross heads together)."""
    importance = probe.importance()
    scores = probe.pattern_scores()[PATTERN]  # (layers, heads)
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    clearest = ("cross", int(layer), int(head))
    needed, needed_cost = importance.top()
    first = [("cross", 0, h) for h in range(scores.shape[1])]
    together = probe.outcome(first).metrics[importance.metric_name]
    return Findings(accuracy=importance.base, clearest=clearest, clearest_score=float(scores[layer, head]),
                    clearest_cost=importance.of(clearest), needed=needed, needed_cost=needed_cost,
                    first_layer_cost=importance.base - together,
                    first_layer_sum=float(sum(importance.of(ref) for ref in first)))
