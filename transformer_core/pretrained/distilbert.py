"""DistilBERT (Sanh et al. 2019) on transformer_core: BERT's post-norm encoder at half the depth, without
segment embeddings, and with the same kind of tied masked-LM head.

transformers keeps its weights under other names than BERT's (``q_lin``, ``sa_layer_norm``, ``ffn.lin1``,
``vocab_projector``) and fixes every LayerNorm's epsilon at 1e-12; a model saved with ``sinusoidal_pos_embds``
stores its fixed sinusoidal table like a learned one, so both read the same way.
"""

from __future__ import annotations

from typing import Any

from ..bert import BertEncoder
from ..config import TransformerConfig
from .bert import encoder_spec, has_head, old_names
from .families import Family, ModelSpec, Source, attention_linears, feed_forward, layer_norm, linear, prefix_of, setting

_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "relu": "relu"}
_BASE = "distilbert."
_HEAD = "vocab_"  # vocab_transform, vocab_layer_norm, vocab_projector


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The DistilBERT described by ``config.json``; ``DistilBertModel`` means no masked-LM head."""
    act = setting(raw, "activation", str, "gelu")
    if act not in _ACTIVATIONS:
        raise ValueError(f"activation={act!r} is not supported (supported: {', '.join(_ACTIVATIONS)}).")
    config = TransformerConfig(
        vocab_size=setting(raw, "vocab_size", int), max_len=setting(raw, "max_position_embeddings", int, 512),
        d_model=setting(raw, "dim", int, 768), n_heads=setting(raw, "n_heads", int, 12),
        n_layers=setting(raw, "n_layers", int, 6), d_ff=setting(raw, "hidden_dim", int, 3072), norm_position="post",
        positional="learned", activation=_ACTIVATIONS[act], tie_weights=True, layer_norm_eps=1e-12,
        embed_scale=False,
    )
    return encoder_spec("distilbert", config, architecture, 0, base_model="DistilBertModel")


def build(spec: ModelSpec, names: set[str]) -> BertEncoder:
    """The empty model (no segment table); call under ``torch.device("meta")``."""
    return BertEncoder(spec.config, segments=0, mlm_head=has_head(spec, names, _HEAD))


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored (with or without the ``distilbert.`` prefix)."""
    c = spec.config
    w, f = c.d_model, c.d_ff
    pre = prefix_of(names, _BASE, "embeddings.word_embeddings.weight")
    out = {
        "embed.tokens.weight": Source(f"{pre}embeddings.word_embeddings.weight", (c.vocab_size, w)),
        "embed.positions.table": Source(f"{pre}embeddings.position_embeddings.weight", (c.max_len, w)),
        **layer_norm("embed.norm", f"{pre}embeddings.LayerNorm", w),
    }
    for i in range(c.n_layers):
        ours, h = f"blocks.{i}", f"{pre}transformer.layer.{i}"
        out.update(attention_linears(f"{ours}.self_attn", f"{h}.attention", w, ("q_lin", "k_lin", "v_lin", "out_lin")))
        out.update(layer_norm(f"{ours}.norm1", f"{h}.sa_layer_norm", w))
        out.update(feed_forward(f"{ours}.ff", f"{h}.ffn.lin1", f"{h}.ffn.lin2", w, f))
        out.update(layer_norm(f"{ours}.norm2", f"{h}.output_layer_norm", w))
    if has_head(spec, names, _HEAD):
        out.update(linear("head.dense", "vocab_transform", w, w))
        out.update(layer_norm("head.norm", "vocab_layer_norm", w))
        out["head.bias"] = Source("vocab_projector.bias", (c.vocab_size,))
    return old_names(out, names)


def ties(spec: ModelSpec, names: set[str]) -> dict[str, str]:
    """The head's stored ``vocab_projector.weight`` must equal the token embedding."""
    pre = prefix_of(names, _BASE, "embeddings.word_embeddings.weight")
    return {"vocab_projector.weight": f"{pre}embeddings.word_embeddings.weight"}


FAMILY = Family("distilbert", ("distilbert",), ("DistilBertForMaskedLM", "DistilBertModel"), read, build, sources,
                ties)
