"""The logit lens of a decoder-only model on the learner's text, as a layers × positions grid of labelled tokens.

Wraps :func:`transformer_core.interventions.logit_lens` (which honours the heads switched off around it) and
names every token, so a page only draws: cell (l, t) holds what the model would predict after position t if it
stopped after layer l + 1, with its probability.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from torch import nn

from transformer_core.interventions import logit_lens


@dataclass(frozen=True)
class LensGrid:
    """Per layer (rows, first layer first) and position (columns): the likeliest next token and its probability."""

    tokens: tuple[str, ...]  # the input tokens, one per column
    top: tuple[tuple[str, ...], ...]  # (L, T) labels of the likeliest next token
    top_probs: np.ndarray  # (L, T) their probabilities
    final: tuple[str, ...]  # (T,) the model's own prediction at each position (the last layer's top token)
    final_probs: np.ndarray  # (L, T) the probability each layer gives to that final prediction

    def agreement(self) -> list[int]:
        """Per layer, at how many positions its top token is already the model's final prediction."""
        return [sum(a == b for a, b in zip(row, self.final, strict=True)) for row in self.top]


def lens_grid(model: nn.Module, ids: Sequence[int], tokens: Sequence[str], label: Callable[[int], str]) -> LensGrid:
    """The logit lens of ``model`` on ``ids`` (labelled ``tokens``), each predicted id named with ``label``.

    Raises:
        ValueError: for a model that is not decoder-only, or an empty or too long text.
    """
    lens = logit_lens(model, list(ids), top_k=1)
    top = tuple(tuple(label(int(i)) for i in row[:, 0]) for row in lens.top_ids)
    return LensGrid(tuple(tokens), top, lens.top_probs[..., 0], tuple(label(int(i)) for i in lens.final_ids),
                    lens.final_probs)
