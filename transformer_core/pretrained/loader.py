"""Load a published GPT-2, Llama, Qwen2, BERT, DistilBERT, RoBERTa or ViT (Hugging Face layout) as a
transformer_core model.

The model is judged from ``config.json`` first: family, architecture and size are checked — against the
caller's budget too — before any weight is read or downloaded. Weights come only from ``.safetensors`` files;
``auto_map`` and other remote code are ignored, since every supported architecture is built from this
package's own modules.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ..config import TransformerConfig, ViTConfig
from . import bert, distilbert, gpt2, hub, llama, roberta, vit
from .families import Family, ModelSpec, Source
from .images import ImagePreprocessor
from .pooling import Pooling, read_pooling
from .tokenizer import TextTokenizer
from .weights import StoredTensor, check_sources, check_ties, fill, stored_tensors

PRETRAINED_FAMILIES: dict[str, Family] = {
    f.name: f for f in (gpt2.FAMILY, llama.FAMILY, llama.QWEN2, bert.FAMILY, distilbert.FAMILY, roberta.FAMILY,
                        vit.FAMILY)}
CAUSAL_FAMILIES = ("gpt2", "llama", "qwen2")  # the families that write text (CausalLM), left to right
CONFIG_FILE = "config.json"
MIN_TENSORS_PER_BLOCK = 9  # every block of every family stores at least this many tensors (Llama's: exactly 9)


@dataclass(frozen=True)
class Pretrained:
    """A published model running on transformer_core, ready for inference."""

    family: str  # a key of PRETRAINED_FAMILIES: "gpt2", "llama", "qwen2", "bert", "distilbert", "roberta" or "vit"
    model: nn.Module  # transformer_core module in eval mode, gradients off; model.forward_with_attention(x)
    config: TransformerConfig | ViTConfig  # its transformer_core configuration
    tokenizer: TextTokenizer | None  # the model's own tokenizer (None for ViT)
    labels: tuple[str, ...] | None  # ViT class names in class-id order, else None
    preprocess: Callable[[Any], torch.Tensor] | None  # ViT: PIL image -> (1, 3, H, W) tensor, else None
    name: str  # the folder's name or the Hub model id
    n_params: int  # parameters (tied weights counted once)
    architecture: str  # e.g. "GPT2LMHeadModel"
    pooling: Pooling | None = None  # a text encoder's sentence pooling (1_Pooling/config.json, else mean)


def supported() -> str:
    """The supported families and architectures, for messages."""
    return "; ".join(f"{f.name} ({', '.join(f.architectures)})" for f in PRETRAINED_FAMILIES.values())


def _guess_type(raw: dict[str, Any]) -> str:
    # The original small Google BERTs and some older files have no model_type; their keys tell the family.
    for key, family in (("n_embd", "gpt2"), ("patch_size", "vit"), ("type_vocab_size", "bert")):
        if key in raw:
            return family
    return ""


def read_spec(raw: object) -> ModelSpec:
    """The model a ``config.json`` dict describes, validated; nothing is built or read.

    Raises:
        ValueError: for unsupported model types or architectures and invalid settings.
    """
    if not isinstance(raw, dict):
        raise ValueError(f"{CONFIG_FILE} must hold a JSON object.")
    model_type = raw.get("model_type") or _guess_type(raw)
    family = next((f for f in PRETRAINED_FAMILIES.values() if model_type in f.model_types), None)
    if family is None:
        raise ValueError(f"Model type {model_type or '(none)'!r} is not supported; supported are {supported()}.")
    archs = raw.get("architectures") or []
    if not isinstance(archs, list) or len(archs) > 1:
        raise ValueError(f"{CONFIG_FILE}'s architectures must list one architecture, got {archs!r}.")
    arch = archs[0] if archs else ""
    if arch and arch not in family.architectures:
        raise ValueError(f"Architecture {arch!r} is not supported; supported are {supported()}.")
    try:
        # A text encoder without "architectures" may or may not hold its masked-LM head: its weights decide.
        encoder = family.name in ("bert", "distilbert", "roberta")
        return family.read(raw, arch or ("" if encoder else family.architectures[0]))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{CONFIG_FILE} describes a model this loader cannot build: {exc}") from exc


def read_config(folder: Path) -> ModelSpec:
    """Read and validate ``folder/config.json``."""
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise ValueError(f"{folder} is not a model folder: it has no {CONFIG_FILE}.")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{CONFIG_FILE} is not a readable JSON file ({exc}).") from exc
    return read_spec(raw)


def check_budget(spec: ModelSpec, *, max_params: int | None = None, max_bytes: int | None = None) -> None:
    """Refuse a model larger than the caller allows, before any weight is read.

    Raises:
        ValueError: saying how large the model is and what the limit is.
    """
    if max_params is not None and spec.n_params > max_params:
        raise ValueError(f"This {spec.family} model has {spec.n_params:,} parameters; the limit here is "
                         f"{max_params:,}.")
    if max_bytes is not None and spec.n_bytes > max_bytes:
        raise ValueError(f"This {spec.family} model needs {spec.n_bytes / 2**20:,.0f} MB of memory; the limit here "
                         f"is {max_bytes / 2**20:,.0f} MB.")


def _resolve(source: str | Path, budget: dict[str, int | None]) -> tuple[Path, str, ModelSpec]:
    folder = Path(source)
    if folder.is_dir():
        spec = read_config(folder)
        check_budget(spec, **budget)
        return folder, folder.name, spec
    text = str(source)
    if not hub.looks_like_model_id(text):
        raise ValueError(f"{text!r} is neither a model folder nor a Hugging Face model id.")
    # The budget is checked from config.json before any weight is downloaded; config and weights come from one commit.
    folder = hub.fetch_model(text, check=lambda fetched: check_budget(read_config(fetched), **budget))
    return folder, text, read_config(folder)


def matched_sources(spec: ModelSpec, stored: dict[str, StoredTensor]) -> dict[str, Source]:
    """Where each of the model's weights is stored, checked against the headers (no tensor is read).

    Raises:
        ValueError: for a file with too few tensors for the described layers, missing or mis-shaped tensors.
    """
    if spec.config.n_layers * MIN_TENSORS_PER_BLOCK > len(stored):
        # Checked first, so that a forged layer count cannot make even the weight map take long.
        raise ValueError(f"config.json describes {spec.config.n_layers:,} layers, but the weights file holds only "
                         f"{len(stored):,} tensors; they do not belong together.")
    family = PRETRAINED_FAMILIES[spec.family]
    sources = family.sources(spec, set(stored))
    check_sources(sources, stored)
    check_ties(family.ties(spec, set(stored)), stored, read=False)
    return sources


def build_model(folder: Path, spec: ModelSpec) -> nn.Module:
    """The model with the folder's weights, in eval mode with gradients off (validated from headers first)."""
    stored = stored_tensors(folder)
    sources = matched_sources(spec, stored)
    check_ties(PRETRAINED_FAMILIES[spec.family].ties(spec, set(stored)), stored, read=True)
    with torch.device("meta"):  # shapes only: the real tensors come from the file
        model = PRETRAINED_FAMILIES[spec.family].build(spec, set(stored))
    fill(model, sources, stored)
    return model.eval().requires_grad_(False)


