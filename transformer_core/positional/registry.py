"""The registry of positional encodings: one :class:`PositionalKind` per encoding, each in its own module.

Models, config validation, sizing and every caller ask the registry what an encoding does instead of testing its
name. To add an encoding, write its module (defining ``KIND``) and add the module's name to ``_MODULES``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

from .base import AttentionPositions

ACTS = ("add", "rotate", "bias", "nothing")
# Menu order; each name is a module of this package that defines KIND.
_MODULES = ("sinusoidal", "learned", "rope", "none", "alibi")

TableFactory = Callable[[int, int, float], torch.Tensor]  # (max_len, d_model, base) -> (max_len, C)
AttentionFactory = Callable[[int, int, int, float], AttentionPositions]  # (head_dim, n_heads, max_len, base)


@dataclass(frozen=True)
class PositionalKind:
    """One positional encoding: its name, how it acts, what it needs and how the app describes it."""

    name: str  # the config value, e.g. "rope"
    title: str  # menu label, e.g. "rotary (RoPE)"
    short: str  # panel title, e.g. "RoPE"
    acts: str  # "add" a table to the embeddings, "rotate" q/k, "bias" the scores, or "nothing"
    summary: str  # one sentence on what it does to a token vector or to attention
    table: TableFactory | None = None  # the (max_len, C) table that is added; None when nothing is added
    learnable: bool = False  # whether the added table is trained (a Parameter) or fixed (a buffer)
    attention: AttentionFactory | None = None  # the module acting inside self-attention, if any
    even_head_reason: str | None = None  # why the head size must be even, or None when any size works
    embed_note: str = ""  # Model Builder: appended to the token-embedding row
    attention_note: str = ""  # Model Builder: appended to each self-attention row

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


_KINDS: dict[str, PositionalKind] = {}


def _load() -> dict[str, PositionalKind]:
    if not _KINDS:
        for module in _MODULES:
            kind = importlib.import_module(f"{__package__}.{module}").KIND
            _KINDS[kind.name] = kind
    return _KINDS


def kinds() -> tuple[str, ...]:
    """The names of every registered encoding, in menu order."""
    return tuple(_load())


def get(name: str) -> PositionalKind:
    """The encoding called ``name``; ValueError listing the choices for an unknown one."""
    registry = _load()
    if name not in registry:
        raise ValueError(f"positional={name!r} is not one of {', '.join(repr(k) for k in registry)}.")
    return registry[name]


def attention_positions(name: str, head_dim: int, n_heads: int, max_len: int,
                        base: float = 10000.0) -> AttentionPositions | None:
    """The module encoding ``name`` runs inside self-attention, or ``None`` when it acts only on the embeddings."""
    kind = get(name)
    return None if kind.attention is None else kind.attention(head_dim, n_heads, max_len, base)
