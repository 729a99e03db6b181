"""Positional information: sinusoidal (Vaswani et al. 2017), learned, rotary (Su et al. 2021) or none.

Attention itself is blind to order: permuting the tokens merely permutes its outputs. These modules give each
token a sense of where it is.
"""

from __future__ import annotations

import torch
from torch import nn

KINDS = ("sinusoidal", "learned", "rope", "none")


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


class PositionalEncoding(nn.Module):
    """Adds position information to token vectors ``x`` of shape ``(B, T, C)``.

    ``"sinusoidal"`` adds the fixed table, ``"learned"`` adds a trained table (as in BERT, GPT-2 and ViT);
    ``"rope"`` and ``"none"`` leave ``x`` unchanged (rotary positions act inside attention instead).
    """

    def __init__(self, kind: str, max_len: int, d_model: int, base: float = 10000.0) -> None:
        super().__init__()
        if kind not in KINDS:
            raise ValueError(f"positional={kind!r} is not one of {', '.join(KINDS)}.")
        self.kind = kind
        self.max_len = max_len
        self.table: nn.Parameter | None = None
        if kind == "sinusoidal":
            self.register_buffer("pe", sinusoidal_encoding(max_len, d_model, base), persistent=False)
        elif kind == "learned":
            self.table = nn.Parameter(torch.randn(max_len, d_model) * 0.02)

    def encoding(self) -> torch.Tensor | None:
        """The ``(max_len, C)`` table that is added, or ``None`` for rotary / no positions."""
        if self.kind == "sinusoidal":
            return self.pe
        return self.table

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


class RotaryEmbedding(nn.Module):
    """Rotary position embedding: rotates each pair of query/key features by an angle proportional to position.

    The score between positions ``m`` and ``n`` then depends on ``m - n`` only. Pairs are the two halves of each
    head (the GPT-NeoX / LLaMA layout).
    """

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0) -> None:
        super().__init__()
        if head_dim % 2 != 0:
            raise ValueError(f"Rotary embeddings need an even head size, got {head_dim}.")
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)  # (D/2,)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv_freq  # (L, D/2)
        angles = torch.cat([angles, angles], dim=-1)  # (L, D)
        self.max_len = max_len
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    def rotate(self, x: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` of shape ``(..., N, D)`` by the angles of positions ``0..N-1``."""
        n = x.size(-2)
        if n > self.max_len:
            raise ValueError(f"The sequence has {n} positions but the model was built for max_len={self.max_len}.")
        cos, sin = self.cos[:n].to(x.dtype), self.sin[:n].to(x.dtype)  # (N, D)
        return x * cos + self._rotate_half(x) * sin

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rotate(q), self.rotate(k)
