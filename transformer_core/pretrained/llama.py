"""The Llama family (Touvron et al. 2023; SmolLM2, Mistral-shaped models) and Qwen2 on transformer_core: a pre-norm
:class:`~transformer_core.models.CausalLM` with RMSNorm, SwiGLU, rotary positions and grouped-query attention.

Qwen2 (Qwen2.5) is the same model with biases on the query, key and value projections. Hugging Face stores every
projection as an ``nn.Linear`` and rotates with the halves layout (``rotate_half``), which is ours: the weights
are copied as they are. The rotary settings are read from both places they have been written: ``rope_theta`` and
``rope_scaling`` at the top level (files written by transformers 4.x, i.e. the published ones) and
``rope_parameters`` (transformers 5).
"""

from __future__ import annotations

from typing import Any

import torch

from ..config import TransformerConfig
from ..models import CausalLM
from ..positional import RopeScaling, attention_positions
from .families import Family, ModelSpec, Source, linear, prefix_of, setting

_SCALINGS = {"default": "none", "linear": "linear", "llama3": "llama3"}  # config.json rope_type -> ours


def _rope_settings(raw: dict[str, Any]) -> dict[str, Any]:
    """RoPE's theta and scaling as TransformerConfig fields, from either place a config.json keeps them."""
    params = raw.get("rope_parameters")
    if params is None:  # transformers 4.x: theta at the top level, the scaling (or null) beside it
        params = dict(raw.get("rope_scaling") or {}, rope_theta=raw.get("rope_theta", 10000.0))
    if not isinstance(params, dict):
        raise ValueError(f"rope_parameters must be a JSON object, got {params!r}.")
    kind = params.get("rope_type", params.get("type", "default"))
    if kind not in _SCALINGS:
        raise ValueError(f"rotary scaling {kind!r} is not supported (supported: {', '.join(_SCALINGS)}).")
    scaling: dict[str, Any] = {"kind": _SCALINGS[kind]}
    if kind != "default":
        scaling["factor"] = setting(params, "factor", float)
    if kind == "llama3":
        scaling |= {"low_freq_factor": setting(params, "low_freq_factor", float),
                    "high_freq_factor": setting(params, "high_freq_factor", float),
                    "original_max_len": setting(params, "original_max_position_embeddings", int)}
    return {"pos_base": setting(params, "rope_theta", float, 10000.0), "rope_scaling": RopeScaling(**scaling)}


