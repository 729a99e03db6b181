"""BERT (Devlin et al. 2018) on transformer_core: :class:`~transformer_core.bert.BertEncoder` with post-norm
blocks, learned positions, segment embeddings and, for ``BertForMaskedLM``, the tied masked-LM head.

``BertModel`` files (no head) give the final hidden states instead of logits; their pooler is not used.
"""

from __future__ import annotations

from typing import Any

from ..bert import BertEncoder
from ..config import TransformerConfig
from .families import Family, ModelSpec, Source, encoder_layer, layer_norm, linear, prefix_of, setting

_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
_HEAD = "cls.predictions."  # where BertForMaskedLM and BertForPreTraining keep the masked-LM head


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The BERT described by ``config.json``; ``BertModel`` means no masked-LM head."""
    act = setting(raw, "hidden_act", str, "gelu")
    if act not in _ACTIVATIONS:
        raise ValueError(f"BERT with hidden_act={act!r} is not supported (supported: {', '.join(_ACTIVATIONS)}).")
    kind = setting(raw, "position_embedding_type", str, "absolute")
    if kind != "absolute":
        raise ValueError(f"BERT with position_embedding_type={kind!r} is not supported (only 'absolute').")
    config = TransformerConfig(
        vocab_size=setting(raw, "vocab_size", int), max_len=setting(raw, "max_position_embeddings", int),
        d_model=setting(raw, "hidden_size", int), n_heads=setting(raw, "num_attention_heads", int),
        n_layers=setting(raw, "num_hidden_layers", int), d_ff=setting(raw, "intermediate_size", int),
        norm="post", positional="learned", activation=_ACTIVATIONS[act], tie_weights=True,
        layer_norm_eps=setting(raw, "layer_norm_eps", float, 1e-12), embed_scale=False,
    )
    segments = setting(raw, "type_vocab_size", int, 2)
    if segments <= 0:
        raise ValueError(f"config.json's type_vocab_size={segments} must be positive.")
    # None: decided by the weights (files without "architectures" may or may not hold the head).
    head = None if architecture == "" else architecture != "BertModel"
    options = {"segments": segments, "mlm_head": head}
    return ModelSpec("bert", architecture or "BertForMaskedLM", config, _count(config, segments, head is not False),
                     options)


def _count(c: TransformerConfig, segments: int, head: bool) -> int:
    w, f = c.d_model, c.d_ff
    embed = (c.vocab_size + c.max_len + segments) * w + 2 * w
    block = 4 * (w * w + w) + 2 * w * f + f + w + 4 * w
    mlm = (w * w + w) + 2 * w + c.vocab_size if head else 0
    return embed + c.n_layers * block + mlm


def _has_head(spec: ModelSpec, names: set[str]) -> bool:
    head = spec.options["mlm_head"]
    return any(n.startswith(_HEAD) for n in names) if head is None else head


def build(spec: ModelSpec, names: set[str]) -> BertEncoder:
    """The empty model; call under ``torch.device("meta")``."""
    return BertEncoder(spec.config, segments=spec.options["segments"], mlm_head=_has_head(spec, names))


def _old_names(out: dict[str, Source], names: set[str]) -> dict[str, Source]:
    # Files converted from the original TensorFlow release call LayerNorm's weight and bias gamma and beta.
    renamed = {".weight": ".gamma", ".bias": ".beta"}
    for ours, src in out.items():
        for new, old in renamed.items():
            legacy = src.name.removesuffix(new) + old
            if "LayerNorm" in src.name and src.name.endswith(new) and src.name not in names and legacy in names:
                out[ours] = Source(legacy, src.shape, src.convert)
    return out


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored (with or without the ``bert.`` prefix)."""
    c = spec.config
    w, f = c.d_model, c.d_ff
    pre = prefix_of(names, "bert.", "embeddings.word_embeddings.weight") + "embeddings."
    out = {
        "embed.tokens.weight": Source(f"{pre}word_embeddings.weight", (c.vocab_size, w)),
        "embed.positions.table": Source(f"{pre}position_embeddings.weight", (c.max_len, w)),
        "embed.segments.weight": Source(f"{pre}token_type_embeddings.weight", (spec.options["segments"], w)),
        **layer_norm("embed.norm", f"{pre}LayerNorm", w),
    }
    layers = pre.removesuffix("embeddings.") + "encoder.layer"
    for i in range(c.n_layers):
        ours, h = f"blocks.{i}", f"{layers}.{i}"
        out.update(encoder_layer(ours, h, w, f, attention=("self.query", "self.key", "self.value", "output.dense"),
                                 norms=("attention.output.LayerNorm", "output.LayerNorm")))
    if _has_head(spec, names):
        out.update(linear("head.dense", f"{_HEAD}transform.dense", w, w))
        out.update(layer_norm("head.norm", f"{_HEAD}transform.LayerNorm", w))
        out["head.bias"] = Source(f"{_HEAD}bias", (c.vocab_size,))
    return _old_names(out, names)


FAMILY = Family("bert", ("bert",), ("BertForMaskedLM", "BertModel", "BertForPreTraining"), read, build, sources)
