"""Take attention apart: every intermediate of multi-head attention, computed with a model's own weights.

:func:`attention_walkthrough` replays ``MultiHeadAttention.forward`` one step at a time
(X → Q, K, V → QKᵀ → ÷√d_k → mask → softmax → ×V → concatenate heads → W_O) and keeps each step, so a page can
show them and a student can check a cell by hand. :func:`walk_stack` replays every layer of a model's
self-attention stack (:class:`~transformer_core.families.SelfAttentionStack`, which the model's family takes apart).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch
from torch import nn

from explorer.i18n import _
from transformer_core.attention import MultiHeadAttention
from transformer_core.config import TransformerConfig
from transformer_core.families import SelfAttentionStack, family, of_model
from transformer_core.masks import causal_mask, combine_masks, padding_mask
from transformer_core.positional import AttentionPositions
from transformer_core.seeding import seeded

MASK_KINDS = ("none", "causal", "padding")
LAB_FAMILY = "regression"  # the family whose model, with random weights, is the Lab's random encoder


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of one multi-head attention call on one sequence (the batch dimension dropped)."""

    x: torch.Tensor  # (T, C) input of the attention (after the block's LayerNorm in a pre-norm model)
    w_q: torch.Tensor  # (H, C, D) query weights per head, so that Q_h = X @ w_q[h] + b_q[h]
    w_k: torch.Tensor  # (H, C, D) key weights per head
    w_v: torch.Tensor  # (H, C, D) value weights per head
    b_q: torch.Tensor | None  # (H, D) query bias per head, or None without biases
    b_k: torch.Tensor | None  # (H, D) key bias per head
    b_v: torch.Tensor | None  # (H, D) value bias per head
    q: torch.Tensor  # (H, T, D) queries (rotated when the model uses rotary positions)
    k: torch.Tensor  # (H, S, D) keys (rotated likewise)
    v: torch.Tensor  # (H, S, D) values
    scores: torch.Tensor  # (H, T, S) Q Kᵀ
    scaled: torch.Tensor  # (H, T, S) Q Kᵀ / √d_k
    bias: torch.Tensor | None  # (H, T, S) position bias added to the scaled scores (ALiBi), or None
    masked: torch.Tensor  # (H, T, S) scaled scores (+ bias) with -inf where the mask forbids attending
    mask: torch.Tensor | None  # (H, T, S) bool, True = may attend; None when nothing is masked
    weights: torch.Tensor  # (H, T, S) softmax of the masked scores; fully masked rows are zeros
    head_out: torch.Tensor  # (H, T, D) weights @ V per head
    concat: torch.Tensor  # (T, C) the heads side by side
    w_o: torch.Tensor  # (C, C) output weights, so that output = concat @ w_o + b_o
    b_o: torch.Tensor | None  # (C,) output bias
    output: torch.Tensor  # (T, C) the attention's output
    rotary: bool  # whether positions rotated Q and K (RoPE)

    @property
    def head_dim(self) -> int:
        """Size D = d_k of each head."""
        return self.q.size(-1)


