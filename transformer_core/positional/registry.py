"""The registry of positional encodings: one :class:`~.base.PositionalKind` per encoding, each in its own module.

Models, config validation, sizing and every caller ask the registry what an encoding does instead of testing its
name. To add an encoding, write its module (defining ``KIND``) and add that ``KIND`` to :data:`REGISTRY`.
"""

from __future__ import annotations

from . import alibi, learned, none, rope, sinusoidal
from .base import AttentionPositions, PositionalKind, PositionSetting
from .rope_scaling import RopeScaling

# Every encoding by its config name, in menu order.
REGISTRY: dict[str, PositionalKind] = {
    kind.name: kind for kind in (sinusoidal.KIND, learned.KIND, rope.KIND, none.KIND, alibi.KIND)
}


def kinds() -> tuple[str, ...]:
    """The names of every registered encoding, in menu order."""
    return tuple(REGISTRY)


def get(name: str) -> PositionalKind:
    """The encoding called ``name``; ValueError listing the choices for an unknown one."""
    if name not in REGISTRY:
        raise ValueError(f"positional={name!r} is not one of {', '.join(repr(k) for k in REGISTRY)}.")
    return REGISTRY[name]


def attention_positions(name: str, head_dim: int, n_heads: int, max_len: int, base: float = 10000.0,
                        rope_scaling: RopeScaling | None = None) -> AttentionPositions | None:
    """The module encoding ``name`` runs inside self-attention, or ``None`` when it acts only on the embeddings."""
    kind = get(name)
    if kind.attention is None:
        return None
    return kind.attention(PositionSetting(max_len, head_dim * n_heads, n_heads, base,
                                          rope_scaling or RopeScaling()))
