"""Famous transformers rebuilt from the core's blocks, to compare their sizes with the models trained here.

Each preset is the published architecture with its published sizes; ``sizing.build_preset`` builds it on the
meta device (shapes only, no memory), which is all parameter counts and cost estimates need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from .blocks import SelfAttentionBlock
from .config import TransformerConfig, ViTConfig
from .masks import padding_mask, valid_from_tokens
from .models import CausalLM, Seq2SeqTransformer
from .positional import PositionalEncoding, get
from .vit import VisionTransformer


class BertModel(nn.Module):
    """BERT (Devlin et al. 2018) built from the core's encoder blocks.

    Token + position + token-type embeddings, an embedding LayerNorm, post-norm GELU encoder blocks and a pooler
    (``tanh(Linear(CLS))``). Unlike the 2017 model, the embeddings are not scaled by √C.

    Shape:
        tokens ``(B, S)`` -> ``(sequence (B, S, C), pooled (B, C))``.
    """

    def __init__(self, config: TransformerConfig, type_vocab_size: int = 2) -> None:
        super().__init__()
        if get(config.positional).attention is not None:
            raise ValueError("BERT adds its positions to the embeddings; choose 'learned' or 'sinusoidal'.")
        c = config
        self.config = config
        self.tokens = nn.Embedding(c.vocab_size, c.d_model)
        self.positions = PositionalEncoding(c.positional, c.max_len, c.d_model, c.pos_base)
        self.token_types = nn.Embedding(type_vocab_size, c.d_model)
        self.embed_norm = nn.LayerNorm(c.d_model, eps=c.layer_norm_eps)
        self.dropout = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            SelfAttentionBlock(c.d_model, c.n_heads, c.d_ff, dropout=c.dropout, norm=c.norm,
                               activation=c.activation, bias=c.bias, eps=c.layer_norm_eps)
            for _ in range(c.n_layers)
        )
        self.pooler = nn.Linear(c.d_model, c.d_model)

    def forward(self, tokens: torch.Tensor, *, token_types: torch.Tensor | None = None,
                valid: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        if token_types is None:
            token_types = torch.zeros_like(tokens)
        if valid is None:
            valid = valid_from_tokens(tokens, self.config.pad_id)
        mask = None if valid is None else padding_mask(valid)
        x = self.positions(self.tokens(tokens)) + self.token_types(token_types)  # (B, S, C)
        x = self.dropout(self.embed_norm(x))
        for block in self.blocks:
            x, _ = block(x, mask=mask)
        return x, torch.tanh(self.pooler(x[:, 0]))  # the pooler reads the first ([CLS]) token


@dataclass(frozen=True)
class Preset:
    """A published architecture and where it comes from."""

    name: str  # the name people know it by
    kind: str  # "encoder", "decoder", "seq2seq" or "vit": the stack layout used by the cost estimates
    config: TransformerConfig | ViTConfig  # the published sizes
    factory: Callable[..., nn.Module]  # builds the module from config
    year: int  # publication year
    paper: str  # short citation
    reported_params: str  # the size the authors state
    note: str  # what the count includes, in one sentence


PRESETS: dict[str, Preset] = {
    preset.name: preset
    for preset in (
        Preset(
            name="Transformer base (2017)",
            kind="seq2seq",
            config=TransformerConfig(
                vocab_size=37000, max_len=512, d_model=512, n_heads=8, n_layers=6, d_ff=2048, dropout=0.1,
                norm="post", positional="sinusoidal", activation="relu", tie_weights=True,
            ),
            factory=Seq2SeqTransformer,
            year=2017,
            paper="Vaswani et al., Attention Is All You Need",
            reported_params="65M",
            note="6 encoder + 6 decoder post-norm blocks; one 37,000-token vocabulary shared by the source "
                 "and target embeddings and the output projection.",
        ),
        Preset(
            name="BERT-base",
            kind="encoder",
            config=TransformerConfig(
                vocab_size=30522, max_len=512, d_model=768, n_heads=12, n_layers=12, d_ff=3072, dropout=0.1,
                norm="post", positional="learned", activation="gelu", layer_norm_eps=1e-12,
            ),
            factory=BertModel,
            year=2018,
            paper="Devlin et al., BERT: Pre-training of Deep Bidirectional Transformers",
            reported_params="110M",
            note="WordPiece, position and token-type embeddings, 12 post-norm blocks and the pooler.",
        ),
        Preset(
            name="GPT-2 small",
            kind="decoder",
            config=TransformerConfig(
                vocab_size=50257, max_len=1024, d_model=768, n_heads=12, n_layers=12, d_ff=3072, dropout=0.1,
                norm="pre", positional="learned", activation="gelu", tie_weights=True,
            ),
            factory=CausalLM,
            year=2019,
            paper="Radford et al., Language Models are Unsupervised Multitask Learners",
            reported_params="117M",  # 124M as released: the paper counted differently
            note="12 pre-norm causal blocks; the output projection reuses the token embedding.",
        ),
        Preset(
            name="SmolLM2-135M",
            kind="decoder",
            config=TransformerConfig(
                vocab_size=49152, max_len=8192, d_model=576, n_heads=9, n_kv_heads=3, n_layers=30, d_ff=1536,
                norm="pre", norm_kind="rmsnorm", feed_forward="swiglu", positional="rope", pos_base=100000.0,
                bias=False, embed_scale=False, tie_weights=True,
            ),
            factory=CausalLM,
            year=2024,
            paper="Allal et al., SmolLM2: When Smol Goes Big",
            reported_params="135M",
            note="30 Llama-style blocks: RMSNorm, SwiGLU, rotary positions (theta 100,000) and 3 key/value heads "
                 "shared by 9 query heads; the output projection reuses the token embedding.",
        ),
        Preset(
            name="ViT-B/16",
            kind="vit",
            config=ViTConfig(
                image_size=224, patch_size=16, in_channels=3, num_classes=1000, d_model=768, n_heads=12,
                n_layers=12, d_ff=3072,
            ),
            factory=VisionTransformer,
            year=2020,
            paper="Dosovitskiy et al., An Image is Worth 16x16 Words",
            reported_params="86M",
            note="224x224 images in 196 patches of 16x16 pixels plus a CLS token; a 1000-class head.",
        ),
    )
}
