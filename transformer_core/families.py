"""The registry of model families: one entry per kind of model this package builds, trains, sizes and saves.

A task names its family (``task.family``), the Model Builder and the cost estimates name a stack layout
(``kind``), a checkpoint names its model class; each entry ties the three together with the config class, the
attention maps the model returns and the modules that compute them (the heads interventions switch off), the
titles the app shows, and how its self-attention stack is taken apart. A pretrained model is found here by its
class like any other (GPT-2 is a decoder-only model, a ViT a vision model); BERT, which no task trains, has an
entry without a stack layout. To add a family, write its model and add one entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import nn

from .attention import MultiHeadAttention
from .bert import BertEncoder
from .config import TransformerConfig, ViTConfig
from .masks import padding_mask
from .models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from .positional import AttentionPositions
from .vit import VisionTransformer

AttentionModules = dict[str, list[MultiHeadAttention]]  # stack key -> its attention modules, first layer first


@dataclass(frozen=True)
class SelfAttentionStack:
    """The self-attention blocks a model runs its own input through, so they can be replayed block by block."""

    x: torch.Tensor  # (1, T, C) the input of the first block (embeddings, plus any token the model prepends)
    blocks: list[nn.Module]  # the blocks, in order; each has .self_attn, .norm1, .ff, ...
    mask: torch.Tensor | None  # boolean, True = may attend (masks.py); None when only ``is_causal`` applies
    is_causal: bool  # whether each query sees only itself and earlier positions
    positions: AttentionPositions | None  # rotary or ALiBi positions inside attention, else None
    labels: tuple[str, ...] = ()  # one per position; a family names only the tokens it puts first (e.g. "CLS")

    def labelled(self, labels: Sequence[str]) -> SelfAttentionStack:
        """This stack with ``labels`` (one per input token) after the labels of the tokens the model prepends."""
        return replace(self, labels=(*self.labels, *labels))

    def run(self) -> torch.Tensor:
        """The output ``(1, T, C)`` of the last block (before any final norm or head)."""
        x = self.x
        for block in self.blocks:
            x, _ = block(x, mask=self.mask, is_causal=self.is_causal, positions=self.positions)
        return x


def _causal_lm_stack(model: CausalLM, idx: torch.Tensor) -> SelfAttentionStack:
    return SelfAttentionStack(model.embed(idx), list(model.blocks), None, True, model.attn_positions)


def _seq2seq_stack(model: Seq2SeqTransformer, idx: torch.Tensor) -> SelfAttentionStack:
    return SelfAttentionStack(model.src_embed(idx), list(model.encoder), None, False, model.attn_positions)


def _regressor_stack(model: SequenceRegressor, idx: torch.Tensor) -> SelfAttentionStack:
    x, valid = model._inputs(idx, torch.ones_like(idx, dtype=torch.bool))
    labels = ("CLS",) if model.pool == "cls" else ()
    return SelfAttentionStack(x, list(model.blocks), padding_mask(valid), False, model.attn_positions, labels)


def _bert_stack(model: BertEncoder, idx: torch.Tensor) -> SelfAttentionStack:
    x = model.embed(idx, torch.zeros_like(idx))  # (1, T, C): norm(token + position + segment 0)
    return SelfAttentionStack(x, list(model.blocks), None, False, model.attn_positions)


def _one_stack(key: str) -> Callable[[Any], AttentionModules]:
    """The attention of a model whose ``blocks`` are its one self-attention stack, called ``key``."""
    return lambda model: {key: [block.self_attn for block in model.blocks]}


def _seq2seq_attention(model: Seq2SeqTransformer) -> AttentionModules:
    return {"encoder": [b.self_attn for b in model.encoder], "decoder": [b.self_attn for b in model.decoder],
            "cross": [b.cross_attn for b in model.decoder]}


@dataclass(frozen=True)
class ModelFamily:
    """One model family and every name the package uses for it."""

    name: str  # the task family, e.g. "causal_lm" ("masked_lm" for BERT, which no task trains)
    kind: str | None  # the stack layout used by sizing and the Model Builder, e.g. "decoder"; None: loaded only
    title: str  # how the app names it, e.g. "Decoder-only (GPT-like)"
    short: str  # its name in a narrow table column, e.g. "decoder"
    config_class: type[TransformerConfig] | type[ViTConfig]  # its frozen configuration
    model_class: type[nn.Module]  # built as model_class(config, **kwargs)
    attention: tuple[str, ...]  # keys of the attention dict its forward_with_attention returns
    attention_titles: tuple[str, ...]  # how the app names each of those attention kinds, in the same order
    attention_modules: Callable[[Any], AttentionModules]  # a model's attention modules under those keys
    # The self-attention stack its token ids run through (for taking a trained model apart), or None (images).
    self_attention: Callable[[Any, torch.Tensor], SelfAttentionStack] | None = None
    mask_title: str = ""  # the mask of that self-attention, as the app names it, e.g. "causal (decoder-only model)"
    exact_answers: bool = False  # its answers are token sequences with one right answer (wrong tokens are marked)

    @property
    def reads_images(self) -> bool:
        """Whether its input is a picture (cut into patches) rather than token ids."""
        return self.config_class is ViTConfig

    @property
    def decoder_only(self) -> bool:
        """Whether it is one causal stack that predicts the next token (the GPT and Llama layout)."""
        return self.kind == "decoder"

    @property
    def cross_attention(self) -> bool:
        """Whether a decoder reads an encoder's output (the encoder–decoder layout)."""
        return "cross" in self.attention

    @property
    def trainable(self) -> bool:
        """Whether the tasks train it, the Model Builder builds it and checkpoints hold it (it has a ``kind``)."""
        return self.kind is not None

    def attention_title(self, kind: str) -> str:
        """The name of attention kind ``kind`` (a key of :attr:`attention`) for this family."""
        return dict(zip(self.attention, self.attention_titles, strict=True)).get(kind, kind)


