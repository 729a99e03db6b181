"""The positions added to the token embeddings, for every encoding that acts by adding a table."""

from __future__ import annotations

import torch
from torch import nn

from .base import PositionSetting
from .registry import get


class PositionalEncoding(nn.Module):
    """Adds position information to token vectors ``x`` of shape ``(B, T, C)``.

    Encodings that ``"add"`` (sinusoidal: a fixed buffer; learned: a trained ``table``, as in BERT, GPT-2 and ViT)
    add their row for each position; the others leave ``x`` unchanged (they act inside attention, or not at all).
    """

    def __init__(self, kind: str, max_len: int, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        spec = get(kind)
        self.kind = kind
        self.max_len = max_len
        self.table: nn.Parameter | None = None
        self.register_buffer("pe", None, persistent=False)
        if spec.table is None:
            return
        start = spec.table(PositionSetting(max_len, d_model, base=base))  # (L, C)
        if spec.learnable:
            self.table = nn.Parameter(start)
        else:
            self.register_buffer("pe", start, persistent=False)

    def encoding(self) -> torch.Tensor | None:
        """The ``(max_len, C)`` table that is added, or ``None`` when this encoding adds nothing."""
        return self.table if self.table is not None else self.pe

    def forward(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        table = self.encoding()
        if table is None:
            return x
        t = x.size(1)
        if offset + t > self.max_len:
            raise ValueError(
                f"The sequence has {offset + t} positions but the model was built for max_len={self.max_len}."
            )
        return x + table[offset : offset + t]  # (B, T, C) + (T, C)
