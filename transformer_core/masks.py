"""Attention masks, with one convention for the whole package.

A mask is a boolean tensor broadcastable to the attention scores ``(B, H, T, S)``: ``True`` means the query
may attend to that key, ``False`` means it may not. This is the convention of
``torch.nn.functional.scaled_dot_product_attention``; ``torch.nn.MultiheadAttention`` uses the opposite one.
"""

from __future__ import annotations

import torch


def causal_mask(size: int, keys: int | None = None, device: torch.device | str | None = None) -> torch.Tensor:
    """Lower-triangular mask: each query may attend to its own position and earlier ones only.

    Args:
        size: number of queries T.
        keys: number of keys S (default ``size``). With fewer queries than keys, the queries are the *last* T
            positions: query ``i`` sits at absolute position ``i + (S - T)`` and sees keys ``0..i + (S - T)``.
        device: where to build the mask.

    Shape:
        ``(T, S)`` boolean, ``True`` on and below the (shifted) diagonal.
    """
    keys = size if keys is None else keys
    return torch.ones(size, keys, dtype=torch.bool, device=device).tril(keys - size)


def padding_mask(valid: torch.Tensor) -> torch.Tensor:
    """Turn a per-token validity mask into a key mask that hides padding from every query.

    Args:
        valid: ``(B, S)`` boolean, ``True`` for real tokens and ``False`` for padding.

    Shape:
        returns ``(B, 1, 1, S)`` so it broadcasts over heads and queries.
    """
    if valid.dim() != 2:
        raise ValueError(f"valid must have shape (B, S), got {tuple(valid.shape)}.")
    return valid.bool()[:, None, None, :]  # (B, 1, 1, S)


def valid_from_tokens(tokens: torch.Tensor, pad_id: int | None) -> torch.Tensor | None:
    """``(B, S)`` validity mask from token ids, or ``None`` when there is no padding token."""
    if pad_id is None:
        return None
    return tokens != pad_id


def combine_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Logical AND of the masks that are not ``None`` (broadcasting), or ``None`` if all are."""
    result = None
    for mask in masks:
        if mask is None:
            continue
        result = mask if result is None else result & mask
    return result