FAMILIES: tuple[ModelFamily, ...] = (
    ModelFamily(name="regression", kind="encoder", title="Encoder-only (BERT-like)", short="encoder",
                config_class=TransformerConfig, model_class=SequenceRegressor,
                attention=("encoder",), attention_titles=("Self-attention",), attention_modules=_one_stack("encoder"),
                self_attention=_regressor_stack, mask_title="padding (encoder-only model)"),
    ModelFamily(name="causal_lm", kind="decoder", title="Decoder-only (GPT-like)", short="decoder",
                config_class=TransformerConfig, model_class=CausalLM,
                attention=("decoder",), attention_titles=("Self-attention (causal)",),
                attention_modules=_one_stack("decoder"),
                self_attention=_causal_lm_stack, mask_title="causal (decoder-only model)"),
    ModelFamily(name="seq2seq", kind="seq2seq", title="Encoder–decoder (2017 Transformer)", short="enc–dec",
                config_class=TransformerConfig, model_class=Seq2SeqTransformer,
                attention=("encoder", "decoder", "cross"),
                attention_titles=("Encoder self-attention", "Decoder self-attention (causal)",
                                  "Cross-attention (decoder reads the encoder)"),
                attention_modules=_seq2seq_attention,
                self_attention=_seq2seq_stack, mask_title="none (the encoder of the model)", exact_answers=True),
    ModelFamily(name="vision", kind="vit", title="Vision Transformer (ViT)", short="ViT",
                config_class=ViTConfig, model_class=VisionTransformer,
                attention=("encoder",), attention_titles=("Where the CLS token looks",),
                attention_modules=_one_stack("encoder")),
    ModelFamily(name="masked_lm", kind=None, title="BERT (masked language model)", short="BERT",
                config_class=TransformerConfig, model_class=BertEncoder,
                attention=("encoder",), attention_titles=("Self-attention",), attention_modules=_one_stack("encoder"),
                self_attention=_bert_stack, mask_title="none (every position, one segment)"),
)
KINDS = tuple(f.kind for f in FAMILIES if f.kind is not None)  # stack layouts in menu order
# What a checkpoint may name: the models tasks train.
MODEL_CLASSES = {f.model_class.__name__: f.model_class for f in FAMILIES if f.trainable}
CONFIG_CLASSES = {f.config_class.__name__: f.config_class for f in FAMILIES if f.trainable}


def _find(field: str, value: str) -> ModelFamily:
    for family in FAMILIES:
        if getattr(family, field) == value:
            return family
    choices = ", ".join(repr(v) for f in FAMILIES if (v := getattr(f, field)) is not None)
    label = "family" if field == "name" else field
    raise ValueError(f"{label}={value!r} is not one of {choices}.")


def family(name: str) -> ModelFamily:
    """The family a task names (``task.family``), e.g. ``"causal_lm"``."""
    return _find("name", name)


def of_model(model: nn.Module) -> ModelFamily:
    """The family ``model`` belongs to, by its class or a subclass (``ValueError`` for none)."""
    for entry in FAMILIES:
        if isinstance(model, entry.model_class):
            return entry
    raise ValueError(f"{type(model).__name__} is not the model of a registered family.")


def by_kind(kind: str) -> ModelFamily:
    """The family with stack layout ``kind`` (``"encoder"``, ``"decoder"``, ``"seq2seq"`` or ``"vit"``)."""
    return _find("kind", kind)
