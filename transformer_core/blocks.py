"""Transformer blocks: position-wise feed-forward, the self-attention block and the encoder–decoder's decoder block.

:class:`SelfAttentionBlock` is the block of every stack that attends only to itself: the encoder of the 2017
Transformer and of BERT, the decoder-only GPT (called with ``is_causal=True``) and the ViT. :class:`DecoderBlock`
adds cross-attention to an encoder's output, as the 2017 Transformer's decoder does.

Each block supports both LayerNorm placements:

- ``"post"`` (Vaswani et al. 2017): ``x = norm(x + sublayer(x))``
- ``"pre"`` (GPT-2, ViT): ``x = x + sublayer(norm(x))`` — trains more stably, needs a final norm in the model.

The arithmetic matches ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer`` (tested with copied weights).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .attention import MultiHeadAttention
from .kv_cache import LayerCache
from .positional.base import AttentionPositions

_ACTIVATIONS = {
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),  # GPT-2's "gelu_new"
}


def activation_function(name: str):
    """The element-wise non-linearity called ``name``: "relu", "gelu" or "gelu_tanh"."""
    if name not in _ACTIVATIONS:
        raise ValueError(f"activation={name!r} is not one of {', '.join(_ACTIVATIONS)}.")
    return _ACTIVATIONS[name]


class FeedForward(nn.Module):
    """``linear2(dropout(activation(linear1(x))))``, applied to every position independently.

    Shape:
        ``(B, T, C)`` -> ``(B, T, C)`` with a hidden width ``d_ff``.
    """

    def __init__(self, d_model: int, d_ff: int, *, dropout: float = 0.0, activation: str = "relu",
                 bias: bool = True) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation={activation!r} is not one of {', '.join(_ACTIVATIONS)}.")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear2(self.dropout(_ACTIVATIONS[self.activation](self.linear1(x))))


def _check_norm(norm: str) -> None:
    if norm not in ("pre", "post"):
        raise ValueError(f"norm={norm!r} must be 'pre' or 'post'.")


class SelfAttentionBlock(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and a LayerNorm.

    An encoder block as it is (every position sees every other), a decoder-only (GPT) block with ``is_causal=True``.

    Shape:
        ``x`` ``(B, T, C)`` -> ``(B, T, C)``; weights ``(B, H, T, T)`` when ``need_weights``.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0, norm: str = "pre",
                 activation: str = "relu", bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        _check_norm(norm)
        self.norm_first = norm == "pre"
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
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
        if self.norm_first:
            attn, weights = self._sa(self.norm1(x), mask, need_weights, is_causal, positions, cache)
            x = x + attn
            x = x + self.dropout2(self.ff(self.norm2(x)))
        else:
            attn, weights = self._sa(x, mask, need_weights, is_causal, positions, cache)
            x = self.norm1(x + attn)
            x = self.norm2(x + self.dropout2(self.ff(x)))
        return x, weights


class DecoderBlock(nn.Module):
    """Masked self-attention, cross-attention to the encoder's memory, then feed-forward.

    Shape:
        ``x`` ``(B, T, C)``, ``memory`` ``(B, S, C)`` -> ``(B, T, C)``; self weights ``(B, H, T, T)`` and
        cross weights ``(B, H, T, S)`` when ``need_weights``.
    """

    def __init__(self, d_model: int, n_heads: int, d_ff: int, *, dropout: float = 0.0, norm: str = "pre",
                 activation: str = "relu", bias: bool = True, eps: float = 1e-5) -> None:
        super().__init__()
        _check_norm(norm)
        self.norm_first = norm == "pre"
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout, bias=bias)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout, activation=activation, bias=bias)
        self.norm1 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm2 = nn.LayerNorm(d_model, eps=eps, bias=bias)
        self.norm3 = nn.LayerNorm(d_model, eps=eps, bias=bias)
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
        return x, self_w, cross_w
