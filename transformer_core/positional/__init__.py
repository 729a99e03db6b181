"""Positional information: how a transformer, blind to order by itself, learns where each token is.

Attention itself is blind to order: permuting the tokens merely permutes its outputs. Each encoding lives in its
own module and is described by a :class:`PositionalKind` listed in :mod:`.registry`; models ask the registry what an
encoding does (add a table, rotate q/k, bias the scores) instead of testing its name.
"""

from __future__ import annotations

from .base import AttentionPositions, PositionalKind, PositionSetting
from .registry import attention_positions, get, kinds
from .rope import RotaryEmbedding
from .rope_scaling import SCALINGS, RopeScaling
from .sinusoidal import sinusoidal_encoding
from .table import PositionalEncoding

KINDS = kinds()

__all__ = [
    "KINDS", "SCALINGS", "AttentionPositions", "PositionSetting", "PositionalEncoding", "PositionalKind",
    "RopeScaling", "RotaryEmbedding", "attention_positions",
    "get", "kinds", "sinusoidal_encoding",
]
