"""Scaled dot-product attention and multi-head attention.

Mask convention (see ``masks.py``): boolean, ``True`` = may attend, broadcastable to ``(B, H, T, S)``.
A query whose keys are all masked gets zero weights and a zero output instead of NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .config import check_heads, check_kv_heads, check_positive, whole_number
from .head_edits import edit_heads
from .kv_cache import LayerCache
from .masks import causal_mask, combine_masks
from .positional.base import AttentionPositions


def _guard_empty_rows(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Let fully masked rows attend everywhere (so softmax stays finite) and return which rows had any key."""
    has_key = mask.any(dim=-1, keepdim=True)  # (..., T, 1)
    return mask | ~has_key, has_key


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    bias: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(Q Kᵀ / √d_k + bias) V, written out so the attention weights can be returned.

    Args:
        q: queries ``(..., H, T, D)``.
        k: keys ``(..., H_kv, S, D)``; ``H_kv`` may divide ``H`` (grouped-query attention: query head ``h`` reads
            key head ``h // (H / H_kv)``).
        v: values ``(..., H_kv, S, Dv)``.
        mask: boolean, ``True`` = may attend, broadcastable to ``(..., T, S)``.
        dropout_p: dropout probability applied to the weights (pass 0 in evaluation).
        bias: optional float bias added to the scaled scores, broadcastable to ``(..., T, S)`` (e.g. ALiBi).

    Returns:
        ``(out, weights)`` with shapes ``(..., T, Dv)`` and ``(..., T, S)``; each row of ``weights`` sums to 1,
        except rows whose keys are all masked, which are all zeros.
    """
    scores = _grouped(q, k, lambda qg: qg @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))  # (..., H, T, S)
    if bias is not None:
        scores = scores + bias
    has_key = None
    if mask is not None:
        mask, has_key = _guard_empty_rows(mask)
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = scores.softmax(dim=-1)
    if has_key is not None:
        weights = weights * has_key
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return _grouped(weights, v, lambda wg: wg @ v), weights


def _grouped(x: torch.Tensor, kv: torch.Tensor, product: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """``product`` of per-query-head rows ``x`` ``(..., H, T, N)`` with keys or values of ``H_kv`` heads.

    With grouping, the ``H / H_kv`` query heads of a group are stacked as rows of one matrix ``(..., H_kv, g·T, N)``
    and multiplied by their shared head once, without copying it per query head; the result is ``(..., H, T, M)``.
    """
    if x.dim() < 3 or kv.dim() < 3 or x.size(-3) == kv.size(-3):
        return product(x)
    h, h_kv = x.size(-3), kv.size(-3)
    t = x.size(-2)
    stacked = x.reshape(*x.shape[:-3], h_kv, (h // h_kv) * t, x.size(-1))  # (..., H_kv, g·T, N)
    out = product(stacked)  # (..., H_kv, g·T, M)
    return out.reshape(*x.shape[:-3], h, t, out.size(-1))  # (..., H, T, M)


class MultiHeadAttention(nn.Module):
    """Multi-head attention (Vaswani et al. 2017) with separate query, key, value and output projections.

    Two paths compute the same function: the fused ``F.scaled_dot_product_attention`` when the weights are not
    needed (fast, memory-light), and the explicit softmax of :func:`scaled_dot_product_attention` when they are.

    Args:
        d_model: model width C; the input and output size.
        n_heads: number of heads H; must divide ``d_model``.
        dropout: dropout probability on the attention weights (training only).
        bias: whether the four projections have biases.
        n_kv_heads: key/value heads H_kv (Ainslie et al. 2023, grouped-query attention): query head ``h`` reads
            key/value head ``h // (H / H_kv)``; ``None`` means H (one each), 1 is multi-query attention.
        qkv_bias: biases on the query, key and value projections (``None``: as ``bias``; Qwen2 has them alone).

    Shape:
        - query ``(B, T, C)``, key and value ``(B, S, C)``
        - mask: boolean broadcastable to ``(B, H, T, S)``, ``True`` = may attend
        - output ``(B, T, C)``; weights ``(B, H, T, S)`` over the H query heads when ``need_weights``, else ``None``
    """

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, bias: bool = True, *,
                 n_kv_heads: int | None = None, qkv_bias: bool | None = None) -> None:
        super().__init__()
        # The same checks and messages as TransformerConfig, for blocks built on their own.
        check_positive(d_model=whole_number("d_model", d_model), n_heads=whole_number("n_heads", n_heads))
        check_heads(d_model, n_heads)
        n_kv_heads = n_heads if n_kv_heads is None else whole_number("n_kv_heads", n_kv_heads)
        check_kv_heads(n_heads, n_kv_heads)
        qkv_bias = bias if qkv_bias is None else qkv_bias
        self.d_model = d_model
        self.n_heads = n_heads
        self.n_kv_heads = n_kv_heads
        self.head_dim = d_model // n_heads
        self.dropout = dropout
        kv_width = n_kv_heads * self.head_dim
        self.q_proj = nn.Linear(d_model, d_model, bias=qkv_bias)
        self.k_proj = nn.Linear(d_model, kv_width, bias=qkv_bias)
        self.v_proj = nn.Linear(d_model, kv_width, bias=qkv_bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    @property
    def group_size(self) -> int:
        """Query heads that share one key/value head (1 without grouping, H for multi-query attention)."""
        return self.n_heads // self.n_kv_heads

    def kv_group(self, head: int) -> int:
        """The key/value head that query head ``head`` reads."""
        if not 0 <= head < self.n_heads:
            raise ValueError(f"head={head} must be from 0 to {self.n_heads - 1}.")
        return head // self.group_size

    def expand_kv(self, x: torch.Tensor) -> torch.Tensor:
        """Keys or values ``(B, H_kv, S, D)`` repeated for the query heads of each group, ``(B, H, S, D)``."""
        return x if self.group_size == 1 else x.repeat_interleave(self.group_size, dim=1)

    def _project(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, pack: bool):
        # One matmul for Q, K and V in self-attention (and for K, V in cross-attention): the same maths as three
        # Linear layers, but fewer, larger kernels, which matters for the small models this app trains. Cached
        # decoding projects one token at a time, where copying the weights together would cost more than it saves.
        projs = (self.q_proj, self.k_proj, self.v_proj)
        if not pack:
            return self.q_proj(query), self.k_proj(key), self.v_proj(value)
        widths = [p.out_features for p in projs]  # (C, C_kv, C_kv)
        if query is key and key is value:
            return self._packed(query, projs).split(widths, dim=-1)
        if key is value:
            return (self.q_proj(query), *self._packed(key, projs[1:]).split(widths[1:], dim=-1))
        return self.q_proj(query), self.k_proj(key), self.v_proj(value)

    @staticmethod
    def _packed(x: torch.Tensor, projs: tuple[nn.Linear, ...]) -> torch.Tensor:
        weight = torch.cat([p.weight for p in projs])
        bias = None if projs[0].bias is None else torch.cat([p.bias for p in projs])
        return F.linear(x, weight, bias)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        b, n, width = x.shape  # width C for queries, C_kv for grouped keys and values
        return x.view(b, n, width // self.head_dim, self.head_dim).transpose(1, 2)  # (B, H|H_kv, N, D)

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor,
        value: torch.Tensor,
        mask: torch.Tensor | None = None,
        need_weights: bool = False,
        is_causal: bool = False,
        positions: AttentionPositions | None = None,
        cache: LayerCache | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Attend from ``query`` to ``key``/``value``.

        Args:
            mask: boolean, ``True`` = may attend, broadcastable to ``(B, H, T, S)``.
            need_weights: also return the per-head attention weights (uses the explicit path).
            is_causal: additionally forbid attending to later positions.
            positions: optional positions acting inside attention (see ``positional.base``): they may rotate
                ``(q, k)`` (RoPE) and add a bias ``(H, T, S)`` to the scaled scores (ALiBi).
            cache: self-attention's keys and values of the tokens read before ``query`` (cached decoding); the
                new ones are added to it, and the queries attend to all of them as the last T positions.
        """
        projected = self._project(query, key, value, pack=cache is None)
        q, k, v = (self._split_heads(x) for x in projected)  # (B, H, T, D) and (B, H_kv, S, D)
        past = 0 if cache is None else cache.length
        if positions is not None:
            q, k = positions.rotate_qk(q, k, start=past)
        if cache is not None:
            k, v = cache.append(k, v)  # (B, H_kv, past + T, D): the cache keeps the smaller, shared heads
        t, s = q.size(-2), k.size(-2)
        bias = None
        if positions is not None:
            bias = positions.score_bias(t, s, device=q.device, dtype=q.dtype)  # (H, T, S) or None
        if is_causal and t == 1 and mask is None:
            is_causal = False  # a single newest query may see every key: no mask to build
        if is_causal and (mask is not None or need_weights or t != s or bias is not None):
            # The fused kernel's own causal flag only covers the plain square case without a bias.
            mask = combine_masks(mask, causal_mask(t, s, device=q.device))
            is_causal = False
        p = self.dropout if self.training else 0.0
        if need_weights:  # grouped keys and values are read by each group's query heads, not copied
            out, weights = scaled_dot_product_attention(q, k, v, mask=mask, dropout_p=p, bias=bias)
        else:
            out, weights = self._fused(q, k, v, mask, p, is_causal, bias), None
        out = edit_heads(self, out)  # (B, H, T, D): unchanged unless an intervention switched heads off
        out = out.transpose(1, 2).reshape(out.size(0), t, self.d_model)  # (B, T, C)
        return self.out_proj(out), weights

    def _fused(self, q, k, v, mask, dropout_p: float, is_causal: bool, bias: torch.Tensor | None) -> torch.Tensor:
        gqa = self.group_size > 1  # the kernel reads each shared key/value head for its group, without copies
        if mask is None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, is_causal=is_causal,
                                                  enable_gqa=gqa)
        mask, has_key = _guard_empty_rows(mask)
        if bias is not None:
            # A float attn_mask is added to the scores: the bias where attending is allowed, -inf elsewhere.
            mask = bias.masked_fill(~mask, float("-inf"))  # (B|1, H, T, S)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, enable_gqa=gqa)
        return out * has_key  # (B, H, T, D); fully masked queries output zeros, as in the explicit path
