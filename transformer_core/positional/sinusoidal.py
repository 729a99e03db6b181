"""Sinusoidal positions (Vaswani et al. 2017, section 3.5): a fixed table of sines and cosines, added."""

from __future__ import annotations

import torch

from .base import PositionalKind, PositionSetting


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0) -> torch.Tensor:
    """The table of "Attention Is All You Need", section 3.5.

    ``PE[pos, 2i] = sin(pos / base^(2i/d_model))`` and ``PE[pos, 2i+1] = cos(pos / base^(2i/d_model))``.

    Shape:
        returns ``(max_len, d_model)`` float32. An odd ``d_model`` drops the last cosine column.
    """
    if max_len <= 0 or d_model <= 0:
        raise ValueError(f"max_len={max_len} and d_model={d_model} must be positive.")
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (L, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(C/2),)
    angle = position / base ** (two_i / d_model)  # (L, ceil(C/2))
    table = torch.zeros(max_len, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table.float()


def _table(setting: PositionSetting) -> torch.Tensor:
    return sinusoidal_encoding(setting.max_len, setting.d_model, setting.base)


KIND = PositionalKind(
    name="sinusoidal", title="sinusoidal", short="Sinusoidal", acts="add",
    summary="adds a fixed row of sines and cosines to each token vector",
    table=_table,
)
