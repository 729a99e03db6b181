"""BERT (Devlin et al. 2018): segment embeddings, an embedding norm, and a masked-LM head or a pooler as needed.

The blocks are this package's :class:`~transformer_core.blocks.SelfAttentionBlock`, built from the config like every
other model's; what BERT adds sits at both ends of the stack: the input is ``norm(token + position + segment)`` and
the masked-LM head maps each output vector back to the vocabulary through the (tied) token embedding. The one
class serves the published BERT, RoBERTa and DistilBERT files (``pretrained/``) and the BERT-base preset (with its
pooler, ``tanh(Linear(CLS))``).

Every config field is honoured: a BERT-shaped config says ``norm_position="post"``, ``positional="learned"``,
``embed_scale=False`` and ``tie_weights=True``; other values build that variant (pre-norm ends with a final norm,
rotary or ALiBi positions act inside attention, RMSNorm replaces every LayerNorm, ``pad_id`` hides padding).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .blocks import activation_function, block_norm
from .config import TransformerConfig
from .masks import padding_mask, valid_from_tokens
from .models import Attention, attn_positions, final_norm, refuse_decoder_layers, self_attention_blocks
from .positional import PositionalEncoding
from .probes import probe


class SegmentEmbedding(nn.Module):
    """``norm(token · scale + position + segment)`` followed by dropout, as BERT embeds its input.

    With ``segments=0`` there is no segment table and the input is ``norm(token + position)`` (DistilBERT). The
    scale is √C with ``embed_scale`` (BERT itself: 1).

    Shape:
        tokens and token_type_ids ``(B, T)`` long -> ``(B, T, C)``.
    """

    def __init__(self, config: TransformerConfig, segments: int) -> None:
        super().__init__()
        self.scale = math.sqrt(config.d_model) if config.embed_scale else 1.0
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        self.positions = PositionalEncoding(config.positional, config.max_len, config.d_model, config.pos_base)
        self.segments = nn.Embedding(segments, config.d_model) if segments else None
        self.norm = block_norm(config.block())
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, tokens: torch.Tensor, token_type_ids: torch.Tensor) -> torch.Tensor:
        x = probe(self, "tokens", self.tokens(tokens)) * self.scale  # (B, T, C); rows probed before scaling (probes.py)
        if self.segments is not None:
            x = x + self.segments(token_type_ids)
        x = self.positions(x)
        return self.dropout(self.norm(x))


class MaskedLMHead(nn.Module):
    """``decoder(norm(activation(dense(x)))) + bias``; the decoder's weight is the token embedding when tied.

    Shape:
        ``(B, T, C)`` -> logits ``(B, T, V)``.
    """

    def __init__(self, config: TransformerConfig, embedding: nn.Embedding) -> None:
        super().__init__()
        self.activation = activation_function(config.activation)
        self.dense = nn.Linear(config.d_model, config.d_model, bias=config.bias)
        self.norm = block_norm(config.block())
        self.decoder = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.decoder.weight = embedding.weight  # tied, as in BERT
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decoder(self.norm(self.activation(self.dense(x)))) + self.bias


class BertEncoder(nn.Module):
    """Encoder-only model with segment embeddings and, optionally, a masked-LM head and a pooler.

    Args:
        config: the text model's configuration (``n_decoder_layers`` must be unset: there is no decoder).
        segments: number of segment (token-type) ids; BERT uses 2 (sentence A and sentence B), RoBERTa 1,
            DistilBERT 0 (no segment embedding).
        mlm_head: end with the masked-LM head (:meth:`forward` gives logits over the vocabulary); without it
            :meth:`forward` gives the final hidden states.
        pooler: add BERT's pooler, ``tanh(Linear(h_CLS))``, read by :meth:`pooled`.

    Shape:
        tokens ``(B, T)`` -> logits ``(B, T, V)`` (or hidden states ``(B, T, C)``); attention ``"encoder"``
        ``(B, H, T, T)``.
    """

    def __init__(self, config: TransformerConfig, *, segments: int = 2, mlm_head: bool = True,
                 pooler: bool = False) -> None:
        super().__init__()
        if segments < 0:
            raise ValueError(f"segments={segments} must be zero or more.")
        refuse_decoder_layers(config, "BERT encoder")
        self.config = config
        self.embed = SegmentEmbedding(config, segments)
        self.blocks = self_attention_blocks(config)
        self.final_norm = final_norm(config)
        self.attn_positions = attn_positions(config)
        self.head = MaskedLMHead(config, self.embed.tokens) if mlm_head else None
        self.pooler = nn.Linear(config.d_model, config.d_model, bias=config.bias) if pooler else None

    def _run(self, tokens: torch.Tensor, token_type_ids: torch.Tensor | None, valid: torch.Tensor | None,
             need_weights: bool) -> tuple[torch.Tensor, Attention]:
        if token_type_ids is None:
            token_type_ids = torch.zeros_like(tokens)
        if valid is None:
            valid = valid_from_tokens(tokens, self.config.pad_id)
        mask = None if valid is None else padding_mask(valid)  # (B, 1, 1, T)
        x, weights = self.embed(tokens, token_type_ids), []
        for block in self.blocks:
            x, w = block(x, mask=mask, need_weights=need_weights, positions=self.attn_positions)
            weights.append(w)
        return self.final_norm(x), {"encoder": weights}

    def encode(self, tokens: torch.Tensor, *, token_type_ids: torch.Tensor | None = None,
               valid: torch.Tensor | None = None) -> torch.Tensor:
        """The final hidden states ``(B, T, C)``, before any head.

        Args:
            token_type_ids: ``(B, T)`` segment ids; zeros (one segment) when not given.
            valid: ``(B, T)`` boolean, ``True`` for real tokens; padding is hidden from every query. When not
                given, read from the config's ``pad_id`` (no padding without one).
        """
        return self._run(tokens, token_type_ids, valid, need_weights=False)[0]

    def forward(self, tokens: torch.Tensor, *, token_type_ids: torch.Tensor | None = None,
                valid: torch.Tensor | None = None) -> torch.Tensor:
        """Masked-LM logits ``(B, T, V)``, or the hidden states ``(B, T, C)`` without a head; see :meth:`encode`."""
        x, _ = self._run(tokens, token_type_ids, valid, need_weights=False)
        return x if self.head is None else self.head(x)

    def forward_with_attention(self, tokens: torch.Tensor, *, token_type_ids: torch.Tensor | None = None,
                               valid: torch.Tensor | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`forward`, and each block's weights ``{"encoder": [(B, H, T, T), ...]}``."""
        x, attention = self._run(tokens, token_type_ids, valid, need_weights=True)
        return (x if self.head is None else self.head(x)), attention

    def pooled(self, tokens: torch.Tensor, *, token_type_ids: torch.Tensor | None = None,
               valid: torch.Tensor | None = None) -> torch.Tensor:
        """BERT's pooled output ``(B, C)``: ``tanh(Linear(h))`` of the first ([CLS]) token's hidden state."""
        if self.pooler is None:
            raise ValueError("This BERT was built without a pooler (pooler=False).")
        hidden = self.encode(tokens, token_type_ids=token_type_ids, valid=valid)  # (B, T, C)
        return torch.tanh(self.pooler(hidden[:, 0]))
