"""How big is a model and what does one training step cost: parameters, FLOPs, memory, measured time.

FLOPs count the matrix multiplications, 2 FLOPs per multiply-add, with the model sizes C (``d_model``),
F (``d_ff``), H heads, V vocabulary, and T (or S) tokens per sequence. Per layer and sequence:

- self-attention projections Q, K, V and output: ``8·T·C²``; scores ``QKᵀ`` and ``weights·V``: ``4·T²·C``
  (the full ``T x T`` matrix, also for causal models); with grouped-query attention K and V are narrower,
  ``C_kv = H_kv·D``, and the projections cost ``4·T·C² + 4·T·C·C_kv``;
- feed-forward: ``4·T·C·F`` (SwiGLU has three matrices: ``6·T·C·F``);
- cross-attention (decoder): ``4·T·C²`` for Q and output, ``4·S·C²`` for K and V, ``4·T·S·C`` for the scores;
- output projection to the vocabulary: ``2·T·C·V``; a ViT patch embedding: ``2·N·(channels·p²)·C``.

The backward pass costs about twice the forward pass, so a step is ``3x`` the forward FLOPs. Cross-check
(Kaplan et al. 2020): a step costs about ``6·N·tokens`` where ``N`` counts the non-embedding parameters;
the two agree when ``T`` is small next to ``12·C`` and the vocabulary projection is small next to the blocks.

Memory assumes float32 training with AdamW: weights, gradients and two optimizer states of 4 bytes each per
parameter, plus the activations autograd keeps for the backward pass. Per encoder layer and token this
estimate keeps ``8·C + 2·F`` numbers (the inputs and outputs of both LayerNorms, Q, K, V, the attention output
and the feed-forward hidden layer before and after its activation) plus ``H·S`` attention weights; a decoder
layer with cross-attention keeps ``12·C + 2·F + H·(T + S)`` per target token and ``2·C`` per source token (its
K and V). Grouped K and V keep ``2·C_kv`` instead of ``2·C``; SwiGLU keeps ``4·F`` (gate, up, the gate's SiLU and
the product). Language-model heads add ``2·C + 2·V`` per token (final norm, logits and their softmax). Dropout
masks are not counted. This matches what autograd keeps on the explicit attention path within a few percent;
the fused kernel keeps no ``(B, H, T, S)`` weights and so needs less (10-30% less on small models).
"""

from __future__ import annotations

import copy
import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from .attention import MultiHeadAttention
from .config import TransformerConfig, ViTConfig
from .families import KINDS, by_kind
from .feed_forward import FEED_FORWARDS
from .generation import kv_cache_bytes
from .norms import NORM_KINDS
from .optim import AdamW
from .positional import PositionalEncoding
from .presets import PRESETS, Preset
from .vit import PatchEmbedding

BYTES_PER_VALUE = 4  # float32
COMPONENTS = ("embeddings", "attention", "feed_forward", "norms", "head")
_COMPONENT_TYPES = (
    (MultiHeadAttention, "attention"),
    (tuple(t for kind in FEED_FORWARDS.values() for t in kind.types), "feed_forward"),
    (tuple(t for kind in NORM_KINDS.values() for t in kind.types), "norms"),
    ((nn.Embedding, PositionalEncoding, PatchEmbedding), "embeddings"),
)

__all__ = [
    "PRESETS", "Preset", "StepEstimate", "build_preset", "count_parameters", "estimate_preset",
    "estimate_training_step", "kv_cache_bytes_per_token", "measure_step_time", "parameter_breakdown", "preset_info",
    "preset_parameter_count",
]


