"""BERT-style encoder (Devlin et al. 2018): segment embeddings, an embedding LayerNorm and a masked-LM head.

The blocks are this package's post-norm :class:`~transformer_core.blocks.SelfAttentionBlock`; what BERT adds sits at
both ends of the stack: the input is ``LayerNorm(token + position + segment)`` (no √C scaling) and the
masked-LM head maps each output vector back to the vocabulary through the tied token embedding.
"""

from __future__ import annotations

import torch
from torch import nn

from .blocks import SelfAttentionBlock, activation_function
from .config import TransformerConfig
from .masks import padding_mask
from .positional import PositionalEncoding
from .probes import probe


class SegmentEmbedding(nn.Module):
    """``LayerNorm(token + position + segment)`` followed by dropout, as BERT embeds its input.

    With ``segments=0`` there is no segment table and the input is ``LayerNorm(token + position)`` (DistilBERT).

    Shape:
        tokens and token_type_ids ``(B, T)`` long -> ``(B, T, C)``.
    """

    def __init__(self, config: TransformerConfig, segments: int) -> None:
        super().__init__()
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.positions = PositionalEncoding(config.positional, config.max_len, config.d_model, config.pos_base)
        self.segments = nn.Embedding(segments, config.d_model) if segments else None
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, tokens: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        x = probe(self, "tokens", self.tokens(tokens))  # (B, T, C); see probes.py
        if self.segments is not None:
            x = x + self.segments(token_type_ids)
        x = self.positions(x)
        return self.dropout(self.norm(x))


class MaskedLMHead(nn.Module):
    """``decoder(LayerNorm(activation(dense(x)))) + bias``; the decoder's weight is the token embedding.

    Shape:
        ``(B, T, C)`` -> logits ``(B, T, V)``.
    """

    def __init__(self, config: TransformerConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.activation = activation_function(config.activation)
        self.dense = nn.Linear(config.d_model, config.d_model)
        self.norm = nn.LayerNorm(config.d_model, eps=config.layer_norm_eps)
        self.decoder = nn.Linear(config.d_model, config.vocab_size, bias=False)
        self.decoder.weight = embedding.weight  # tied, as in BERT
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.activation(self.dense(x)))) + self.bias


class BertEncoder(nn.Module):
    """Encoder-only model with segment embeddings and, optionally, a masked-LM head.

    Use a config with ``norm="post"``, ``positional="learned"`` and ``embed_scale=False`` to match BERT.

    Args:
        config: the text model's configuration.
        segments: number of segment (token-type) ids; BERT uses 2 (sentence A and sentence B), RoBERTa 1,
            DistilBERT 0 (no segment embedding).
        mlm_head: end with the masked-LM head (logits over the vocabulary); without it the model returns the
            final hidden states.

    Shape:
        tokens ``(B, T)`` -> logits ``(B, T, V)`` (or hidden states ``(B, T, C)``); attention ``"encoder"``
        ``(B, H, T, T)``.
    """

    def __init__(self, config: TransformerConfig, *, segments: int = 2, mlm_head: bool = True) -> None:
        super().__init__()
        if segments < 0:
            raise ValueError(f"segments={segments} must be zero or more.")
        self.config = config
        c = config
        self.embed = SegmentEmbedding(config, segments)
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(c.d_model, c.n_heads, c.d_ff, dropout=c.dropout, norm=c.norm, activation=c.activation,
                               bias=c.bias, eps=c.layer_norm_eps)
            for _ in range(c.n_layers)
        )
        self.head = MaskedLMHead(config, self.embed.tokens) if mlm_head else None

    def forward(self, tokens: torch.Tensor, *, token_type_ids: torch.Tensor | None = None,
                valid: torch.Tensor | None = None, return_attention: bool = False):
        """Args:
            token_type_ids: ``(B, T)`` segment ids; zeros (one segment) when not given.
            valid: ``(B, T)`` boolean, ``True`` for real tokens; padding is hidden from every query.
        """
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(tokens)
        mask = None if valid is None else padding_mask(valid)  # (B, 1, 1, T)
        x, weights = self.embed(tokens, token_type_ids), []
        for block in self.blocks:
            x, w = block(x, mask=mask, need_weights=return_attention)
            weights.append(w)
        out = x if self.head is None else self.head(x)
        return (out, {"encoder": weights}) if return_attention else out
