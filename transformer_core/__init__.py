"""transformer_core: a complete transformer written from scratch in PyTorch, for text, proteins and images.

Pure PyTorch; importing it never imports a UI library. See docs/library.md for a tour of the API.

Read in this order to follow one forward pass (``CausalLM.forward``):

1. ``config.py`` — ``TransformerConfig`` (every field with a comment) and the ``BlockConfig`` it makes per block.
2. ``models.py`` ``TextEmbedding`` — token embedding × √C, then the positions.
3. ``positional/`` — ``table.py`` adds a table to the embeddings (sinusoidal, learned); ``rope.py`` and
   ``alibi.py`` act inside attention (``base.AttentionPositions``); ``registry.py`` names them.
4. ``attention.py`` — ``scaled_dot_product_attention`` and ``MultiHeadAttention``; the mask convention is in
   ``masks.py`` (True = may attend).
5. ``blocks.py`` — ``SelfAttentionBlock``: attention and feed-forward (``feed_forward.py``), each in a residual
   connection with a norm (``norms.py``) before or after it.
6. ``models.py`` — ``CausalLM`` (and ``Seq2SeqTransformer``, ``SequenceRegressor``): blocks, final norm, head;
   ``forward`` returns logits, ``forward_with_attention`` the attention weights too. ``bert.py`` and ``vit.py``
   are the other encoders.
7. ``generation.py`` — sampling token by token, with the key/value cache of ``kv_cache.py``.

Then ``training.py`` (the step-by-step trainer; its settings in ``train_config.py``), ``tasks/``,
``checkpoint.py`` and ``pretrained/`` (published weights onto these modules).
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
