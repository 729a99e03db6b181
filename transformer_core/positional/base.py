"""What a positional encoding is made of: its description, the sizes it is built for, and its hooks in attention.

An encoding acts in one of three places: it adds a table to the token embeddings (sinusoidal, learned), rotates
the queries and keys (RoPE), or adds a bias to the attention scores (ALiBi). Each is described by one
:class:`PositionalKind` (in its own module, listed in :mod:`.registry`) whose factories build it for a
:class:`PositionSetting`. The ones acting inside attention are modules derived from :class:`AttentionPositions`;
attention calls both hooks and never asks which encoding it is talking to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from .rope_scaling import RopeScaling

ACTS = ("add", "rotate", "bias", "nothing")


@dataclass(frozen=True)
class PositionSetting:
    """The sizes a model builds its positional encoding for."""

    max_len: int  # positions the model is built for
    d_model: int  # width C of a token vector
    n_heads: int = 1  # attention heads H (the head size is D = C / H)
    base: float = 10000.0  # the base of the frequencies (sinusoidal table, RoPE's theta)
    rope_scaling: RopeScaling = RopeScaling()  # how RoPE's frequencies are stretched (none by default)

    @property
    def head_dim(self) -> int:
        """Size D of one head."""
        return self.d_model // self.n_heads


class AttentionPositions(nn.Module):
    """Position information applied inside self-attention; the defaults change nothing."""

    def rotate_qk(self, q: torch.Tensor, k: torch.Tensor, start: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """Queries and keys ``(B, H, T|S, D)`` with positions applied (unchanged by default).

        The keys sit at absolute positions ``start..start+S-1`` (``start`` > 0 when earlier keys are cached) and the
        queries are the last T of them.
        """
        return q, k

    def score_bias(self, t: int, s: int, *, device: torch.device, dtype: torch.dtype) -> torch.Tensor | None:
        """A float bias ``(H, T, S)`` added to the scaled scores, or ``None`` (the default).

        Query ``i`` sits at absolute position ``i + (s - t)``, as in causal attention with fewer queries than keys.
        """
        return None


@dataclass(frozen=True)
class PositionalKind:
    """One positional encoding: its name, how it acts, what it needs and how the app names it."""

    name: str  # the config value, e.g. "rope"
    title: str  # its name in a menu, e.g. "rotary (RoPE)"
    short: str  # its short name, e.g. "RoPE"
    acts: str  # "add" a table to the embeddings, "rotate" q/k, "bias" the scores, or "nothing"
    summary: str  # one sentence on what it does to a token vector or to attention
    table: Callable[[PositionSetting], torch.Tensor] | None = None  # the (max_len, C) table added, if any
    learnable: bool = False  # whether the added table is trained (a Parameter) or fixed (a buffer)
    attention: Callable[[PositionSetting], AttentionPositions] | None = None  # what acts inside attention, if any
    even_head_reason: str | None = None  # why the head size must be even, or None when any size works

    def __post_init__(self) -> None:
        if self.acts not in ACTS:
            raise ValueError(f"acts={self.acts!r} is not one of {', '.join(ACTS)}.")

    def check_head_dim(self, d_model: int, n_heads: int) -> None:
        """Raise ValueError when this encoding cannot use heads of size ``d_model / n_heads``."""
        head_dim = d_model // n_heads
        if self.even_head_reason and head_dim % 2 != 0:
            raise ValueError(f"{self.even_head_reason}, so the head size must be even, "
                             f"but d_model/n_heads = {d_model}/{n_heads} = {head_dim}.")

    def head_ok(self, head_dim: int) -> bool:
        """Whether this encoding works with heads of size ``head_dim``."""
        return not self.even_head_reason or head_dim % 2 == 0
