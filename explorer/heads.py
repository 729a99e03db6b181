"""How many attention heads the pages offer: the divisors of the model width, up to a cap that keeps pictures
readable."""

from __future__ import annotations

from transformer_core.config import divisors

MAX_HEADS = 16  # more heads make per-head pictures tiny and a layers × heads grid hundreds of maps


def head_choices(d_model: int, max_heads: int = MAX_HEADS) -> list[int]:
    """Head counts to offer for ``d_model``: its divisors up to ``max_heads``, ascending."""
    return [h for h in divisors(d_model) if h <= max_heads]
