"""GPT-2 (Radford et al. 2019) on transformer_core: a pre-norm :class:`~transformer_core.models.CausalLM` with
learned positions, unscaled token embeddings, tanh-approximated GELU and a tied language-model head.

Hugging Face stores the projections as ``Conv1D`` weights ``(in, out)`` and packs Q, K and V into one
``c_attn``; they are transposed and split into our ``nn.Linear`` layout while loading.
"""

from __future__ import annotations

from typing import Any

from ..config import TransformerConfig
from ..models import CausalLM
from .families import Family, ModelSpec, Source, chain, layer_norm, prefix_of, rows, setting, transpose

# config.json's activation_function -> ours
_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}


class GPT2LM(CausalLM):
    """:class:`CausalLM` as GPT-2 is loaded; its forward also takes a padding mask ``valid`` ``(B, T)``, as
    batches of unequal texts need.
    """


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The GPT-2 described by ``config.json``."""
    act = setting(raw, "activation_function", str, "gelu_new")
    if act not in _ACTIVATIONS:
        raise ValueError(f"GPT-2 with activation_function={act!r} is not supported "
                         f"(supported: {', '.join(_ACTIVATIONS)}).")
    if raw.get("scale_attn_by_inverse_layer_idx") or raw.get("add_cross_attention"):
        raise ValueError("GPT-2 variants with layer-scaled or cross attention are not supported.")
    c = setting(raw, "n_embd", int)
    config = TransformerConfig(
        vocab_size=setting(raw, "vocab_size", int), max_len=setting(raw, "n_positions", int), d_model=c,
        n_heads=setting(raw, "n_head", int), n_layers=setting(raw, "n_layer", int),
        d_ff=setting(raw, "n_inner", int, 4 * c), norm_position="pre", positional="learned",
        activation=_ACTIVATIONS[act],
        tie_weights=setting(raw, "tie_word_embeddings", bool, True),
        layer_norm_eps=setting(raw, "layer_norm_epsilon", float, 1e-5), embed_scale=False,
    )
    return ModelSpec("gpt2", architecture, config, _count(config))


def _count(c: TransformerConfig) -> int:
    block = 4 * c.d_model + 4 * c.d_model**2 + 4 * c.d_model + 2 * c.d_model * c.d_ff + c.d_ff + c.d_model
    head = 0 if c.tie_weights else c.vocab_size * c.d_model
    return (c.vocab_size + c.max_len) * c.d_model + c.n_layers * block + 2 * c.d_model + head


def build(spec: ModelSpec, names: set[str]) -> GPT2LM:
    """The empty model; call under ``torch.device("meta")``."""
    return GPT2LM(spec.config)


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored (with or without the ``transformer.`` prefix)."""
    c = spec.config
    w, f = c.d_model, c.d_ff
    pre = prefix_of(names, "transformer.", "wte.weight")
    out = {
        "embed.tokens.weight": Source(f"{pre}wte.weight", (c.vocab_size, w)),
        "embed.positions.table": Source(f"{pre}wpe.weight", (c.max_len, w)),
        **layer_norm("final_norm", f"{pre}ln_f", w),
    }
    if not c.tie_weights:
        out["lm_head.weight"] = Source("lm_head.weight", (c.vocab_size, w))
    for i in range(c.n_layers):
        ours, h = f"blocks.{i}", f"{pre}h.{i}"
        out.update(layer_norm(f"{ours}.norm1", f"{h}.ln_1", w))
        out.update(layer_norm(f"{ours}.norm2", f"{h}.ln_2", w))
        for j, proj in enumerate(("q_proj", "k_proj", "v_proj")):  # c_attn packs Q, K, V: (C, 3C)
            part = rows(j * w, (j + 1) * w)
            out[f"{ours}.self_attn.{proj}.weight"] = Source(f"{h}.attn.c_attn.weight", (w, 3 * w),
                                                            chain(transpose, part))
            out[f"{ours}.self_attn.{proj}.bias"] = Source(f"{h}.attn.c_attn.bias", (3 * w,), part)
        out[f"{ours}.self_attn.out_proj.weight"] = Source(f"{h}.attn.c_proj.weight", (w, w), transpose)
        out[f"{ours}.self_attn.out_proj.bias"] = Source(f"{h}.attn.c_proj.bias", (w,))
        out[f"{ours}.ff.linear1.weight"] = Source(f"{h}.mlp.c_fc.weight", (w, f), transpose)
        out[f"{ours}.ff.linear1.bias"] = Source(f"{h}.mlp.c_fc.bias", (f,))
        out[f"{ours}.ff.linear2.weight"] = Source(f"{h}.mlp.c_proj.weight", (f, w), transpose)
        out[f"{ours}.ff.linear2.bias"] = Source(f"{h}.mlp.c_proj.bias", (w,))
    return out


def ties(spec: ModelSpec, names: set[str]) -> dict[str, str]:
    """Older files store the tied head beside the token embedding: ``lm_head.weight`` must equal ``wte``."""
    pre = prefix_of(names, "transformer.", "wte.weight")
    return {"lm_head.weight": f"{pre}wte.weight"} if spec.config.tie_weights else {}


FAMILY = Family("gpt2", ("gpt2",), ("GPT2LMHeadModel", "GPT2Model"), read, build, sources, ties)
