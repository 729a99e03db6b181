"""*Follow a word*: a few candidate next tokens followed through the layers with the logit lens.

Wraps :func:`transformer_core.lens.follow_tokens` and names everything a page draws: the candidates (the model's
own likeliest next tokens, or words typed by the learner, each read as its first token), their probability and
rank after every layer at one position, where each one first becomes the top token, and the numbers as CSV.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from explorer.i18n import _
from transformer_core.lens import follow_tokens

MAX_CANDIDATES = 5  # more lines than this make the chart unreadable on a projector


@dataclass(frozen=True)
class Candidate:
    """One followed token."""

    id: int  # its token id
    label: str  # how the page shows it
    typed: str | None = None  # the word the learner typed, when it was typed (it may have more tokens than this)

    @property
    def note(self) -> str | None:
        """A sentence when a typed word was cut to its first token."""
        if self.typed is None or self.typed == self.label:
            return None
        return _("“{word}” is followed as its first token, “{token}”.").format(word=self.typed, token=self.label)


@dataclass(frozen=True)
class WordPaths:
    """The candidates' probability and rank after each layer at one position."""

    candidates: tuple[Candidate, ...]
    position: int  # the position read, 0-based; it predicts the token after it
    probs: np.ndarray  # (L, K) probability of candidate k after layer l + 1
    ranks: np.ndarray  # (L, K) its rank there among every token of the vocabulary, 1 = likeliest

    @property
    def n_layers(self) -> int:
        """L, the number of layers read."""
        return int(self.probs.shape[0])

    def first_top(self, k: int) -> int | None:
        """The first layer (1-based) from which candidate ``k`` stays the likeliest token, or ``None``."""
        top = self.ranks[:, k] == 1
        if not top[-1]:
            return None
        below = np.flatnonzero(~top)
        return int(below[-1]) + 2 if below.size else 1

    def csv(self) -> str:
        """One row per layer and candidate: layer (1-based), token, id, probability, rank."""
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([_("layer"), _("token"), _("token_id"), _("probability"), _("rank")])
        for layer in range(self.n_layers):
            for k, c in enumerate(self.candidates):
                writer.writerow([layer + 1, c.label, c.id, f"{float(self.probs[layer, k]):.6g}",
                                 int(self.ranks[layer, k])])
        return out.getvalue()


def top_candidates(model: nn.Module, ids: Sequence[int], label: Callable[[int], str], *, position: int = -1,
                   k: int = 10) -> tuple[Candidate, ...]:
    """The model's own ``k`` likeliest next tokens at ``position`` (its last layer), likeliest first."""
    with torch.no_grad():
        logits = model(torch.tensor([list(ids)], device=model.lm_head.weight.device))[0, position]  # (V,)
    top = logits.float().topk(min(k, logits.numel())).indices.tolist()
    return tuple(Candidate(int(i), label(int(i))) for i in top)


def typed_candidate(word: str, encode: Callable[[str], Sequence[int]],
                    label: Callable[[int], str]) -> Candidate:
    """A typed word as its first token (``encode`` gives the word's token ids, no special tokens).

    Raises:
        ValueError: when the word gives no token (empty, or nothing the tokenizer knows).
    """
    ids = list(encode(word))
    if not word.strip() or not ids:
        raise ValueError(_("“{word}” gives no token this model knows.").format(word=word))
    return Candidate(int(ids[0]), label(int(ids[0])), typed=word)


def char_encoder(vocab: Mapping[str, int]) -> Callable[[str], list[int]]:
    """A character model's encoder for a typed word: its first character's id (none outside the vocabulary)."""
    return lambda word: [vocab[word[0]]] if word and word[0] in vocab else []


def continuation_encoder(encode: Callable[[str], Sequence[int]], text: str) -> Callable[[str], list[int]]:
    """A subword tokenizer's encoder for a word typed to follow ``text``: the tokens the word adds after the text
    and a space (GPT-2 reads " Paris" and "Paris" as different tokens; the one that follows a text is the first).

    A tokenizer that writes the space as a token of its own gives the word's tokens after it; a word of characters
    the tokenizer drops gives none.
    """
    base = list(encode(text))
    space = list(encode(f"{text} "))[len(base):]

    def word_ids(word: str) -> list[int]:
        both = list(encode(f"{text} {word.strip()}"))
        if both[:len(base)] != base:  # the word merged with the text's end: read it alone
            return list(encode(word.strip()))
        added = both[len(base):]
        if space and added[:len(space)] == space:
            return added[len(space):]
        return added

    return word_ids


def follow_word(model: nn.Module, ids: Sequence[int], candidates: Sequence[Candidate], *,
                position: int = -1) -> WordPaths:
    """The probability and rank of each candidate after every layer at ``position``.

    Raises:
        ValueError: for a model that is not decoder-only, no candidate or too many, a bad position or text.
    """
    unique = tuple({c.id: c for c in candidates}.values())
    if len(unique) > MAX_CANDIDATES:
        raise ValueError(_("Follow at most {most} tokens at once; {n} were chosen.").format(most=MAX_CANDIDATES,
                                                                                          n=len(unique)))
    if not unique:
        raise ValueError(_("Choose at least one token to follow."))

    paths = follow_tokens(model, list(ids), [c.id for c in unique], position=position)
    return WordPaths(unique, paths.position, paths.probs, paths.ranks)
