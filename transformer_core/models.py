"""The text models: encoder-decoder, decoder-only and encoder-only (sequence regression).

All share one convention, for ``forward`` and for the encoder–decoder's ``encode`` and ``decode`` alike: the method
returns the output alone, and its ``..._with_attention`` twin (``forward_with_attention``, ``encode_with_attention``,
``decode_with_attention``) returns ``(output, attention)``, where ``attention`` (:data:`Attention`) maps
``"encoder"``, ``"decoder"`` and/or ``"cross"`` to a per-layer list of ``(B, H, T, S)`` weight tensors. Nothing is
stored on the modules during ``forward``, so one model can serve several callers at once.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .blocks import DecoderBlock, SelfAttentionBlock, block_norm
from .config import TransformerConfig
from .generation import generate_batch
from .kv_cache import KVCache
from .masks import padding_mask, valid_from_tokens
from .positional import AttentionPositions, PositionalEncoding, attention_positions
from .probes import probe

# Attention weights by kind ("encoder", "decoder", "cross"): one (B, H, T, S) tensor per layer, first layer first.
Attention = dict[str, list[torch.Tensor]]


class TextEmbedding(nn.Module):
    """Token embedding scaled by √C (section 3.4 of the 2017 paper; off with ``embed_scale=False``), plus positions
    and dropout.

    Shape:
        tokens ``(B, T)`` long -> ``(B, T, C)``.
    """

    def __init__(self, config: TransformerConfig, max_len: int | None = None) -> None:
        super().__init__()
        self.scale = math.sqrt(config.d_model) if config.embed_scale else 1.0
        self.tokens = nn.Embedding(config.vocab_size, config.d_model)
        # std C^-0.5 so that the scaled embeddings start with unit variance, like the positional table.
        nn.init.normal_(self.tokens.weight, std=config.d_model**-0.5)
        self.positions = PositionalEncoding(config.positional, max_len or config.max_len, config.d_model,
                                            config.pos_base)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, tokens: torch.Tensor, offset: int = 0) -> torch.Tensor:
        """``offset``: the position of the first token (the tokens already read, in cached decoding)."""
        rows = probe(self, "tokens", self.tokens(tokens))  # (B, T, C): the rows looked up, see probes.py
        return self.dropout(self.positions(rows * self.scale, offset))


def attn_positions(config: TransformerConfig) -> AttentionPositions | None:
    """RoPE, ALiBi and other encodings that act inside self-attention; None for those that act on the embeddings."""
    return attention_positions(config.positional, config.head_dim, config.n_heads, config.max_len, config.pos_base,
                               config.rope_scaling)


def self_attention_blocks(config: TransformerConfig) -> nn.ModuleList:
    """The ``n_layers`` self-attention blocks of a one-stack model (or of an encoder), made as ``config`` says."""
    return nn.ModuleList(SelfAttentionBlock(config.block()) for _ in range(config.n_layers))


def refuse_decoder_layers(config: TransformerConfig, model: str) -> None:
    """Raise ValueError when ``config`` sets ``n_decoder_layers`` for a model with one stack (it has no decoder)."""
    if config.n_decoder_layers is not None:
        raise ValueError(f"n_decoder_layers={config.n_decoder_layers}: the {model} has one stack of n_layers "
                         "blocks and no separate decoder; leave it unset.")


def final_norm(config: TransformerConfig) -> nn.Module:
    """The norm after the last block: pre-norm leaves the residual stream un-normalised, post-norm does not."""
    return block_norm(config.block()) if config.pre_norm else nn.Identity()


def _key_mask(valid: torch.Tensor | None) -> torch.Tensor | None:
    return None if valid is None else padding_mask(valid)


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder transformer with a projection to the vocabulary (Vaswani et al. 2017).

    Shape:
        src ``(B, S)`` and tgt ``(B, T)`` token ids -> logits ``(B, T, V)``. Attention: ``"encoder"``
        ``(B, H, S, S)``, ``"decoder"`` ``(B, H, T, T)`` (causal), ``"cross"`` ``(B, H, T, S)``.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        self.config = config
        self.src_embed = TextEmbedding(config)
        self.tgt_embed = TextEmbedding(config)
        if config.tie_weights:
            self.tgt_embed.tokens = self.src_embed.tokens
        self.encoder = self_attention_blocks(config)
        self.decoder = nn.ModuleList(DecoderBlock(config.block()) for _ in range(config.decoder_layers))
        self.encoder_norm = final_norm(config)
        self.decoder_norm = final_norm(config)
        self.attn_positions = attn_positions(config)
        self.generator = nn.Linear(config.d_model, config.vocab_size, bias=not config.tie_weights)
        if config.tie_weights:
            self.generator.weight = self.src_embed.tokens.weight

    def _valid(self, tokens: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor | None:
        """``valid`` as given, else read from the tokens' ``pad_id`` (None: no padding)."""
        return valid if valid is not None else valid_from_tokens(tokens, self.config.pad_id)

    def _encode(self, src: torch.Tensor, src_valid: torch.Tensor | None,
                need_weights: bool) -> tuple[torch.Tensor, Attention]:
        mask = _key_mask(self._valid(src, src_valid))
        x, weights = self.src_embed(src), []  # (B, S, C)
        for block in self.encoder:
            x, w = block(x, mask=mask, need_weights=need_weights, positions=self.attn_positions)
            weights.append(w)
        return self.encoder_norm(x), {"encoder": weights}

    def encode(self, src: torch.Tensor, *, src_valid: torch.Tensor | None = None) -> torch.Tensor:
        """Run the encoder: ``(B, S)`` ids -> memory ``(B, S, C)``."""
        return self._encode(src, src_valid, need_weights=False)[0]

    def encode_with_attention(self, src: torch.Tensor, *,
                              src_valid: torch.Tensor | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`encode`, and the encoder's attention weights ``{"encoder": [(B, H, S, S), ...]}``."""
        return self._encode(src, src_valid, need_weights=True)

    def _decode(self, tgt: torch.Tensor, memory: torch.Tensor, src_valid: torch.Tensor | None,
                tgt_valid: torch.Tensor | None, src: torch.Tensor | None,
                need_weights: bool) -> tuple[torch.Tensor, Attention]:
        if src_valid is None and src is not None:
            src_valid = self._valid(src, None)
        memory_mask = _key_mask(src_valid)
        self_mask = _key_mask(self._valid(tgt, tgt_valid))
        x, self_ws, cross_ws = self.tgt_embed(tgt), [], []  # (B, T, C)
        for block in self.decoder:
            x, sw, cw = block(x, memory, self_mask=self_mask, memory_mask=memory_mask,
                              need_weights=need_weights, positions=self.attn_positions)
            self_ws.append(sw)
            cross_ws.append(cw)
        logits = self.generator(self.decoder_norm(x))  # (B, T, V)
        return logits, {"decoder": self_ws, "cross": cross_ws}

    def decode(self, tgt: torch.Tensor, memory: torch.Tensor, *, src_valid: torch.Tensor | None = None,
               tgt_valid: torch.Tensor | None = None, src: torch.Tensor | None = None) -> torch.Tensor:
        """Run the decoder over ``tgt`` ``(B, T)`` attending to ``memory`` ``(B, S, C)``: logits ``(B, T, V)``.

        The source's padding is ``src_valid`` ``(B, S)``, or read from ``src``'s ``pad_id`` tokens when given.
        """
        return self._decode(tgt, memory, src_valid, tgt_valid, src, need_weights=False)[0]

    def decode_with_attention(self, tgt: torch.Tensor, memory: torch.Tensor, *,
                              src_valid: torch.Tensor | None = None, tgt_valid: torch.Tensor | None = None,
                              src: torch.Tensor | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`decode`, and its attention weights ``{"decoder": [(B, H, T, T), ...], "cross": [(B, H, T, S),
        ...]}``."""
        return self._decode(tgt, memory, src_valid, tgt_valid, src, need_weights=True)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, *, src_valid: torch.Tensor | None = None,
                tgt_valid: torch.Tensor | None = None) -> torch.Tensor:
        """Logits ``(B, T, V)`` for target ``tgt`` ``(B, T)`` given source ``src`` ``(B, S)`` (teacher forcing)."""
        src_valid = self._valid(src, src_valid)
        memory = self.encode(src, src_valid=src_valid)
        return self.decode(tgt, memory, src_valid=src_valid, tgt_valid=tgt_valid)

    def forward_with_attention(self, src: torch.Tensor, tgt: torch.Tensor, *, src_valid: torch.Tensor | None = None,
                               tgt_valid: torch.Tensor | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`forward`, and every attention weight: ``"encoder"``, ``"decoder"`` and ``"cross"``."""
        src_valid = self._valid(src, src_valid)
        memory, encoder = self.encode_with_attention(src, src_valid=src_valid)
        logits, decoder = self.decode_with_attention(tgt, memory, src_valid=src_valid, tgt_valid=tgt_valid)
        return logits, {**encoder, **decoder}

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, *, bos_id: int, max_new_tokens: int, eos_id: int | None = None,
                      src_valid: torch.Tensor | None = None) -> torch.Tensor:
        """Generate ``max_new_tokens`` tokens after BOS, always taking the most likely next token.

        Returns ``(B, 1 + max_new_tokens)`` ids starting with BOS; after a sequence emits EOS, the rest of it is
        filled with ``pad_id`` (or EOS when the config has no padding token).
        """
        src_valid = self._valid(src, src_valid)
        memory = self.encode(src, src_valid=src_valid)
        ys = torch.full((src.size(0), 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(src.size(0), dtype=torch.bool, device=src.device)
        filler = self.config.pad_id if self.config.pad_id is not None else eos_id
        for _ in range(max_new_tokens):
            logits = self.decode(ys, memory, src_valid=src_valid, tgt_valid=torch.ones_like(ys, dtype=torch.bool))
            nxt = logits[:, -1].argmax(dim=-1)  # (B,)
            if eos_id is not None:
                nxt = torch.where(finished, torch.full_like(nxt, filler), nxt)
                finished |= nxt == eos_id
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            if eos_id is not None and bool(finished.all()):
                pad = torch.full((ys.size(0), max_new_tokens + 1 - ys.size(1)), filler, dtype=torch.long,
                                 device=ys.device)
                return torch.cat([ys, pad], dim=1)
        return ys


class CausalLM(nn.Module):
    """Decoder-only language model (GPT style): causal self-attention blocks and a projection to the vocabulary.

    Padding comes from ``valid``, not from ``pad_id``: the tasks pad after the text, where causal attention cannot
    look back from a real token, and leave the padding out of their loss by ``pad_id``.

    Shape:
        idx ``(B, T)`` ids -> logits ``(B, T, V)``; attention ``"decoder"`` ``(B, H, T, T)``.
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        refuse_decoder_layers(config, "decoder-only model")
        self.config = config
        self.embed = TextEmbedding(config)
        self.blocks = self_attention_blocks(config)
        self.final_norm = final_norm(config)
        self.attn_positions = attn_positions(config)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.embed.tokens.weight

    def features(self, idx: torch.Tensor, *, valid: torch.Tensor | None = None, need_weights: bool = False,
                 cache: KVCache | None = None) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """The final-normalised hidden states ``(B, T, C)`` and each block's attention weights.

        Args:
            valid: ``(B, T)`` bool, False at padding (batches of unequal texts); combined with the causal mask.
            need_weights: return each block's ``(B, H, T, S)`` weights (else a list of ``None``).
            cache: the keys and values of the tokens read before ``idx`` (cached decoding); ``idx`` continues
                them, at positions ``cache.length`` onwards, and its keys and values are added.
        """
        mask = None if valid is None else padding_mask(valid)  # (B, 1, 1, T)
        offset = 0 if cache is None else cache.length
        x, weights = self.embed(idx, offset), []
        for i, block in enumerate(self.blocks):
            layer = None if cache is None else cache.layers[i]
            x, w = block(x, mask=mask, need_weights=need_weights, is_causal=True, positions=self.attn_positions,
                         cache=layer)
            weights.append(w)
        return self.final_norm(x), weights

    def forward(self, idx: torch.Tensor, *, valid: torch.Tensor | None = None,
                cache: KVCache | None = None) -> torch.Tensor:
        """Next-token logits ``(B, T, V)`` for token ids ``idx`` ``(B, T)``; see :meth:`features` for the rest."""
        x, _ = self.features(idx, valid=valid, cache=cache)
        return self.lm_head(x)  # (B, T, V)

    def forward_with_attention(self, idx: torch.Tensor, *, valid: torch.Tensor | None = None,
                               cache: KVCache | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`forward`, and each block's weights ``{"decoder": [(B, H, T, S), ...]}``."""
        x, weights = self.features(idx, valid=valid, need_weights=True, cache=cache)
        return self.lm_head(x), {"decoder": weights}

    def generate(self, idx: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
                 top_k: int | None = None, generator: torch.Generator | None = None,
                 stop_id: int | None = None) -> torch.Tensor:
        """Sample ``max_new_tokens`` tokens for a batch ``(B, T)``; ``temperature <= 0`` means greedy, ``top_k``
        keeps the k likeliest. Past ``max_len`` the model reads the last ``max_len`` tokens.

        With ``stop_id``, generation ends early once every sequence has produced that token (each keeps what it
        sampled after it, as it would without ``stop_id``, up to that step). One sequence token by token, with
        each step's logits and attention: :func:`transformer_core.generation.generate`.
        """
        return generate_batch(self, idx, max_new_tokens, temperature=max(temperature, 0.0), top_k=top_k,
                              generator=generator, stop_id=stop_id)


class SequenceRegressor(nn.Module):
    """Encoder-only model that predicts numbers for a whole sequence (e.g. a protein's hydropathy).

    ``pool="mean"`` averages the real (non-padding) token vectors; ``pool="cls"`` prepends a learned CLS vector
    and reads it out, as BERT does.

    Shape:
        tokens ``(B, S)`` -> ``(B, num_outputs)``; attention ``"encoder"`` ``(B, H, S', S')`` with ``S' = S``
        (mean) or ``S + 1`` (cls, CLS at index 0).
    """

    def __init__(self, config: TransformerConfig, num_outputs: int = 1, pool: str = "mean") -> None:
        super().__init__()
        if pool not in ("mean", "cls"):
            raise ValueError(f"pool={pool!r} must be 'mean' or 'cls'.")
        if num_outputs <= 0:
            raise ValueError(f"num_outputs={num_outputs} must be positive.")
        refuse_decoder_layers(config, "encoder-only model")
        if config.tie_weights:
            raise ValueError("tie_weights=True: the regressor predicts numbers, not tokens, so it has no output "
                             "projection to share with the token embedding.")
        self.config = config
        self.pool = pool
        self.embed = TextEmbedding(config)
        self.cls_token = nn.Parameter(torch.randn(1, 1, config.d_model) * 0.02) if pool == "cls" else None
        self.blocks = self_attention_blocks(config)
        self.final_norm = final_norm(config)
        self.attn_positions = attn_positions(config)
        self.head = nn.Linear(config.d_model, num_outputs)

    def _inputs(self, tokens: torch.Tensor, valid: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """The first block's input ``(B, S', C)`` (CLS first when pooling by it) and which positions are real."""
        if valid is None:
            valid = valid_from_tokens(tokens, self.config.pad_id)
        if valid is None:
            valid = torch.ones_like(tokens, dtype=torch.bool)
        x = probe(self.embed, "tokens", self.embed.tokens(tokens)) * self.embed.scale  # (B, S, C)
        if self.cls_token is not None:
            x = torch.cat([self.cls_token.expand(x.size(0), -1, -1), x], dim=1)  # (B, 1+S, C)
            valid = torch.cat([valid.new_ones(valid.size(0), 1), valid], dim=1)
        return self.embed.dropout(self.embed.positions(x)), valid

    def _run(self, tokens: torch.Tensor, valid: torch.Tensor | None,
             need_weights: bool) -> tuple[torch.Tensor, Attention]:
        x, valid = self._inputs(tokens, valid)
        mask, weights = padding_mask(valid), []
        for block in self.blocks:
            x, w = block(x, mask=mask, need_weights=need_weights, positions=self.attn_positions)
            weights.append(w)
        x = self.final_norm(x)
        if self.pool == "cls":
            pooled = x[:, 0]  # (B, C)
        else:
            v = valid[..., None].to(x.dtype)  # (B, S, 1)
            pooled = (x * v).sum(dim=1) / v.sum(dim=1).clamp(min=1.0)  # (B, C)
        return self.head(pooled), {"encoder": weights}  # (B, num_outputs)

    def forward(self, tokens: torch.Tensor, *, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Predictions ``(B, num_outputs)`` for token ids ``(B, S)``; ``valid`` ``(B, S)`` marks real tokens (else
        they are read from ``pad_id``)."""
        return self._run(tokens, valid, need_weights=False)[0]

    def forward_with_attention(self, tokens: torch.Tensor, *,
                               valid: torch.Tensor | None = None) -> tuple[torch.Tensor, Attention]:
        """:meth:`forward`, and each block's weights ``{"encoder": [(B, H, S', S'), ...]}``."""
        return self._run(tokens, valid, need_weights=True)
