"""Learned positions (BERT, GPT-2, ViT): one trained vector per position, added to the token vector."""

from __future__ import annotations

import torch

from .base import PositionalKind, PositionSetting


def learned_start(setting: PositionSetting) -> torch.Tensor:
    """The random starting table ``(max_len, d_model)``, std 0.02 as in GPT-2."""
    return torch.randn(setting.max_len, setting.d_model) * 0.02


KIND = PositionalKind(
    name="learned", title="learned", short="Learned", acts="add",
    summary="adds a trained vector per position to each token vector",
    table=learned_start, learnable=True,
)
