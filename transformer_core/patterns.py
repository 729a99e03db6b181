"""Per-head attention pattern scores: how much of each head's attention follows a known pattern.

Every score has the same recipe. A task knows, for some query rows, which key columns the *right* answer lives
in (a boolean target of shape ``(T, S)``). A head's score is the attention mass it puts on those columns,
averaged over the rows that have a target. A score of 0.93 reads "head 1.2 is 93% anti-diagonal".

All functions take attention weights as arrays ``(L, H, T, S)`` (layers, heads, queries, keys) or ``(H, T, S)``
and return one number per head: ``(L, H)`` or ``(H,)``. Heads are numbered from 1 in the texts shown to people
(``"head 1.2"`` is layer 1, head 2) and from 0 in the arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PATTERN_TITLES = {
    "diagonal": "diagonal",
    "anti_diagonal": "anti-diagonal",
    "sorted_source": "sorted-source",
    "previous_token": "previous-token",
    "induction": "induction",
    "object": "on the object",
}


def as_array(weights: object) -> np.ndarray:
    """Turn a tensor, an array or a list of per-layer ``(H, T, S)`` maps into a float32 ``(L, H, T, S)`` array."""
    if isinstance(weights, (list, tuple)):
        return np.stack([as_array(w) for w in weights]).astype(np.float32)
    if hasattr(weights, "detach"):
        weights = weights.detach().float().cpu().numpy()
    return np.asarray(weights, dtype=np.float32)


def mask_score(weights: object, target: np.ndarray) -> np.ndarray:
    """Mean attention mass on the ``True`` columns of ``target``, over the query rows that have any.

    Args:
        weights: attention ``(..., T, S)``, each row summing to 1.
        target: boolean ``(T, S)``; rows without a ``True`` are left out of the mean.

    Returns:
        ``(...)`` scores in ``[0, 1]``; zeros when no row has a target.
    """
    w = as_array(weights)
    target = np.asarray(target, dtype=bool)
    if target.shape != w.shape[-2:]:
        raise ValueError(f"Pattern target {target.shape} does not match the attention maps {w.shape[-2:]}.")
    rows = target.any(axis=-1)
    if not rows.any():
        return np.zeros(w.shape[:-2], dtype=np.float32)
    mass = (w * target).sum(axis=-1)  # (..., T)
    return mass[..., rows].mean(axis=-1).astype(np.float32)


def alignment_target(t: int, s: int, pairs: Sequence[tuple[int, int]]) -> np.ndarray:
    """A ``(T, S)`` boolean target from ``(query_row, key_column)`` pairs."""
    target = np.zeros((t, s), dtype=bool)
    for row, col in pairs:
        target[row, col] = True
    return target


def diagonal_target(t: int, s: int, length: int, *, anti: bool = False, row_offset: int = 0,
                    col_offset: int = 0) -> np.ndarray:
    """Row ``row_offset + i`` should look at column ``col_offset + i`` (or ``col_offset + length-1-i`` if ``anti``)."""
    pairs = [(row_offset + i, col_offset + (length - 1 - i if anti else i)) for i in range(length)]
    return alignment_target(t, s, pairs)


def previous_token_target(t: int, *, start: int = 1) -> np.ndarray:
    """Causal self-attention target: every query from ``start`` on should look at the token just before it."""
    return alignment_target(t, t, [(i, i - 1) for i in range(max(start, 1), t)])


def induction_target(tokens: Sequence[int]) -> np.ndarray:
    """Induction target: a query whose token appeared before should look at the token *after* that earlier copy.

    For ``A B ... A`` the last ``A`` should attend to ``B``, because ``B`` is the best guess of what comes next.
    """
    t = len(tokens)
    target = np.zeros((t, t), dtype=bool)
    for i in range(t):
        for j in range(i - 1):
            if tokens[j] == tokens[i]:
                target[i, j + 1] = True
    return target


def object_score(weights: object, patch_mask: np.ndarray, *, cls_index: int = 0) -> np.ndarray:
    """Share of the CLS token's attention to patches that lands on patches overlapping the object.

    Args:
        weights: attention ``(..., 1 + P, 1 + P)`` with the CLS token at ``cls_index`` and patches after it.
        patch_mask: boolean ``(P,)``, ``True`` where a patch overlaps the object.

    Returns:
        ``(...)`` fractions in ``[0, 1]``; attention the CLS token pays to itself is left out.
    """
    w = as_array(weights)
    cls_row = np.delete(w[..., cls_index, :], cls_index, axis=-1)  # (..., P)
    total = cls_row.sum(axis=-1)
    on_object = (cls_row * np.asarray(patch_mask, dtype=bool)).sum(axis=-1)
    return (on_object / np.maximum(total, 1e-12)).astype(np.float32)


def best_head(scores: np.ndarray) -> tuple[int, int, float]:
    """``(layer, head, score)`` of the highest-scoring head (0-based indices)."""
    scores = np.atleast_2d(np.asarray(scores, dtype=np.float32))
    layer, head = np.unravel_index(int(np.argmax(scores)), scores.shape)
    return int(layer), int(head), float(scores[layer, head])


def pattern_title(key: str) -> str:
    """Readable name of a score key such as ``"cross:anti_diagonal"`` -> ``"anti-diagonal"``."""
    name = key.split(":")[-1]
    return PATTERN_TITLES.get(name, name.replace("_", "-"))


def describe_best_head(key: str, scores: np.ndarray) -> str:
    """One sentence such as ``"head 1.2 is 93% anti-diagonal"`` (layer.head, counted from 1)."""
    layer, head, value = best_head(scores)
    part = key.split(":")[0] if ":" in key else ""
    where = f" ({part} attention)" if part else ""
    return f"head {layer + 1}.{head + 1}{where} is {value:.0%} {pattern_title(key)}"
