"""Transformer blocks: the self-attention block and the encoder–decoder's decoder block.

:class:`SelfAttentionBlock` is the block of every stack that attends only to itself: the encoder of the 2017
Transformer and of BERT, the decoder-only GPT (called with ``is_causal=True``) and the ViT. :class:`DecoderBlock`
adds cross-attention to an encoder's output, as the 2017 Transformer's decoder does. Both are built from one
:class:`~transformer_core.config.BlockConfig` (a model makes it with ``config.block()``).

Each block supports both norm positions (``BlockConfig.norm_position``):

- ``"post"`` (Vaswani et al. 2017): ``x = norm(x + sublayer(x))``
- ``"pre"`` (GPT-2, ViT): ``x = x + sublayer(norm(x))`` — trains more stably, needs a final norm in the model.

The arithmetic matches ``torch.nn.TransformerEncoderLayer`` / ``TransformerDecoderLayer`` (tested with copied weights).
The modern (Llama) block is the same pre-norm block with other parts: ``norm_type="rmsnorm"``,
``feed_forward="swiglu"``, fewer key/value heads (``n_kv_heads``) and no biases but, for Qwen2, on Q, K and V.
"""

from __future__ import annotations

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import BlockConfig
from .feed_forward import FeedForward, activation_function, build_feed_forward
from .kv_cache import LayerCache
from .norms import build_norm
from .positional.base import AttentionPositions
from .probes import probe

__all__ = ["BlockConfig", "DecoderBlock", "FeedForward", "SelfAttentionBlock", "activation_function", "block_norm"]


def block_attention(config: BlockConfig) -> MultiHeadAttention:
    """One attention module of a block (self- or cross-attention)."""
    return MultiHeadAttention(config.d_model, config.n_heads, dropout=config.dropout, bias=config.bias,
                              n_kv_heads=config.n_kv_heads, qkv_bias=config.qkv_bias)


def block_feed_forward(config: BlockConfig) -> nn.Module:
    """The block's position-wise feed-forward network (the MLP or SwiGLU)."""
    return build_feed_forward(config.feed_forward, config.d_model, config.d_ff, dropout=config.dropout,
                              activation=config.activation, bias=config.bias)


def block_norm(config: BlockConfig) -> nn.Module:
    """One norm of the block's kind (LayerNorm or RMSNorm); models use it for their final norm too."""
    return build_norm(config.norm_type, config.d_model, eps=config.layer_norm_eps, bias=config.bias)


class SelfAttentionBlock(nn.Module):
    """Self-attention then feed-forward, each wrapped in a residual connection and a norm (LayerNorm or RMSNorm).

    An encoder block as it is (every position sees every other), a decoder-only (GPT) block with ``is_causal=True``.
    Submodules: ``self_attn``, ``ff``, ``norm1`` (before or after attention), ``norm2`` (before or after ``ff``).

    Shape:
        ``x`` ``(B, T, C)`` -> ``(B, T, C)``; weights ``(B, H, T, T)`` when ``need_weights``.
    """

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.norm_first = config.pre_norm
        self.self_attn = block_attention(config)
        self.ff = block_feed_forward(config)
        self.norm1 = block_norm(config)
        self.norm2 = block_norm(config)
        self.dropout1 = nn.Dropout(config.dropout)
        self.dropout2 = nn.Dropout(config.dropout)

    def _sa(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool, is_causal: bool,
            positions: AttentionPositions | None, cache: LayerCache | None) -> tuple[torch.Tensor, torch.Tensor | None]:
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

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        self.norm_first = config.pre_norm
        self.self_attn = block_attention(config)
        self.cross_attn = block_attention(config)
        self.ff = block_feed_forward(config)
        self.norm1 = block_norm(config)
        self.norm2 = block_norm(config)
        self.norm3 = block_norm(config)
        self.dropout1 = nn.Dropout(config.dropout)
        self.dropout2 = nn.Dropout(config.dropout)
        self.dropout3 = nn.Dropout(config.dropout)

    def _sa(self, x: torch.Tensor, mask: torch.Tensor | None, need_weights: bool,
            positions: AttentionPositions | None) -> tuple[torch.Tensor, torch.Tensor | None]:
        out, weights = self.self_attn(x, x, x, mask=mask, need_weights=need_weights, is_causal=True,
                                      positions=positions)
        return self.dropout1(out), weights

    def _ca(self, x: torch.Tensor, memory: torch.Tensor, mask: torch.Tensor | None,
            need_weights: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
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
