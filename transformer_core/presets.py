"""Famous transformers rebuilt from the core's blocks, to compare their sizes with the models trained here.

Each preset is the published architecture with its published sizes; ``sizing.build_preset`` builds it on the
meta device (shapes only, no memory), which is all parameter counts and cost estimates need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from .bert import BertEncoder
from .config import TransformerConfig, ViTConfig
from .models import CausalLM, Seq2SeqTransformer
from .vit import VisionTransformer


def bert_with_pooler(config: TransformerConfig) -> BertEncoder:
    """BERT as the paper counts it: two segments, the encoder and the pooler, no masked-LM head."""
    return BertEncoder(config, segments=2, mlm_head=False, pooler=True)


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
                norm_position="post", positional="sinusoidal", activation="relu", tie_weights=True,
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
                norm_position="post", positional="learned", activation="gelu", layer_norm_eps=1e-12,
                embed_scale=False, tie_weights=True,
            ),
            factory=bert_with_pooler,
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
                norm_position="pre", positional="learned", activation="gelu", tie_weights=True,
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
                norm_position="pre", norm_type="rmsnorm", feed_forward="swiglu", positional="rope", pos_base=100000.0,
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
