"""The registry of model families: one entry per kind of model this package builds, trains, sizes and saves.

A task names its family (``task.family``), the Model Builder and the cost estimates name a stack layout
(``kind``), a checkpoint names its model class; each entry ties the three together with the config class, the
attention maps the model returns and the title the app shows. To add a family, write its model and add one entry.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from .config import TransformerConfig, ViTConfig
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .vit import VisionTransformer


@dataclass(frozen=True)
class ModelFamily:
    """One model family and every name the package uses for it."""

    name: str  # the task family, e.g. "causal_lm"
    kind: str  # the stack layout used by sizing and the Model Builder, e.g. "decoder"
    title: str  # how the app names it, e.g. "Decoder-only (GPT-like)"
    config_class: type[TransformerConfig] | type[ViTConfig]  # its frozen configuration
    model_class: type[nn.Module]  # built as model_class(config, **kwargs)
    attention: tuple[str, ...]  # keys of the attention dict it returns with return_attention=True


FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily("regression", "encoder", "Encoder-only (BERT-like)", TransformerConfig, SequenceRegressor,
                ("encoder",)),
    ModelFamily("causal_lm", "decoder", "Decoder-only (GPT-like)", TransformerConfig, CausalLM, ("decoder",)),
    ModelFamily("seq2seq", "seq2seq", "Encoder–decoder (2017 Transformer)", TransformerConfig, Seq2SeqTransformer,
                ("encoder", "decoder", "cross")),
    ModelFamily("vision", "vit", "Vision Transformer (ViT)", ViTConfig, VisionTransformer, ("encoder",)),
)
KINDS = tuple(f.kind for f in FAMILIES)  # stack layouts in menu order
MODEL_CLASSES = {f.model_class.__name__: f.model_class for f in FAMILIES}  # what a checkpoint may name
CONFIG_CLASSES = {f.config_class.__name__: f.config_class for f in FAMILIES}


def _find(field: str, value: str) -> ModelFamily:
    for family in FAMILIES:
        if getattr(family, field) == value:
            return family
    choices = ", ".join(repr(getattr(f, field)) for f in FAMILIES)
    label = "family" if field == "name" else field
    raise ValueError(f"{label}={value!r} is not one of {choices}.")


def family(name: str) -> ModelFamily:
    """The family a task names (``task.family``), e.g. ``"causal_lm"``."""
    return _find("name", name)


def by_kind(kind: str) -> ModelFamily:
    """The family with stack layout ``kind`` (``"encoder"``, ``"decoder"``, ``"seq2seq"`` or ``"vit"``)."""
    return _find("kind", kind)
