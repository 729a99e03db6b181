"""Rotary positions (Su et al. 2021): queries and keys rotated by an angle proportional to their position."""

from __future__ import annotations

import torch

from .base import AttentionPositions, PositionalKind, PositionSetting
from .rope_scaling import RopeScaling


class RotaryEmbedding(AttentionPositions):
    """Rotary position embedding: rotates each pair of query/key features by an angle proportional to position.

    The score between positions ``m`` and ``n`` then depends on ``m - n`` only. Pairs are the two halves of each
    head (the GPT-NeoX / LLaMA layout). ``base`` is θ (10000 in the paper, 100000 and more in newer models);
    ``scaling`` stretches the frequencies as Llama 3 or position interpolation do (see :mod:`.rope_scaling`).
    """

    def __init__(self, head_dim: int, max_len: int, base: float = 10000.0,
                 scaling: RopeScaling | None = None) -> None:
        super().__init__()
        if head_dim % 2 != 0:
            raise ValueError(f"Rotary embeddings need an even head size, got {head_dim}.")
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)  # (D/2,)
        if scaling is not None:
            inv_freq = scaling.apply(inv_freq)
        angles = torch.arange(max_len, dtype=torch.float32)[:, None] * inv_freq  # (L, D/2)
        angles = torch.cat([angles, angles], dim=-1)  # (L, D)
        self.max_len = max_len
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    def rotate(self, x: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """Rotate ``x`` of shape ``(..., N, D)`` by the angles of positions ``offset..offset+N-1``."""
        n = x.size(-2)
        if offset + n > self.max_len:
            raise ValueError(f"The sequence has {offset + n} positions but the model was built for "
                             f"max_len={self.max_len}.")
        cos, sin = self.cos[offset:offset + n].to(x.dtype), self.sin[offset:offset + n].to(x.dtype)  # (N, D)
        return x * cos + self._rotate_half(x) * sin

    def forward(self, q: torch.Tensor, k: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        return self.rotate_qk(q, k, start)

    def rotate_qk(self, q: torch.Tensor, k: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Rotate queries ``(..., T, D)`` and keys ``(..., S, D)``; the keys sit at positions ``start..start+S-1``.

        With fewer queries than keys (only the newest tokens ask), the queries are the last T of the S positions,
        as :func:`~transformer_core.masks.causal_mask` places them, not positions 0..T-1. With a key/value cache,
        ``start`` is the number of tokens already cached and only the new keys are passed.
        """
        q_start = start + max(k.size(-2) - q.size(-2), 0)
        return self.rotate(q, offset=q_start), self.rotate(k, offset=start)


def _rotary(setting: PositionSetting) -> RotaryEmbedding:
    return RotaryEmbedding(setting.head_dim, setting.max_len, setting.base, setting.rope_scaling)


KIND = PositionalKind(
    name="rope", title="rotary (RoPE)", short="RoPE", acts="rotate",
    summary="rotates each pair of numbers in the queries and keys by an angle proportional to the position",
    attention=_rotary, even_head_reason="Rotary positions rotate pairs of numbers",
)
