"""transformer_core: a complete transformer written from scratch in PyTorch, for text, proteins and images.

Pure PyTorch; importing it never imports a UI library. See README.md for a tour of the API.
"""

from .attention import MultiHeadAttention, scaled_dot_product_attention
from .blocks import DecoderBlock, EncoderBlock, FeedForward
from .config import TransformerConfig, ViTConfig, divisors
from .device import available_devices, configure_threads, pick_device
from .masks import causal_mask, combine_masks, padding_mask
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .positional import PositionalEncoding, RotaryEmbedding, sinusoidal_encoding
from .vit import PatchEmbedding, VisionTransformer, attention_rollout, patchify, unpatchify

__all__ = [
    "CausalLM",
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "MultiHeadAttention",
    "PatchEmbedding",
    "PositionalEncoding",
    "RotaryEmbedding",
    "Seq2SeqTransformer",
    "SequenceRegressor",
    "TransformerConfig",
    "ViTConfig",
    "VisionTransformer",
    "attention_rollout",
    "available_devices",
    "causal_mask",
    "combine_masks",
    "configure_threads",
    "divisors",
    "padding_mask",
    "patchify",
    "pick_device",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "unpatchify",
]