def count_parameters(model: nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters; a parameter shared by several modules (tied weights) counts once."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def _component(model: nn.Module, name: str) -> str:
    path = name.split(".")[:-1]
    owners = [model.get_submodule(".".join(path[:i])) for i in range(len(path) + 1)]  # outermost first
    for module in reversed(owners):
        for types, label in _COMPONENT_TYPES:
            if isinstance(module, types):
                return label
    # A Linear outside attention and feed-forward is an output layer; a bare parameter (CLS, ViT positions)
    # is part of the input embedding.
    return "head" if isinstance(owners[-1], nn.Linear) else "embeddings"


def parameter_breakdown(model: nn.Module) -> dict[str, int]:
    """Parameters per component: embeddings, attention, feed_forward, norms and head (sums to the total).

    A tied output projection counts 0 under "head": its weight is the token embedding, counted once there.
    """
    counts = dict.fromkeys(COMPONENTS, 0)
    for name, p in model.named_parameters():  # shared parameters appear once, under their first name
        counts[_component(model, name)] += p.numel()
    return counts


@dataclass(frozen=True)
class StepEstimate:
    """Estimated cost of one training step (forward, backward and AdamW update) in float32."""

    params: int  # parameters of the model (tied weights once)
    flops_per_token_forward: float  # forward FLOPs divided by tokens_per_step
    flops_per_step: int  # forward + backward FLOPs of the whole batch (3x forward)
    tokens_per_step: int  # tokens entering the model (source + target for seq2seq, CLS + patches for ViT)
    weights_bytes: int  # the parameters
    grads_bytes: int  # one gradient per parameter
    optimizer_bytes: int  # AdamW's two running averages per parameter
    activations_bytes: int  # values kept for the backward pass (see the module docstring)
    total_bytes: int  # sum of the four above


def _encoder_layer(c: int, f: int, h: int, t: int, kv: int | None = None, ff_matrices: int = 2
                   ) -> tuple[int, int]:
    """(forward FLOPs, kept activations) of one self-attention block over one sequence of ``t`` tokens.

    ``kv``: the width of K and V (``C`` unless grouped); ``ff_matrices``: 2 for the MLP, 3 for SwiGLU.
    """
    kv = c if kv is None else kv
    flops = t * (4 * c * c + 4 * c * kv + 2 * ff_matrices * c * f) + 4 * t * t * c
    return flops, t * (6 * c + 2 * kv + 2 * (ff_matrices - 1) * f) + h * t * t


def kv_cache_bytes_per_token(config: TransformerConfig, dtype: torch.dtype = torch.float32) -> int:
    """Memory each token adds to a decoder's key/value cache: ``2 · layers · H_kv · D`` numbers."""
    return kv_cache_bytes(config, 1, dtype)


def _decoder_layer(c: int, f: int, h: int, t: int, s: int) -> tuple[int, int]:
    """(forward FLOPs, kept activations) of one decoder block: causal self-, cross-attention, feed-forward."""
    flops = t * (12 * c * c + 4 * c * f) + 4 * t * t * c + 4 * s * c * c + 4 * t * s * c
    return flops, t * (12 * c + 2 * f) + 2 * s * c + h * (t * t + t * s)


def _text_costs(config: TransformerConfig, kind: str, s: int, t: int) -> tuple[int, int, int]:
    """(forward FLOPs, activations, tokens) per sequence for the text models."""
    c, f, h, v = config.d_model, config.d_ff, config.n_heads, config.vocab_size
    enc_flops, enc_acts = _encoder_layer(c, f, h, s, config.kv_heads * config.head_dim,
                                         FEED_FORWARDS[config.feed_forward].matrices)
    if kind == "encoder":
        return config.n_layers * enc_flops + 2 * c, config.n_layers * enc_acts + 2 * s * c, s
    if kind == "decoder":
        head_flops, head_acts = 2 * s * c * v, s * (2 * c + 2 * v)
        return config.n_layers * enc_flops + head_flops, config.n_layers * enc_acts + head_acts, s
    dec_flops, dec_acts = _decoder_layer(c, f, h, t, s)
    flops = config.n_layers * enc_flops + config.decoder_layers * dec_flops + 2 * t * c * v
    acts = config.n_layers * enc_acts + s * c + config.decoder_layers * dec_acts + t * (2 * c + 2 * v)
    return flops, acts, s + t


def _vit_costs(config: ViTConfig) -> tuple[int, int, int]:
    """(forward FLOPs, activations, tokens) per image for the Vision Transformer."""
    c, n, patch = config.d_model, config.num_patches, config.in_channels * config.patch_size**2
    layer_flops, layer_acts = _encoder_layer(c, config.d_ff, config.n_heads, n + 1)
    flops = 2 * n * patch * c + config.n_layers * layer_flops + 2 * c * config.num_classes
    acts = n * patch + config.n_layers * layer_acts + 2 * (n + 1) * c
    return flops, acts, n + 1


def _build(config: TransformerConfig | ViTConfig, kind: str) -> nn.Module:
    with torch.device("meta"):
        return by_kind(kind).model_class(config)


def _check_request(config: Any, kind: str, batch_size: int, lengths: tuple[int, ...]) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {', '.join(repr(k) for k in KINDS)}.")
    expected = by_kind(kind).config_class
    if not isinstance(config, expected):
        raise ValueError(f"kind={kind!r} needs a {expected.__name__}, got {type(config).__name__}.")
    if batch_size <= 0 or any(n <= 0 for n in lengths):
        raise ValueError(f"batch_size={batch_size} and the sequence lengths {lengths} must be positive.")
    if kind != "vit" and max(lengths) > config.max_len:
        raise ValueError(f"A sequence of {max(lengths)} tokens is longer than max_len={config.max_len}.")


def estimate_training_step(config: TransformerConfig | ViTConfig, *, kind: str, batch_size: int,
                           seq_len: int | None = None, tgt_len: int | None = None,
                           model: nn.Module | None = None) -> StepEstimate:
    """Estimate FLOPs and memory of one training step (formulas in the module docstring).

    Args:
        config: the model's configuration (a ``ViTConfig`` for ``kind="vit"``).
        kind: "encoder" (SequenceRegressor), "decoder" (CausalLM), "seq2seq" or "vit".
        batch_size: sequences (or images) per step.
        seq_len: tokens per sequence (the source for seq2seq); defaults to ``config.max_len``. Unused for ViT.
        tgt_len: target tokens for seq2seq; defaults to ``seq_len``.
        model: the module whose parameters are counted (e.g. a preset); by default the kind's model is built
            from ``config`` on the meta device.
    """
    s = seq_len if seq_len is not None else getattr(config, "max_len", 1)
    t = tgt_len if tgt_len is not None else s
    _check_request(config, kind, batch_size, (s, t))
    if kind == "vit":
        flops, acts, tokens = _vit_costs(config)
    else:
        flops, acts, tokens = _text_costs(config, kind, s, t)
    params = count_parameters(model if model is not None else _build(config, kind))
    weights = params * BYTES_PER_VALUE
    activations = batch_size * acts * BYTES_PER_VALUE
    return StepEstimate(
        params=params,
        flops_per_token_forward=flops / tokens,
        flops_per_step=3 * batch_size * flops,
        tokens_per_step=batch_size * tokens,
        weights_bytes=weights,
        grads_bytes=weights,
        optimizer_bytes=2 * weights,
        activations_bytes=activations,
        total_bytes=4 * weights + activations,
    )


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, dict):
        return {key: _to_device(value, device) for key, value in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to_device(value, device) for value in batch)
    return batch


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _materialize(model: nn.Module, device: torch.device) -> nn.Module:
    # A model built on the meta device has shapes but no values: give it random ones (good enough for timing).
    if not any(t.is_meta for t in (*model.parameters(), *model.buffers())):
        return model.to(device)
    model = model.to_empty(device=device)
    with torch.no_grad():
        for tensor in (*model.parameters(), *model.buffers()):
            if tensor.is_floating_point():
                tensor.normal_(0.0, 0.02)
            else:
                tensor.zero_()
    return model


