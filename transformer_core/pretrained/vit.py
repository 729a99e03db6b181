"""ViT (Dosovitskiy et al. 2020) and DeiT without distillation, on transformer_core's
:class:`~transformer_core.vit.VisionTransformer`: the same pre-norm blocks, CLS token, learned positions,
final LayerNorm and classifier on the CLS token.

The stored patch projection is a ``Conv2d`` kernel ``(C, 3, p, p)``; flattened it is our linear patch
embedding (both read a patch channel by channel, row by row).
"""

from __future__ import annotations

from typing import Any

from ..config import ViTConfig
from ..vit import VisionTransformer
from .families import Family, ModelSpec, Source, encoder_layer, layer_norm, linear, setting


def _labels(raw: dict[str, Any], n: int) -> tuple[str, ...]:
    id2label = raw.get("id2label")
    if not isinstance(id2label, dict):
        return tuple(f"class {i}" for i in range(n))
    return tuple(str(id2label.get(str(i), id2label.get(i, f"class {i}"))) for i in range(n))


def read(raw: dict[str, Any], architecture: str) -> ModelSpec:
    """The ViT classifier described by ``config.json``; the class count comes from ``id2label``."""
    if setting(raw, "hidden_act", str, "gelu") != "gelu":
        raise ValueError(f"ViT with hidden_act={raw['hidden_act']!r} is not supported (only 'gelu').")
    if not setting(raw, "qkv_bias", bool, True):
        raise ValueError("ViT without query, key and value biases (qkv_bias=false) is not supported.")
    id2label = raw.get("id2label")
    n_classes = len(id2label) if isinstance(id2label, dict) and id2label else setting(raw, "num_labels", int, 2)
    config = ViTConfig(
        image_size=setting(raw, "image_size", int, 224), patch_size=setting(raw, "patch_size", int, 16),
        in_channels=setting(raw, "num_channels", int, 3), num_classes=n_classes,
        d_model=setting(raw, "hidden_size", int), n_heads=setting(raw, "num_attention_heads", int),
        n_layers=setting(raw, "num_hidden_layers", int), d_ff=setting(raw, "intermediate_size", int),
        layer_norm_eps=setting(raw, "layer_norm_eps", float, 1e-12),
    )
    return ModelSpec("vit", architecture, config, _count(config), labels=_labels(raw, n_classes))


def _count(c: ViTConfig) -> int:
    w, f = c.d_model, c.d_ff
    embed = (c.in_channels * c.patch_size**2 + 1) * w + w + (c.num_patches + 1) * w
    block = 4 * (w * w + w) + 2 * w * f + f + w + 4 * w
    return embed + c.n_layers * block + 2 * w + (w + 1) * c.num_classes


def build(spec: ModelSpec, names: set[str]) -> VisionTransformer:
    """The empty model; call under ``torch.device("meta")``."""
    return VisionTransformer(spec.config)


def sources(spec: ModelSpec, names: set[str]) -> dict[str, Source]:
    """Our weight names -> where each is stored."""
    c = spec.config
    w, f, p = c.d_model, c.d_ff, c.patch_size
    emb = "vit.embeddings"
    out = {
        "cls_token": Source(f"{emb}.cls_token", (1, 1, w)),
        "pos_embed": Source(f"{emb}.position_embeddings", (1, c.num_patches + 1, w)),
        # (C, 3, p, p) kernel -> (C, 3*p*p), channel-major like patchify
        "patch_embed.proj.weight": Source(f"{emb}.patch_embeddings.projection.weight", (w, c.in_channels, p, p),
                                          lambda t: t.reshape(t.size(0), -1)),
        "patch_embed.proj.bias": Source(f"{emb}.patch_embeddings.projection.bias", (w,)),
        **layer_norm("norm", "vit.layernorm", w),
        **linear("head", "classifier", c.num_classes, w),
    }
    for i in range(c.n_layers):
        ours, h = f"blocks.{i}", f"vit.encoder.layer.{i}"
        attention = ("attention.query", "attention.key", "attention.value", "output.dense")
        out.update(encoder_layer(ours, h, w, f, attention=attention, norms=("layernorm_before", "layernorm_after")))
    return out


FAMILY = Family("vit", ("vit",), ("ViTForImageClassification",), read, build, sources)