def _refuse_variants(raw: dict[str, Any], c: int, heads: int) -> None:
    if setting(raw, "hidden_act", str, "silu") != "silu":
        raise ValueError(f"hidden_act={raw['hidden_act']!r}: only SwiGLU with SiLU ('silu') is supported.")
    head_dim = raw.get("head_dim")
    if head_dim is not None and head_dim != c // heads:
        raise ValueError(f"head_dim={head_dim} differs from hidden_size / num_attention_heads = {c} / {heads}; "
                         "heads of another size than the width divided by the heads are not supported.")
    if raw.get("rope_interleaved"):
        raise ValueError("rope_interleaved=true (rotating neighbouring features, not halves) is not supported.")
    if raw.get("attention_bias") or raw.get("mlp_bias"):
        raise ValueError("Llama models with attention_bias or mlp_bias are not supported.")
    sliding = raw.get("use_sliding_window") or "sliding_attention" in (raw.get("layer_types") or [])
    if sliding:
        raise ValueError("models with sliding-window attention are not supported.")


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The Llama or Qwen2 described by ``config.json``."""
    family = "qwen2" if raw.get("model_type") == "qwen2" else "llama"
    c, heads = setting(raw, "hidden_size", int), setting(raw, "num_attention_heads", int)
    _refuse_variants(raw, c, heads)
    config = TransformerConfig(
        vocab_size=setting(raw, "vocab_size", int), max_len=setting(raw, "max_position_embeddings", int),
        d_model=c, n_heads=heads, n_kv_heads=setting(raw, "num_key_value_heads", int, heads),
        n_layers=setting(raw, "num_hidden_layers", int), d_ff=setting(raw, "intermediate_size", int),
        norm_position="pre", norm_type="rmsnorm", feed_forward="swiglu", positional="rope", bias=False,
        qkv_bias=family == "qwen2", embed_scale=False,
        tie_weights=setting(raw, "tie_word_embeddings", bool, False),
        layer_norm_eps=setting(raw, "rms_norm_eps", float, 1e-6), **_rope_settings(raw),
    )
    return ModelSpec(family, architecture, config, _count(config))


def _count(c: TransformerConfig) -> int:
    kv = c.kv_heads * c.head_dim
    attention = 2 * c.d_model**2 + 2 * c.d_model * kv + (c.d_model + 2 * kv if c.qkv_bias else 0)
    block = attention + 3 * c.d_model * c.d_ff + 2 * c.d_model  # Q, K, V, O; SwiGLU; two RMSNorms
    head = 0 if c.tie_weights else c.vocab_size * c.d_model
    return c.vocab_size * c.d_model + c.n_layers * block + c.d_model + head


def build(spec: ModelSpec, names: set[str]) -> CausalLM:
    """The empty model; call under ``torch.device("meta")``. The rotary tables are no weights but computed from
    the config, so they are built for real."""
    model = CausalLM(spec.config)
    with torch.device("cpu"):
        model.attn_positions = attention_positions("rope", spec.config.head_dim, spec.config.n_heads,
                                                   spec.config.max_len, spec.config.pos_base,
                                                   spec.config.rope_scaling)
    return model


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored (``model.`` prefix or not)."""
    c = spec.config
    w, f, kv, bias = c.d_model, c.d_ff, c.kv_heads * c.head_dim, bool(c.qkv_bias)
    pre = prefix_of(names, "model.", "embed_tokens.weight")
    out = {
        "embed.tokens.weight": Source(f"{pre}embed_tokens.weight", (c.vocab_size, w)),
        "final_norm.weight": Source(f"{pre}norm.weight", (w,)),
    }
    if not c.tie_weights:
        out["lm_head.weight"] = Source("lm_head.weight", (c.vocab_size, w))
    for i in range(c.n_layers):
        ours, theirs = f"blocks.{i}", f"{pre}layers.{i}"
        out[f"{ours}.norm1.weight"] = Source(f"{theirs}.input_layernorm.weight", (w,))
        out[f"{ours}.norm2.weight"] = Source(f"{theirs}.post_attention_layernorm.weight", (w,))
        attn = f"{theirs}.self_attn"
        out.update(linear(f"{ours}.self_attn.q_proj", f"{attn}.q_proj", w, w, bias=bias))
        out.update(linear(f"{ours}.self_attn.k_proj", f"{attn}.k_proj", kv, w, bias=bias))
        out.update(linear(f"{ours}.self_attn.v_proj", f"{attn}.v_proj", kv, w, bias=bias))
        out.update(linear(f"{ours}.self_attn.out_proj", f"{attn}.o_proj", w, w, bias=False))
        for proj, shape in (("gate_proj", (f, w)), ("up_proj", (f, w)), ("down_proj", (w, f))):
            out.update(linear(f"{ours}.ff.{proj}", f"{theirs}.mlp.{proj}", *shape, bias=False))
    return out


def ties(spec: ModelSpec, names: set[str]) -> dict[str, str]:
    """A tied head stored anyway beside the token embedding must equal it."""
    pre = prefix_of(names, "model.", "embed_tokens.weight")
    return {"lm_head.weight": f"{pre}embed_tokens.weight"} if spec.config.tie_weights else {}


FAMILY = Family("llama", ("llama",), ("LlamaForCausalLM",), read, build, sources, ties)
QWEN2 = Family("qwen2", ("qwen2",), ("Qwen2ForCausalLM",), read, build, sources, ties)
