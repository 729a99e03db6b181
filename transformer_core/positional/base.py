"""The hooks through which a positional encoding acts inside multi-head attention.

An encoding acts in one of three places: it adds a table to the token embeddings (sinusoidal, learned), rotates
the queries and keys (RoPE), or adds a bias to the attention scores (ALiBi). The last two are modules derived from
:class:`AttentionPositions`; attention calls both hooks and never asks which encoding it is talking to.
"""

from __future__ import annotations

import torch
from torch import nn


class AttentionPositions(nn.Module):
    """Position information applied inside self-attention; the defaults change nothing."""

    def rotate_qk(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys ``(B, H, T|S, D)`` with positions applied (unchanged by default)."""
        return q, k

    def score_bias(self, t: int, s: int, *, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """A float bias ``(H, T, S)`` added to the scaled scores, or ``None`` (the default).

        Query ``i`` sits at absolute position ``i + (s - t)``, as in causal attention with fewer queries than keys.
        """
        return None
