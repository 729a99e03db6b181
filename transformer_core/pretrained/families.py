"""What every supported model family tells the loader: how to read its config.json, count its parameters,
build the matching transformer_core module and find each of its weights in the stored file.

Each family lives in its own module (``gpt2``, ``bert``, ``vit``) and is listed in
:data:`~.loader.PRETRAINED_FAMILIES`. (The models they build belong to the model families of
``transformer_core.families``, which say how each is taken apart.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from ..config import TransformerConfig, ViTConfig


@dataclass(frozen=True)
class Source:
    """Where one of our weights comes from in the stored file."""

    name: str  # the stored tensor's name, e.g. "transformer.h.0.attn.c_attn.weight"
    shape: tuple[int, ...]  # the shape the stored tensor must have
    convert: Callable[[torch.Tensor], torch.Tensor] | None = None  # stored layout -> ours (transpose, slice...)


@dataclass(frozen=True)
class ModelSpec:
    """A model described by its config.json, validated; nothing is built or read yet."""

    family: str  # the family's name: "gpt2", "llama", "qwen2", "bert", "distilbert", "roberta" or "vit"
    architecture: str  # e.g. "GPT2LMHeadModel"
    config: TransformerConfig | ViTConfig  # the transformer_core configuration it maps to
    n_params: int  # parameters of the model we build (an upper bound when the weights decide the head)
    options: dict[str, Any] = field(default_factory=dict)  # family-specific settings (tied head, segments...)
    labels: tuple[str, ...] | None = None  # class names (ViT), in class-id order

    @property
    def n_bytes(self) -> int:
        """Memory the weights take once loaded (float32)."""
        return 4 * self.n_params


@dataclass(frozen=True)
class Family:
    """One supported model family."""

    name: str  # "gpt2", "llama", "qwen2", "bert", "distilbert", "roberta" or "vit"
    model_types: tuple[str, ...]  # config.json "model_type" values it reads
    architectures: tuple[str, ...]  # config.json "architectures" values it reads
    read: Callable[[dict[str, Any], str], ModelSpec]  # (config.json, architecture) -> spec
    build: Callable[[ModelSpec, set[str]], nn.Module]  # (spec, stored names) -> model (build it on "meta")
    sources: Callable[[ModelSpec, set[str]], dict[str, Source]]  # (spec, stored names) -> our name -> source
    # (spec, stored names) -> stored copy of a tied weight -> the stored tensor the model reads (older files store
    # GPT-2's lm_head.weight beside wte.weight); each copy must equal its tensor
    ties: Callable[[ModelSpec, set[str]], dict[str, str]] = lambda spec, names: {}  # noqa: E731 (none by default)


REQUIRED = object()  # marks a config.json setting that has no default
_KIND_NAMES = {int: "a whole number", float: "a number", str: "text", bool: "true or false"}


def setting(raw: dict[str, Any], key: str, kind: type, default: Any = REQUIRED) -> Any:
    """``raw[key]`` checked to be a ``kind`` (ints are accepted as floats); ``default`` when absent or null.

    Raises:
        ValueError: when a required value is missing or a value has the wrong type.
    """
    value = raw.get(key)
    if value is None:
        if default is REQUIRED:
            raise ValueError(f"config.json has no {key!r} setting.")
        value = default
    ok = isinstance(value, kind) and not (isinstance(value, bool) and kind is not bool)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise ValueError(f"config.json's {key!r} must be {_KIND_NAMES.get(kind, kind.__name__)}, got {value!r}.")
    return value


def prefix_of(names: set[str], prefix: str, probe: str) -> str:
    """``prefix`` when the stored names carry it (``prefix + probe`` is stored), else ``""``."""
    return prefix if prefix + probe in names else ""


def transpose(t: torch.Tensor) -> torch.Tensor:
    """A ``Conv1D`` weight ``(in, out)`` as an ``nn.Linear`` weight ``(out, in)``."""
    return t.t()


def rows(start: int, stop: int) -> Callable[[torch.Tensor], torch.Tensor]:
    """Keep rows ``start:stop`` (after any transpose): one of Q, K, V from a packed projection."""
    return lambda t: t[start:stop]


def chain(*steps: Callable[[torch.Tensor], torch.Tensor]) -> Callable[[torch.Tensor], torch.Tensor]:
    """Apply ``steps`` left to right."""
    def run(t: torch.Tensor) -> torch.Tensor:
        for step in steps:
            t = step(t)
        return t
    return run


def linear(ours: str, stored: str, n_out: int, n_in: int, *, bias: bool = True) -> dict[str, Source]:
    """The weight (and bias) of an ``nn.Linear`` stored under the same layout."""
    out = {f"{ours}.weight": Source(f"{stored}.weight", (n_out, n_in))}
    if bias:
        out[f"{ours}.bias"] = Source(f"{stored}.bias", (n_out,))
    return out


def layer_norm(ours: str, stored: str, width: int) -> dict[str, Source]:
    """A LayerNorm's weight and bias (old BERT files call them gamma and beta)."""
    return {f"{ours}.weight": Source(f"{stored}.weight", (width,)), f"{ours}.bias": Source(f"{stored}.bias", (width,))}


def attention_linears(ours: str, stored: str, width: int, names: tuple[str, str, str, str]) -> dict[str, Source]:
    """Separate query, key, value and output projections (BERT and ViT store them this way)."""
    q, k, v, o = names
    out: dict[str, Source] = {}
    for mine, theirs in (("q_proj", q), ("k_proj", k), ("v_proj", v), ("out_proj", o)):
        out.update(linear(f"{ours}.{mine}", f"{stored}.{theirs}", width, width))
    return out


def feed_forward(ours: str, up: str, down: str, width: int, hidden: int) -> dict[str, Source]:
    """The two linear layers of a feed-forward network stored as separate ``nn.Linear``s."""
    return {**linear(f"{ours}.linear1", up, hidden, width), **linear(f"{ours}.linear2", down, width, hidden)}


def encoder_layer(ours: str, stored: str, width: int, hidden: int, *, attention: tuple[str, str, str, str],
                  norms: tuple[str, str]) -> dict[str, Source]:
    """One block in the layout BERT and ViT share: named attention projections, two LayerNorms, and the
    feed-forward network as ``intermediate.dense`` and ``output.dense``.

    Args:
        ours: our block's name, e.g. ``"blocks.0"``; stored: the stored layer's, e.g. ``"bert.encoder.layer.0"``.
        attention: the query, key, value and output projections' names under ``stored + ".attention"``.
        norms: the names of the LayerNorms our block calls ``norm1`` and ``norm2``, under ``stored``.
    """
    return {
        **attention_linears(f"{ours}.self_attn", f"{stored}.attention", width, attention),
        **layer_norm(f"{ours}.norm1", f"{stored}.{norms[0]}", width),
        **feed_forward(f"{ours}.ff", f"{stored}.intermediate.dense", f"{stored}.output.dense", width, hidden),
        **layer_norm(f"{ours}.norm2", f"{stored}.{norms[1]}", width),
    }
