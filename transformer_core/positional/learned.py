"""Learned positions (BERT, GPT-2, ViT): one trained vector per position, added to the token vector."""

from __future__ import annotations

import torch

from .registry import PositionalKind


def learned_start(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The random starting table ``(max_len, d_model)``, std 0.02 as in GPT-2 (``base`` is unused)."""
    return torch.randn(max_len, d_model) * 0.02


KIND = PositionalKind(
    name="learned", title="learned", short="Learned", acts="add",
    summary="adds a trained vector per position to each token vector",
    table=learned_start, learnable=True,
)
