"""transformer_core: a complete transformer written from scratch in PyTorch, for text, proteins and images.

Pure PyTorch; importing it never imports a UI library. See docs/library.md for a tour of the API.
"""

from . import _env  # noqa: F401  (first: sets OpenMP's wait policy before torch is loaded)
from .attention import MultiHeadAttention, scaled_dot_product_attention
from .blocks import DecoderBlock, FeedForward, SelfAttentionBlock
from .config import BlockConfig, TransformerConfig, ViTConfig, divisors
from .device import available_devices, configure_threads, pick_device
from .masks import causal_mask, combine_masks, padding_mask
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .positional import PositionalEncoding, RotaryEmbedding, sinusoidal_encoding
from .sizing import (
    PRESETS,
    StepEstimate,
    build_preset,
    count_parameters,
    estimate_preset,
    estimate_training_step,
    measure_step_time,
    parameter_breakdown,
    preset_info,
    preset_parameter_count,
)
from .vit import PatchEmbedding, VisionTransformer, attention_rollout, patchify, unpatchify

__all__ = [
    "BlockConfig",
    "CausalLM",
    "DecoderBlock",
    "SelfAttentionBlock",
    "FeedForward",
    "MultiHeadAttention",
    "PRESETS",
    "PatchEmbedding",
    "PositionalEncoding",
    "RotaryEmbedding",
    "Seq2SeqTransformer",
    "SequenceRegressor",
    "StepEstimate",
    "TransformerConfig",
    "ViTConfig",
    "VisionTransformer",
    "attention_rollout",
    "available_devices",
    "build_preset",
    "causal_mask",
    "combine_masks",
    "configure_threads",
    "count_parameters",
    "divisors",
    "estimate_preset",
    "estimate_training_step",
    "measure_step_time",
    "padding_mask",
    "parameter_breakdown",
    "patchify",
    "pick_device",
    "preset_info",
    "preset_parameter_count",
    "scaled_dot_product_attention",
    "sinusoidal_encoding",
    "unpatchify",
]
