"""Transformer blocks: position-wise feed-forward, the self-attention block and the encoder–decoder's decoder block.

:class:`SelfAttentionBlock` is the block of every stack that attends only to itself: the encoder of the 2017
Transformer and of BERT, the decoder-only GPT (called with ``is_causal=True``) and the ViT. :class:`DecoderBlock`
adds cross-attention to an encoder's output, as the 2017 Transformer's decoder does.

Each block supports both LayerNorm placements:

- ``"post"`` (Vaswani et al. 2017): ``x = norm(x + sublayer(x))``
- ``"pre"`` (GPT-2, ViT): ``x = x + sublayer(norm(x))`` — trains more stably, needs a final norm in the model.

The arithmetic matches ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer`` (tested with copied weights).
The modern (Llama) block is the same pre-norm block with other parts: ``norm_kind="rmsnorm"``,
``feed_forward="swiglu"``, fewer key/value heads (``n_kv_heads``) and no biases but, for Qwen2, on Q, K and V.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .feed_forward import FeedForward, activation_function, build_feed_forward
from .kv_cache import LayerCache
from .norms import build_norm
from .positional.base import AttentionPositions
from .probes import probe

__all__ = ["DecoderBlock", "FeedForward", "SelfAttentionBlock", "activation_function"]


def _check_norm(norm: str) -> None:
    if norm not in ("pre", "post"):
        raise ValueError(f"norm={norm!r} must be 'pre' or 'post'.")


class _Parts:
    """What every block builds the same way: its attention modules, feed-forward network and norms."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float, activation: str, bias: bool,
                 eps: float, norm_kind: str, feed_forward: str, n_kv_heads: int | None, qkv_bias: bool | None):
        self.d_model, self.eps, self.bias, self.norm_kind = d_model, eps, bias, norm_kind
        self.attention = dict(dropout=dropout, bias=bias, n_kv_heads=n_kv_heads, qkv_bias=qkv_bias)
        self.n_heads = n_heads
        self.ff = dict(kind=feed_forward, d_model=d_model, d_ff=d_ff, dropout=dropout, activation=activation,
                       bias=bias)

    def attn(self) -> MultiHeadAttention:
        return MultiHeadAttention(self.d_model, self.n_heads, **self.attention)

    def feed_forward(self) -> nn.Module:
        return build_feed_forward(**self.ff)

    def norm(self) -> nn.Module:
        return build_norm(self.norm_kind, self.d_model, eps=self.eps, bias=self.bias)


class SelfAttentionBlock(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and a norm (LayerNorm or RMSNorm).

    An encoder block as it is (every position sees every other), a decoder-only (GPT) block with ``is_causal=True``.

    Shape:
        ``x`` ``(B, T, C)`` -> ``(B, T, C)``; weights ``(B, H, T, T)`` when ``need_weights``.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0, norm: str = "pre",
                 activation: str = "relu", bias: bool = True, eps: float = 1e-5, norm_kind: str = "layernorm",
                 feed_forward: str = "mlp", n_kv_heads: int | None = None, qkv_bias: bool | None = None) -> None:
        super().__init__()
        _check_norm(norm)
        parts = _Parts(d_model, n_heads, d_ff, dropout=dropout, activation=activation, bias=bias, eps=eps,
                       norm_kind=norm_kind, feed_forward=feed_forward, n_kv_heads=n_kv_heads, qkv_bias=qkv_bias)
        self.norm_first = norm == "pre"
        self.self_attn = parts.attn()
        self.ff = parts.feed_forward()
        self.norm1 = parts.norm()
        self.norm2 = parts.norm()
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)

    def _sa(self, x, mask, need_weights, is_causal, positions, cache):
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights, is_causal=is_causal,
                                      positions=positions, cache=cache)
        return self.dropout1(out), weights

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None, need_weights: bool = False,
                is_causal: bool = False, positions: AttentionPositions | None = None,
                cache: LayerCache | None = None) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``cache``: this block's keys and values of earlier tokens (cached decoding), extended by ``x``'s."""
        x = probe(self, "resid_pre", x)  # (B, T, C); probes.py: read or patched by an interpretability method
        if self.norm_first:
            attn, weights = self._sa(self.norm1(x), mask, need_weights, is_causal, positions, cache)
            x = x + attn
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:
            attn, weights = self._sa(x, mask, need_weights, is_causal, positions, cache)
            x = self.norm1(x + attn)
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return probe(self, "resid_post", x), weights


class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention to the encoder's memory, then feed-forward.

    Shape:
        ``x`` ``(B, T, C)``, ``memory`` ``(B, S, C)`` -> ``(B, T, C)``; self weights ``(B, H, T, T)`` and
        cross weights ``(B, H, T, S)`` when ``need_weights``.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0, norm: str = "pre",
                 activation: str = "relu", bias: bool = True, eps: float = 1e-5, norm_kind: str = "layernorm",
                 feed_forward: str = "mlp", n_kv_heads: int | None = None, qkv_bias: bool | None = None) -> None:
        super().__init__()
        _check_norm(norm)
        parts = _Parts(d_model, n_heads, d_ff, dropout=dropout, activation=activation, bias=bias, eps=eps,
                       norm_kind=norm_kind, feed_forward=feed_forward, n_kv_heads=n_kv_heads, qkv_bias=qkv_bias)
        self.norm_first = norm == "pre"
        self.self_attn = parts.attn()
        self.cross_attn = parts.attn()
        self.ff = parts.feed_forward()
        self.norm1 = parts.norm()
        self.norm2 = parts.norm()
        self.norm3 = parts.norm()
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)

    def _sa(self, x, mask, need_weights, positions):
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights, is_causal=True,
                                      positions=positions)
        return self.dropout1(out), weights

    def _ca(self, x, memory, mask, need_weights):
        out, weights = self.cross_attn(x, memory, memory, mask=mask, need_weights=need_weights)
        return self.dropout2(out), weights

    def forward(self, x: torch.Tensor, memory: torch.Tensor, self_mask: torch.Tensor | None = None,
                memory_mask: torch.Tensor | None = None, need_weights: bool = False,
                positions: AttentionPositions | None = None
                ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None]:
        """Self-attention is always causal; ``self_mask`` may add padding, ``memory_mask`` hides source padding."""
        x = probe(self, "resid_pre", x)  # (B, T, C); see probes.py
        if self.norm_first:
            sa, self_w = self._sa(self.norm1(x), self_mask, need_weights, positions)
            x = x + sa
            ca, cross_w = self._ca(self.norm2(x), memory, memory_mask, need_weights)
            x = x + ca
            x = x + self.dropout3(self.ff(self.norm3(x)))
        else:
            sa, self_w = self._sa(x, self_mask, need_weights, positions)
            x = self.norm1(x + sa)
            ca, cross_w = self._ca(x, memory, memory_mask, need_weights)
            x = self.norm2(x + ca)
            x = self.norm3(x + self.dropout3(self.ff(x)))
        return probe(self, "resid_post", x), self_w, cross_w