def _per_head(linear: nn.Linear, n_heads: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    c = linear.in_features
    weight = linear.weight.t().reshape(c, n_heads, -1).transpose(0, 1)  # (C, C) -> (H, C, D)
    bias = None if linear.bias is None else linear.bias.reshape(n_heads, -1)  # (H, D)
    return weight, bias


def _shared(weight: torch.Tensor, bias: torch.Tensor | None,
            group: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """A K/V head's weights ``(H_kv, C, D)`` repeated for each query head of its group: ``(H, C, D)``."""
    return weight.repeat_interleave(group, dim=0), None if bias is None else bias.repeat_interleave(group, dim=0)


def _full_mask(mask: torch.Tensor | None, is_causal: bool, h: int, t: int, s: int,
               device: torch.device) -> torch.Tensor | None:
    if is_causal:
        mask = combine_masks(mask, causal_mask(t, s, device=device))
    if mask is None:
        return None
    return mask.expand(1, h, t, s)[0].clone()  # (H, T, S)


@torch.no_grad()
def attention_walkthrough(mha: MultiHeadAttention, x: torch.Tensor, mask: torch.Tensor | None = None, *,
                          is_causal: bool = False, positions: AttentionPositions | None = None) -> AttentionSteps:
    """Self-attention of ``mha`` on one sequence, step by step, with the module's own weights.

    Args:
        mha: the attention module (its weights are read, never changed).
        x: the sequence, ``(T, C)`` or ``(1, T, C)``.
        mask: boolean, ``True`` = may attend, broadcastable to ``(1, H, T, T)``.
        is_causal: additionally forbid attending to later positions.
        positions: optional positions acting inside attention: a rotation of ``(q, k)`` and/or a score bias.

    Returns:
        :class:`AttentionSteps`; ``output`` equals ``mha(x, x, x, mask, is_causal=is_causal)[0]``.
    """
    x = x.reshape(-1, x.size(-1))  # (T, C)
    h = mha.n_heads
    n_kv = getattr(mha, "n_kv_heads", None) or h  # grouped-query attention: fewer K/V heads than query heads
    group = h // n_kv
    t = s = x.size(0)
    w_q, b_q = _per_head(mha.q_proj, h)
    q = mha.q_proj(x).reshape(t, h, -1).transpose(0, 1)[None]  # (T, H*D) -> (1, H, T, D)
    # K and V are shown per query head: query head j reads K/V head j // group, so each is repeated group times.
    w_k, b_k = _shared(*_per_head(mha.k_proj, n_kv), group)
    w_v, b_v = _shared(*_per_head(mha.v_proj, n_kv), group)
    k, v = (p(x).reshape(t, n_kv, -1).transpose(0, 1).repeat_interleave(group, dim=0)[None]  # (1, H, S, D)
            for p in (mha.k_proj, mha.v_proj))
    bias, rotated = None, False
    if positions is not None:
        before = q
        q, k = positions.rotate_qk(q, k)
        rotated = q is not before
        bias = positions.score_bias(t, s, device=x.device, dtype=q.dtype)  # (H, T, S) or None
    q, k, v = q[0], k[0], v[0]  # (H, T, D)
    scores = q @ k.transpose(-2, -1)  # (H, T, S)
    scaled = scores / math.sqrt(q.size(-1))
    full = _full_mask(mask, is_causal, h, t, s, x.device)
    masked = scaled if bias is None else scaled + bias
    masked = masked if full is None else masked.masked_fill(~full, float("-inf"))
    weights = _softmax_rows(masked, full)
    head_out = weights @ v  # (H, T, D)
    concat = head_out.transpose(0, 1).reshape(t, mha.d_model)  # (H, T, D) -> (T, H*D)
    return AttentionSteps(
        x=x, w_q=w_q, w_k=w_k, w_v=w_v, b_q=b_q, b_k=b_k, b_v=b_v, q=q, k=k, v=v, scores=scores, scaled=scaled,
        bias=bias, masked=masked, mask=full, weights=weights, head_out=head_out, concat=concat,
        w_o=mha.out_proj.weight.t(), b_o=mha.out_proj.bias, output=mha.out_proj(concat),
        rotary=rotated,
    )


def _softmax_rows(masked: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if mask is None:
        return masked.softmax(dim=-1)
    # A query that may see no key at all gets zero weights (not NaN), as in MultiHeadAttention.
    has_key = mask.any(dim=-1, keepdim=True)  # (H, T, 1)
    return torch.where(has_key, masked.masked_fill(~has_key, 0.0).softmax(dim=-1), 0.0)


@torch.no_grad()
def walk_stack(stack: SelfAttentionStack) -> list[AttentionSteps]:
    """Replay every block of ``stack``; one :class:`AttentionSteps` per layer, first layer first."""
    x, steps = stack.x, []
    for block in stack.blocks:
        attn_in = block.norm1(x) if block.norm_first else x
        steps.append(attention_walkthrough(block.self_attn, attn_in, stack.mask, is_causal=stack.is_causal,
                                           positions=stack.positions))
        x, _weights = block(x, mask=stack.mask, is_causal=stack.is_causal, positions=stack.positions)
    return steps


def build_lab_encoder(config: TransformerConfig, seed: int) -> nn.Module:
    """The model the Attention Lab builds from random weights: the encoder-only family's model in evaluation mode,
    its weights depending only on ``seed``.

    The Lab replays its self-attention stack under the mask the reader picks (:func:`lab_stack`) and reads the
    final vectors (:func:`lab_outputs`); the model's pooling and output head are never used.
    """
    with seeded(seed):
        return family(LAB_FAMILY).model_class(config).eval()


@torch.no_grad()
def trained_stack(model: nn.Module, ids: Sequence[int], labels: Sequence[str]) -> SelfAttentionStack:
    """The self-attention stack a text model runs on ``ids``, with the model's own mask, labelled ``labels``.

    The model's family says how (``ModelFamily.self_attention``): a decoder-only model (GPT-2 too) is causal; an
    encoder-decoder model is shown through its encoder; an encoder-only regressor with a CLS token gets ``"CLS"``
    before the labels; a pretrained BERT sees every position, its input embedded as one segment (its
    ``[CLS]``/``[SEP]`` come with ``ids``).
    """
    try:
        take_apart = of_model(model).self_attention
    except ValueError:
        take_apart = None
    if take_apart is None:
        raise ValueError(_("The Attention Lab cannot take apart a {model}.").format(model=type(model).__name__))
    device = next(model.parameters()).device
    idx = torch.tensor([list(ids)], dtype=torch.long, device=device)  # (1, T)
    return take_apart(model, idx).labelled(labels)


@torch.no_grad()
def lab_stack(model: nn.Module, ids: Sequence[int], labels: Sequence[str], mask_kind: str = "none",
              valid: Sequence[bool] | None = None) -> SelfAttentionStack:
    """The stack of the Lab's random encoder (:func:`build_lab_encoder`) on ``ids`` with the chosen mask.

    Args:
        mask_kind: ``"none"``, ``"causal"`` or ``"padding"`` (hides the positions where ``valid`` is False).
        valid: one flag per position, True for real tokens; required for ``"padding"``.
    """
    if mask_kind not in MASK_KINDS:
        raise ValueError(f"mask={mask_kind!r} is not one of {', '.join(MASK_KINDS)}.")
    mask = None
    if mask_kind == "padding":
        if valid is None or len(valid) != len(ids):
            raise ValueError("A padding mask needs one valid flag per token.")
        mask = padding_mask(torch.tensor([list(valid)], dtype=torch.bool))  # (1, 1, 1, T)
    return replace(trained_stack(model, ids, labels), mask=mask, is_causal=mask_kind == "causal")


@torch.no_grad()
def lab_outputs(model: nn.Module, ids: Sequence[int], mask_kind: str = "none",
                valid: Sequence[bool] | None = None) -> torch.Tensor:
    """The final vector ``(T, C)`` of every token when the Lab's random encoder reads ``ids`` with that mask."""
    return lab_stack(model, ids, (), mask_kind, valid).run()[0]


@dataclass(frozen=True)
class HeadSummary:
    """Two numbers per layer and head that describe how its attention weights are spread."""

    self_weight: torch.Tensor  # (L, H) mean weight a query puts on its own position (the diagonal)
    entropy: torch.Tensor  # (L, H) mean over queries of -Σ_j w_j ln w_j in nats: 0 = one key, ln S = uniform


def head_summary(weights: torch.Tensor | Sequence) -> HeadSummary:
    """Self-weight and entropy of every head, from attention weights ``(L, H, T, S)`` (a tensor or an array).

    A fully masked row (all zeros) has entropy 0.
    """
    w = torch.as_tensor(weights, dtype=torch.float64)
    if w.dim() != 4:
        raise ValueError(f"weights must have shape (layers, heads, queries, keys), not {tuple(w.shape)}.")
    entropy = -(w * w.clamp(1e-12, 1.0).log()).sum(-1).mean(-1)  # (L, H)
    self_weight = torch.diagonal(w, dim1=-2, dim2=-1).mean(-1)  # (L, H)
    return HeadSummary(self_weight=self_weight, entropy=entropy)