def load_pretrained(source: str | Path, *, device: str | torch.device | None = None, max_params: int | None = None,
                    max_bytes: int | None = None) -> Pretrained:
    """Load a GPT-2, Llama, Qwen2, BERT or ViT from a local folder in the Hugging Face layout or a Hub model id.

    Args:
        source: a folder with ``config.json``, ``model.safetensors`` and the tokenizer or image settings, or a
            model id such as ``"gpt2"`` (from the local Hugging Face cache, else downloaded).
        device: where to put the model (default: CPU).
        max_params: refuse models with more parameters, before reading or downloading any weight.
        max_bytes: refuse models whose float32 weights take more bytes, likewise.

    Raises:
        ValueError: for unsupported or invalid models, pickle-only folders, damaged or mismatched weights,
            models over the budget, and (``HubError``) models that cannot be fetched.
    """
    folder, name, spec = _resolve(source, {"max_params": max_params, "max_bytes": max_bytes})
    model = build_model(folder, spec)
    tokenizer = preprocess = pooling = None
    if spec.family == "vit":
        preprocess = ImagePreprocessor.from_folder(folder, spec.config.image_size)
        if preprocess.output_size != (spec.config.image_size,) * 2:
            raise ValueError(f"preprocessor_config.json makes {preprocess.output_size} pictures, but the model "
                             f"expects {spec.config.image_size}x{spec.config.image_size}.")
    else:
        tokenizer = TextTokenizer.from_folder(folder, max_length=spec.config.max_len, family=spec.family)
        pooling = read_pooling(folder) if spec.family not in CAUSAL_FAMILIES else None
        if tokenizer.vocab_size > spec.config.vocab_size:
            raise ValueError(f"The tokenizer knows {tokenizer.vocab_size:,} tokens but the model only "
                             f"{spec.config.vocab_size:,}; they do not belong together.")
    n_params = sum(p.numel() for p in model.parameters())
    return Pretrained(spec.family, model.to(device or "cpu"), spec.config, tokenizer, spec.labels, preprocess,
                      name, n_params, spec.architecture, pooling)
