"""One word in several sentences: its vector after every layer, and how alike its uses are, layer by layer.

Layer 0 is the word's row of the token-embedding table (the same row wherever the same token stands, so identical
tokens start at cosine 1); layer l is the residual stream leaving block l at the word's position, read through the
``"resid_post"`` probe point (:mod:`transformer_core.probes`, set in this context only: the model is never changed).
A word the tokenizer splits is read at its last token, the one whose vector has seen the whole word.

:class:`Reader` says how one model reads a text; :func:`pretrained_reader`, :func:`trained_reader` and
:func:`random_reader` make one for each kind of model the Attention Lab shows.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from explorer.i18n import _
from explorer.lab.embedding_map import token_table
from explorer.lab.internals import lab_stack, trained_stack
from explorer.lab.text_input import MAX_TOKENS, encode_for_task, tokenize
from explorer.pretrained.lab import shown_token
from transformer_core.families import SelfAttentionStack
from transformer_core.pretrained import Pretrained
from transformer_core.probes import probing, recorder
from transformer_core.tasks.base import evaluating

MAX_SENTENCES = 4  # the most uses of a word compared at once


@dataclass(frozen=True)
class Reader:
    """How one model reads a text (only read; a pretrained model is shared)."""

    model: nn.Module
    encode: Callable[[str], tuple[tuple[int, ...], tuple[str, ...]]]  # ids and labels the model reads (specials in)
    plain: Callable[[str], tuple[int, ...]]  # the text's own token ids, no special tokens
    stack: Callable[[Sequence[int], Sequence[str]], SelfAttentionStack]  # the blocks the ids run through
    label: Callable[[int], str]  # names a token id


@dataclass(frozen=True)
class WordUse:
    """Where a word stands in one sentence, as the model's tokens."""

    sentence: str
    ids: tuple[int, ...]  # the sentence as the model reads it
    tokens: tuple[str, ...]  # their labels
    index: int  # position of the token that stands for the word: the word's last token
    pieces: tuple[str, ...]  # the word's tokens (one, unless the tokenizer splits it)


def find_word(reader: Reader, word: str, sentence: str) -> WordUse:
    """The first use of ``word`` (whole word, any case) in ``sentence``.

    Raises:
        ValueError: when the sentence has no such word, or its tokens do not line up with the word's.
    """
    word = word.strip()
    if not word:
        raise ValueError(_("Type the word to follow."))
    found = re.search(rf"(?<!\w){re.escape(word)}(?!\w)", sentence, flags=re.IGNORECASE)
    if found is None:
        raise ValueError(_("“{word}” is not in the sentence “{sentence}”.").format(word=word, sentence=sentence))
    upto = reader.plain(sentence[:found.end()])  # the sentence's tokens up to the word's end
    whole = reader.plain(sentence)
    before = reader.plain(sentence[:found.start()]) if found.start() else ()
    if tuple(whole[:len(before)]) != tuple(before):  # byte-level BPE: the space before a word joins the word
        before = reader.plain(sentence[:found.start()].rstrip())
    ids, tokens = reader.encode(sentence)
    lead = next((i for i in range(len(ids) - len(whole) + 1) if tuple(ids[i:i + len(whole)]) == whole), None)
    if not upto or tuple(whole[:len(upto)]) != tuple(upto) or len(before) >= len(upto) or lead is None:
        raise ValueError(_("In “{sentence}” the tokens do not end where “{word}” ends; try another sentence.").format(
            sentence=sentence, word=word))
    index = lead + len(upto) - 1
    if index >= len(ids):
        raise ValueError(_("“{word}” stands past the tokens this model reads in “{sentence}”; shorten it.").format(
            word=word, sentence=sentence))
    pieces = tuple(reader.label(i) for i in upto[len(before):])
    return WordUse(sentence, tuple(ids), tuple(tokens), index, pieces)


def layer_vectors(reader: Reader, use: WordUse) -> np.ndarray:
    """The word's vector at layer 0 (its embedding row) and after every block, ``(L + 1, C)`` float64."""
    model = reader.model
    seen: dict[int, torch.Tensor] = {}
    with (evaluating(model) if model.training else torch.no_grad()):
        stack = reader.stack(use.ids, use.tokens)
        with probing({(block, "resid_post"): recorder(seen, i) for i, block in enumerate(stack.blocks)}):
            stack.run()
        at = stack.x.size(1) - len(use.ids) + use.index  # after any token the model puts first (a CLS)
        row = token_table(model)[use.ids[use.index]]  # (C,)
        rows = [row, *(seen[i][0, at] for i in range(len(stack.blocks)))]
    return torch.stack(rows).detach().double().cpu().numpy()