def measure_step_time(model_factory_or_model: nn.Module | Callable[[], nn.Module], batch: Any,
                      loss_fn: Callable[[nn.Module, Any], torch.Tensor], *, device: torch.device | str,
                      repeats: int = 3) -> float:
    """Median seconds of one training step (forward, backward, AdamW update) on ``device``.

    A model passed in is copied first, so its weights are left untouched; a model on the meta device gets
    random values. ``loss_fn(model, batch)`` returns the scalar loss; ``batch`` (a tensor, or a tuple, list or
    dict of them) is moved to ``device``. One untimed step comes first (memory allocation, kernel choice).
    """
    if repeats <= 0:
        raise ValueError(f"repeats={repeats} must be positive.")
    device = torch.device(device)
    if isinstance(model_factory_or_model, nn.Module):
        model = copy.deepcopy(model_factory_or_model)
    else:
        model = model_factory_or_model()
    model = _materialize(model, device).train()
    batch = _to_device(batch, device)
    optimizer = AdamW([{"params": model.parameters()}], lr=1e-4)  # the trainer's optimizer, not torch.optim's

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model, batch).backward()
        optimizer.step()

    step()
    times = []
    for _ in range(repeats):
        _synchronize(device)
        start = time.perf_counter()
        step()
        _synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"Unknown preset {name!r}; choose one of {', '.join(PRESETS)}.")
    return PRESETS[name]


def build_preset(name: str) -> nn.Module:
    """The preset's module on the meta device: every shape is real, no memory is allocated."""
    preset = _preset(name)
    with torch.device("meta"):
        return preset.factory(preset.config)


@functools.cache  # a preset is a constant: its count is worked out once per process
def preset_parameter_count(name: str) -> int:
    """Exact parameter count of a preset (tied weights once)."""
    return count_parameters(build_preset(name))


def preset_info(name: str) -> dict[str, Any]:
    """A summary of a preset for display: sizes, parameter count and the paper it comes from.

    ``layers`` counts the blocks of one stack (the encoder of an encoder-decoder); ``decoder_layers`` is set
    for encoder-decoder models only. ``seq_len`` is the longest input (CLS + patches for a ViT).
    """
    preset = _preset(name)
    c = preset.config
    is_vit = isinstance(c, ViTConfig)
    return {
        "name": preset.name, "kind": preset.kind, "year": preset.year, "paper": preset.paper,
        "layers": c.n_layers, "decoder_layers": c.decoder_layers if preset.kind == "seq2seq" else None,
        "d_model": c.d_model, "heads": c.n_heads, "d_ff": c.d_ff,
        "kv_heads": None if is_vit else c.kv_heads,
        "kv_cache_per_token": kv_cache_bytes_per_token(c) if preset.kind == "decoder" else None,
        "vocab": None if is_vit else c.vocab_size, "seq_len": c.num_patches + 1 if is_vit else c.max_len,
        "params": preset_parameter_count(name), "reported_params": preset.reported_params,
        "note": preset.note,
    }


def estimate_preset(name: str, *, batch_size: int, seq_len: int | None = None,
                    model: nn.Module | None = None) -> StepEstimate:
    """:func:`estimate_training_step` for a preset, counting the preset's own parameters (of ``model``, its
    :func:`build_preset` module when the caller has one already: building a large preset takes a while)."""
    preset = _preset(name)
    return estimate_training_step(preset.config, kind=preset.kind, batch_size=batch_size, seq_len=seq_len,
                                  model=model if model is not None else build_preset(name))
