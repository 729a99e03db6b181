"""BERT (Devlin et al. 2018) on transformer_core: :class:`~transformer_core.bert.BertEncoder` with post-norm
blocks, learned positions, segment embeddings and, for ``BertForMaskedLM``, the tied masked-LM head.

``BertModel`` files (no head) give the final hidden states instead of logits; their pooler is not used. The
config reading, weight map and tied copies here serve RoBERTa too (:mod:`.roberta`), whose encoder is BERT's
under another prefix and head names (:data:`LAYOUTS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..bert import BertEncoder
from ..config import TransformerConfig
from .families import Family, ModelSpec, Source, encoder_layer, layer_norm, linear, prefix_of, rows, setting

_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}
_HEAD = "cls.predictions."  # where BertForMaskedLM and BertForPreTraining keep the masked-LM head


@dataclass(frozen=True)
class Layout:
    """Where a BERT-shaped family keeps its weights (RoBERTa reuses BERT's encoder under other names)."""

    base: str  # the base model's prefix in task-model files, e.g. "bert."
    head: str  # the masked-LM head's prefix, e.g. "cls.predictions."
    head_dense: str  # the head's dense layer, under ``head``
    head_norm: str  # the head's LayerNorm, under ``head``


LAYOUTS = {"bert": Layout("bert.", _HEAD, "transform.dense", "transform.LayerNorm"),
           "roberta": Layout("roberta.", "lm_head.", "dense", "layer_norm")}
# the architecture assumed for a file whose config.json names none
FAMILY_HEADS = {"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM", "distilbert": "DistilBertForMaskedLM"}


def encoder_config(raw: dict[str, Any], *, max_len: int, eps: float = 1e-12) -> TransformerConfig:
    """The post-norm encoder a BERT-shaped ``config.json`` describes, reading ``max_len`` positions."""
    act = setting(raw, "hidden_act", str, "gelu")
    if act not in _ACTIVATIONS:
        raise ValueError(f"hidden_act={act!r} is not supported (supported: {', '.join(_ACTIVATIONS)}).")
    kind = setting(raw, "position_embedding_type", str, "absolute")
    if kind != "absolute":
        raise ValueError(f"position_embedding_type={kind!r} is not supported (only 'absolute').")
    return TransformerConfig(
        vocab_size=setting(raw, "vocab_size", int), max_len=max_len,
        d_model=setting(raw, "hidden_size", int), n_heads=setting(raw, "num_attention_heads", int),
        n_layers=setting(raw, "num_hidden_layers", int), d_ff=setting(raw, "intermediate_size", int),
        norm_position="post", positional="learned", activation=_ACTIVATIONS[act], tie_weights=True,
        layer_norm_eps=setting(raw, "layer_norm_eps", float, eps), embed_scale=False,
    )


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The BERT described by ``config.json``; ``BertModel`` means no masked-LM head."""
    config = encoder_config(raw, max_len=setting(raw, "max_position_embeddings", int))
    segments = setting(raw, "type_vocab_size", int, 2)
    if segments <= 0:
        raise ValueError(f"config.json's type_vocab_size={segments} must be positive.")
    return encoder_spec("bert", config, architecture, segments, base_model="BertModel")


def encoder_spec(family: str, config: TransformerConfig, architecture: str, segments: int, *, base_model: str,
                 **options: Any) -> ModelSpec:
    """The spec of a BERT-shaped encoder; ``architecture == base_model`` means no masked-LM head, ``""`` that the
    weights decide."""
    head = None if architecture == "" else architecture != base_model
    return ModelSpec(family, architecture or FAMILY_HEADS[family], config,
                     count(config, segments, head is not False), {"segments": segments, "mlm_head": head, **options})


def count(c: TransformerConfig, segments: int, head: bool) -> int:
    """Parameters of a :class:`BertEncoder` (with its masked-LM head when ``head``)."""
    w, f = c.d_model, c.d_ff
    embed = (c.vocab_size + c.max_len + segments) * w + 2 * w
    block = 4 * (w * w + w) + 2 * w * f + f + w + 4 * w
    mlm = (w * w + w) + 2 * w + c.vocab_size if head else 0
    return embed + c.n_layers * block + mlm


def has_head(spec: ModelSpec, names: set[str], head_prefix: str) -> bool:
    """Whether the model ends with its masked-LM head: as the architecture says, else as the weights show."""
    head = spec.options["mlm_head"]
    return any(n.startswith(head_prefix) for n in names) if head is None else head


def build(spec: ModelSpec, names: set[str]) -> BertEncoder:
    """The empty model; call under ``torch.device("meta")``."""
    return BertEncoder(spec.config, segments=spec.options["segments"], mlm_head=_has_head(spec, names))


def _has_head(spec: ModelSpec, names: set[str]) -> bool:
    return has_head(spec, names, LAYOUTS[spec.family].head)


def old_names(out: dict[str, Source], names: set[str]) -> dict[str, Source]:
    """``out`` with LayerNorm weights renamed where the file uses the original TensorFlow release's gamma and beta."""
    renamed = {".weight": ".gamma", ".bias": ".beta"}
    for ours, src in out.items():
        for new, old in renamed.items():
            legacy = src.name.removesuffix(new) + old
            lower = src.name.lower()
            if ("layernorm" in lower or "layer_norm" in lower) and src.name.endswith(new) \
                    and src.name not in names and legacy in names:
                out[ours] = Source(legacy, src.shape, src.convert)
    return out


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored (with or without the base model's prefix).

    RoBERTa's stored position table has ``spec.options["position_offset"]`` rows before position 0; they are
    left out.
    """
    c, layout = spec.config, LAYOUTS[spec.family]
    offset = spec.options.get("position_offset", 0)
    w, f = c.d_model, c.d_ff
    pre = prefix_of(names, layout.base, "embeddings.word_embeddings.weight") + "embeddings."
    out = {
        "embed.tokens.weight": Source(f"{pre}word_embeddings.weight", (c.vocab_size, w)),
        "embed.positions.table": Source(f"{pre}position_embeddings.weight", (offset + c.max_len, w),
                                        rows(offset, offset + c.max_len) if offset else None),
        "embed.segments.weight": Source(f"{pre}token_type_embeddings.weight", (spec.options["segments"], w)),
        **layer_norm("embed.norm", f"{pre}LayerNorm", w),
    }
    layers = pre.removesuffix("embeddings.") + "encoder.layer"
    for i in range(c.n_layers):
        ours, h = f"blocks.{i}", f"{layers}.{i}"
        out.update(encoder_layer(ours, h, w, f, attention=("self.query", "self.key", "self.value", "output.dense"),
                                 norms=("attention.output.LayerNorm", "output.LayerNorm")))
    if _has_head(spec, names):
        head = layout.head
        out.update(linear("head.dense", f"{head}{layout.head_dense}", w, w))
        out.update(layer_norm("head.norm", f"{head}{layout.head_norm}", w))
        # Some files keep the output bias only as the decoder's (the two are one tensor in transformers).
        bias = f"{head}bias" if f"{head}bias" in names or f"{head}decoder.bias" not in names else f"{head}decoder.bias"
        out["head.bias"] = Source(bias, (c.vocab_size,))
    return old_names(out, names)


def ties(spec: ModelSpec, names: set[str]) -> dict[str, str]:
    """The decoder's stored weight and bias must equal the token embedding and the head's bias."""
    layout = LAYOUTS[spec.family]
    pre = prefix_of(names, layout.base, "embeddings.word_embeddings.weight")
    return {f"{layout.head}decoder.weight": f"{pre}embeddings.word_embeddings.weight",
            f"{layout.head}decoder.bias": f"{layout.head}bias"}


FAMILY = Family("bert", ("bert",), ("BertForMaskedLM", "BertModel", "BertForPreTraining"), read, build, sources,
                ties)
