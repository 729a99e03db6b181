"""A pretrained decoder (GPT-2, a Llama-family model) or text encoder (BERT, DistilBERT, RoBERTa) in the Attention
Lab: its own subword tokens, its attention replayed step by step, a decoder's next-token distribution and an
encoder's fill-ins for its mask token.

The model is only read: every function runs it under ``torch.no_grad()`` and changes nothing on it, so one
loaded copy can serve every visitor.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.lab.block_steps import BlockSteps, walk_blocks
from explorer.lab.internals import AttentionSteps, trained_stack
from transformer_core.pretrained import Pretrained

ENCODER_FAMILIES = ("bert", "distilbert", "roberta")  # text encoders: they fill in masks instead of going on
MODERN_FAMILIES = ("llama", "qwen2")  # Llama-family decoders: RMSNorm, SwiGLU, rotary positions, shared K/V heads
CAUSAL_FAMILIES = ("gpt2", *MODERN_FAMILIES)  # decoders: they predict the next token

SPACE_MARK = "Ġ"  # GPT-2's byte-level BPE writes a leading space as this character (SmolLM2's and Qwen's too)
PIECE_MARK = "▁"  # SentencePiece tokenizers (Llama 2, Mistral) write it as this one
SHOWN_SPACE = "␣"  # how the lab shows it: a visible space


@dataclass(frozen=True)
class PretrainedInput:
    """A text as the model's own tokens, cut to what the lab shows."""

    ids: tuple[int, ...]  # token ids, special tokens included
    tokens: tuple[str, ...]  # one label per token, spaces made visible
    notices: tuple[str, ...]  # what was done to the text, in plain words

    @property
    def empty(self) -> bool:
        """Whether there is nothing to show."""
        return not self.ids


def encode(pre: Pretrained, text: str, max_tokens: int) -> PretrainedInput:
    """``text`` in ``pre``'s tokenizer, at most ``max_tokens`` (and the model's positions) long.

    The tokenizer cuts the text before its special tokens are added, so an encoder's ``[CLS]``/``[SEP]`` (or
    ``<s>``/``</s>``) stay at both ends; its note says what was cut and why.
    """
    if pre.tokenizer is None:
        raise ValueError(f"{pre.name} is a picture model; it reads no text.")
    enc = pre.tokenizer.encode(text, max_length=max_tokens) if text.strip() else None
    ids, tokens = (list(enc.ids), list(enc.tokens)) if enc else ([], [])
    notices = (enc.note,) if enc and enc.note else ()
    shown = tuple(shown_token(t) for t in tokens)
    return PretrainedInput(tuple(ids), shown, notices)


def shown_token(token: str) -> str:
    """A token as the lab shows it: a leading space (``Ġ`` or ``▁``) made visible as ``␣``."""
    return token.replace(SPACE_MARK, SHOWN_SPACE).replace(PIECE_MARK, SHOWN_SPACE)


@torch.no_grad()
def attention_layers(pre: Pretrained, inp: PretrainedInput, layer: int) -> tuple[list[torch.Tensor], AttentionSteps]:
    """Every layer's attention weights ``(H, T, S)`` and every intermediate of one layer (0-based).

    The numbers come from replaying the model's own blocks (:func:`~explorer.lab.internals.walk_stack`), so they are the
    ones the model computes.
    """
    weights, chosen = block_layers(pre, inp, layer)
    return weights, chosen.attention


@torch.no_grad()
def block_layers(pre: Pretrained, inp: PretrainedInput, layer: int) -> tuple[list[torch.Tensor], BlockSteps]:
    """Every layer's attention weights ``(H, T, S)`` and every intermediate of one whole block, attention and MLP
    (0-based), replayed with :func:`~explorer.lab.block_steps.walk_blocks`."""
    steps = walk_blocks(trained_stack(pre.model, inp.ids, inp.tokens))
    return [s.attention.weights for s in steps], steps[max(0, min(layer, len(steps) - 1))]


@dataclass(frozen=True)
class Guess:
    """One candidate token and its probability."""

    token: str  # the token as the tokenizer writes it, spaces made visible
    probability: float  # in [0, 1]


def _top(logits: torch.Tensor, pre: Pretrained, k: int, temperature: float) -> list[Guess]:
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive.")
    probs = torch.softmax(logits.double() / temperature, dim=-1)  # (V,)
    values, ids = probs.topk(min(k, probs.numel()))
    return [Guess(shown_token(pre.tokenizer.id_to_token(int(i)) or f"#{int(i)}"), float(p))
            for p, i in zip(values, ids, strict=True)]


@torch.no_grad()
def next_tokens(pre: Pretrained, inp: PretrainedInput, *, k: int = 10, temperature: float = 1.0) -> list[Guess]:
    """A decoder's (GPT-2's, a Llama-family model's) ``k`` most likely next tokens after ``inp``, from
    ``softmax(logits / temperature)``."""
    if pre.family not in CAUSAL_FAMILIES or inp.empty:
        raise ValueError("Next-token predictions need a decoder (GPT-2 or a Llama-family model) and some text.")
    logits = pre.model(torch.tensor([inp.ids]))  # (1, T, V)
    return _top(logits[0, -1], pre, k, temperature)


@torch.no_grad()
def mask_fills(pre: Pretrained, inp: PretrainedInput, *, k: int = 5) -> list[tuple[int, list[Guess]]]:
    """An encoder's ``k`` best fill-ins for each mask token (``[MASK]``, ``<mask>``) of ``inp``:
    ``(position, guesses)`` in text order.

    An empty list when the text has no mask token or the model has no masked-LM head.
    """
    mask = pre.tokenizer.mask_token if pre.tokenizer is not None else None
    mask_id = pre.tokenizer.token_to_id(mask) if mask else None
    spots = [i for i, t in enumerate(inp.ids) if t == mask_id]
    if pre.family not in ENCODER_FAMILIES or not spots or getattr(pre.model, "head", None) is None:
        return []
    logits = pre.model(torch.tensor([inp.ids]))  # (1, T, V)
    return [(i, _top(logits[0, i], pre, k, 1.0)) for i in spots]