@dataclass(frozen=True)
class WordComparison:
    """One word in several sentences, layer by layer."""

    word: str
    uses: tuple[WordUse, ...]
    vectors: np.ndarray  # (S, L + 1, C): each use's vector at layer 0 (embedding) and after each block
    pairs: tuple[tuple[int, int], ...]  # which uses each column of ``cosines`` compares (0-based)
    cosines: np.ndarray  # (L + 1, P): cosine similarity of each pair at each layer

    @property
    def split(self) -> tuple[WordUse, ...]:
        """The uses where the tokenizer splits the word into several tokens (the last one is read)."""
        return tuple(u for u in self.uses if len(u.pieces) > 1)


def _cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine of ``(L, C)`` and ``(L, C)``; 0 where a vector is zero."""
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    return np.where(norms > 0, (a * b).sum(-1) / np.where(norms > 0, norms, 1.0), 0.0)


def compare_uses(reader: Reader, word: str, sentences: Sequence[str]) -> WordComparison:
    """``word`` in each of 2 to :data:`MAX_SENTENCES` sentences: its vectors and their cosine, every layer.

    Raises:
        ValueError: for too few or too many sentences, or a sentence without the word (named).
    """
    sentences = [s.strip() for s in sentences if s.strip()]
    if not 2 <= len(sentences) <= MAX_SENTENCES:
        raise ValueError(_("Write 2 to {most} sentences (one a line) that use the word; you wrote {n}.").format(
            most=MAX_SENTENCES, n=len(sentences)))

    uses = tuple(find_word(reader, word, s) for s in sentences)
    vectors = np.stack([layer_vectors(reader, u) for u in uses])  # (S, L + 1, C)
    pairs = tuple(itertools.combinations(range(len(uses)), 2))
    cosines = np.stack([_cosine(vectors[a], vectors[b]) for a, b in pairs], axis=1)  # (L + 1, P)
    return WordComparison(word.strip(), uses, vectors, pairs, cosines)


def word_token(reader: Reader, word: str) -> tuple[int, tuple[str, ...]]:
    """The token that stands for ``word`` in the middle of a sentence (its last token) and the word's pieces."""
    use = find_word(reader, word, f"the {word.strip()}")
    return use.ids[use.index], use.pieces


def pretrained_reader(pre: Pretrained) -> Reader:
    """A pretrained model (GPT-2, the Llama family, BERT) reading with its own tokenizer."""
    tok = pre.tokenizer

    def encode(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        enc = tok.encode(text, max_length=MAX_TOKENS)
        return tuple(enc.ids), tuple(shown_token(t) for t in enc.tokens)

    return Reader(pre.model, encode, lambda text: tuple(tok.encode(text, add_special_tokens=False).ids),
                  lambda ids, labels: trained_stack(pre.model, ids, labels),
                  lambda i: shown_token(tok.id_to_token(int(i)) or f"#{i}"))


def trained_reader(model: nn.Module, task: object, label: Callable[[int], str]) -> Reader:
    """A model trained in this session, reading its task's characters (one token each)."""
    cls = 1 if getattr(model, "pool", None) == "cls" else 0
    limit = min(MAX_TOKENS, model.config.max_len - cls)

    def encode(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        lab = encode_for_task(task, text, max_tokens=limit)
        return lab.ids, lab.tokens

    return Reader(model, encode, lambda text: encode(text)[0],
                  lambda ids, labels: trained_stack(model, ids, labels), label)


def random_reader(model: nn.Module, kind: str, mask: str, known: Sequence[str] = ()) -> Reader:
    """The Lab's random encoder reading ``kind`` tokens under ``mask``; ``known`` words name their (hashed) ids."""
    names: dict[int, str] = {}
    for text in known:
        lab = tokenize(text, kind)
        names.update(zip(lab.ids, lab.tokens, strict=True))

    def encode(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
        lab = tokenize(text, kind)
        names.update(zip(lab.ids, lab.tokens, strict=True))
        return lab.ids, lab.tokens

    def stack(ids: Sequence[int], labels: Sequence[str]) -> SelfAttentionStack:
        shown = "none" if mask == "padding" else mask  # one sentence alone has no padding
        return lab_stack(model, ids, labels, shown)

    return Reader(model, encode, lambda text: encode(text)[0], stack, lambda i: names.get(int(i), f"#{i}"))
