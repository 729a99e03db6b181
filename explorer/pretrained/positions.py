"""The learned position table of a pretrained GPT-2 or BERT, set beside the sinusoidal one.

- :func:`principal_components`: the table's first principal components (centre the rows, SVD), so a table of
  hundreds of dimensions can be drawn as a few curves: GPT-2's first components turn smoothly with position.
- :func:`position_tables`: the first positions of a model's table, the sinusoidal table of the same size, and the
  cosine similarity of every pair of positions in each.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.lab.positional import learned_table, similarity_matrix
from transformer_core.positional import sinusoidal_encoding
from transformer_core.pretrained import Pretrained

# the families whose position table is a learned (positions, width) matrix
TEXT_FAMILIES = ("gpt2", "bert", "distilbert", "roberta")
SINUSOIDAL_BASE = 10000.0  # the paper's base, for the sinusoidal table set beside a model's


@dataclass(frozen=True)
class PositionPCA:
    """Every position of a table projected onto the table's first principal directions."""

    scores: torch.Tensor  # (L, k) position p's coordinate along direction j
    explained: torch.Tensor  # (k,) share of the table's variance (across positions) along each direction
    directions: torch.Tensor  # (k, C) the unit principal directions, largest variance first


def principal_components(table: torch.Tensor, k: int = 3) -> PositionPCA:
    """The first ``k`` principal components of the rows of ``table`` ``(L, C)``.

    Rows are centred on their mean; the right singular vectors of the centred table are the directions. Each
    direction's sign is chosen so that the last position scores at least as high as the first (an SVD's signs
    are arbitrary; this makes the curves read the same way every time).

    Raises:
        ValueError: when ``table`` is not a matrix with at least two rows, or ``k`` is not in 1..min(L, C).
    """
    if table.dim() != 2 or table.shape[0] < 2:
        raise ValueError(f"A position table must be (positions, width) with at least two positions, got "
                         f"{tuple(table.shape)}.")
    if not 1 <= k <= min(table.shape):
        raise ValueError(f"k must be between 1 and {min(table.shape)}, got {k}.")
    centred = table.double() - table.double().mean(dim=0)  # (L, C)
    _, singular, vh = torch.linalg.svd(centred, full_matrices=False)  # vh: (min(L, C), C)
    directions = vh[:k]  # (k, C)
    scores = centred @ directions.t()  # (L, k)
    flip = torch.where(scores[-1] < scores[0], -1.0, 1.0).double()  # (k,)
    variance = singular.square()
    return PositionPCA((scores * flip).float(), (variance[:k] / variance.sum().clamp(min=1e-300)).float(),
                       (directions * flip[:, None]).float())


@dataclass(frozen=True)
class PositionTables:
    """A model's learned positions beside the sinusoidal table of the same size."""

    whose: str  # e.g. "gpt2 (GPT2LMHeadModel)"
    table: torch.Tensor  # (L, C) the model's whole position table
    shown: torch.Tensor  # (n, C) its first n positions
    sinusoidal: torch.Tensor  # (n, C) the sinusoidal table of the same size
    similarity: torch.Tensor  # (n, n) cosine similarity of the model's positions a and b
    sinusoidal_similarity: torch.Tensor  # (n, n) the same for the sinusoidal table
    pca: PositionPCA  # principal components of the whole table


def position_tables(pretrained: Pretrained, positions: int, *, k: int = 3) -> PositionTables:
    """The learned position table of a pretrained text model, its first ``positions`` rows beside the
    sinusoidal table of that size, their similarity matrices, and the whole table's principal components.

    Raises:
        ValueError: when the model is not a GPT-2 or BERT, or ``positions`` is below 2.
    """
    table = learned_table(pretrained.model) if pretrained.family in TEXT_FAMILIES else None
    if table is None:
        raise ValueError(f"{pretrained.name} has no learned position table of text positions; choose a GPT-2 or "
                         f"BERT model.")
    if positions < 2:
        raise ValueError(f"Show at least two positions, got {positions}.")
    n = min(positions, table.shape[0])
    shown = table[:n]  # (n, C)
    sinusoidal = sinusoidal_encoding(n, table.shape[1], SINUSOIDAL_BASE)
    return PositionTables(
        whose=f"{pretrained.name} ({pretrained.architecture})", table=table, shown=shown, sinusoidal=sinusoidal,
        similarity=similarity_matrix(shown, cosine=True),
        sinusoidal_similarity=similarity_matrix(sinusoidal, cosine=True),
        pca=principal_components(table, min(k, *table.shape)))
