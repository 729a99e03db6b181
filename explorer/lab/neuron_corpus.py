"""What excites a neuron: the MLP neurons of a text, and the sentences of a small built-in corpus that excite each
neuron most.

A neuron's activation is the library's (:func:`~transformer_core.neurons.neuron_activations`): one entry of the
input of an MLP's down projection. A sentence's score for a neuron is its largest activation over the sentence's
tokens; :func:`scan_corpus` keeps, for every layer and neuron, the ``top`` sentences with the highest scores and the
token where each peaked. The corpus (``assets/corpus/sentences.txt``, public domain) is the same for every user;
nobody's own text is ever scanned or kept here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import torch
from torch import nn

from explorer.i18n import _
from transformer_core.models import Seq2SeqTransformer
from transformer_core.neurons import neuron_activations
from transformer_core.tasks.sequences import BOS

CORPUS = Path(__file__).resolve().parents[2] / "assets" / "corpus" / "sentences.txt"
TOP = 10  # sentences kept per neuron
CHUNK = 16  # sentences read between two merges of the running top list (and two progress reports)
MIN_COVERAGE = 0.8  # share of the corpus's characters a character vocabulary must know to read it

Reader = Callable[[str], tuple[Sequence[int], Sequence[str]] | None]  # a sentence -> (ids, token labels) or None


@cache
def corpus_sentences() -> tuple[str, ...]:
    """The built-in corpus, one sentence a line (read once per process; it never changes)."""
    return tuple(line.strip() for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip())


def coverage(vocab: Sequence[str]) -> float:
    """The share of the corpus's characters (spaces included, case kept) that a character vocabulary knows."""
    text = "".join(corpus_sentences())
    known = set(vocab)
    return sum(ch in known for ch in text) / max(len(text), 1)


def neurons_of(model: nn.Module, ids: Sequence[int]) -> torch.Tensor:
    """Every neuron of every layer on one text, ``(L, T, d_ff)``: the encoder–decoder's encoder (the stack the Lab
    shows) reads ``ids`` as its source, every other model reads them as they are."""
    if isinstance(model, Seq2SeqTransformer):
        return neuron_activations(model, (list(ids), [BOS]), stack="encoder")
    return neuron_activations(model, list(ids))


def stream_labels(tokens: Sequence[str], positions: int) -> tuple[str, ...]:
    """One label per position of the stream: a regressor's prepended CLS token gets its own."""
    return ("CLS", *tokens) if positions == len(tokens) + 1 else tuple(tokens)


def top_neurons(acts: torch.Tensor, k: int) -> list[int]:
    """The ``k`` neurons of one layer ``(T, d_ff)`` with the highest activation on any token, highest first."""
    best = acts.max(dim=0).values  # (d_ff,)
    return [int(i) for i in best.topk(min(k, best.numel())).indices]


@dataclass(frozen=True)
class Example:
    """One sentence among a neuron's top examples."""

    sentence: str  # the corpus sentence
    tokens: tuple[str, ...]  # its tokens as the model read them (one per stream position)
    position: int  # the token where the neuron peaked
    value: float  # the neuron's activation there (the sentence's score)


@dataclass(frozen=True)
class CorpusNeurons:
    """Every neuron's top sentences in the corpus, for one model (read-only; shared by every user)."""

    sentences: tuple[str, ...]  # the sentences scanned (the corpus)
    tokens: tuple[tuple[str, ...], ...]  # each sentence's tokens as the model read them; skipped sentences have ()
    values: torch.Tensor  # (L, d_ff, K) the top scores, highest first
    sentence: torch.Tensor  # (L, d_ff, K) which sentence (index into the corpus)
    position: torch.Tensor  # (L, d_ff, K) the token where the neuron peaked in it
    read: int  # sentences the model read
    skipped: int  # sentences it could not read (no token it knows)

    def top(self, layer: int, neuron: int, k: int = TOP) -> list[Example]:
        """Neuron ``neuron`` of layer ``layer`` (0-based): its ``k`` top sentences, highest first."""
        out = []
        for v, s, p in zip(self.values[layer, neuron, :k], self.sentence[layer, neuron, :k],
                           self.position[layer, neuron, :k], strict=True):
            s, p = int(s), int(p)
            out.append(Example(self.sentences[s], self.tokens[s], p, float(v)))
        return out


Top = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # (values, sentence, position), each (L, F, K)


def _merge(best: Top | None, chunk: Top, top: int) -> Top:
    """The running top list (values, sentence, position), each ``(L, F, K)``, merged with a chunk's."""
    if best is not None:
        chunk = tuple(torch.cat(pair, dim=-1) for pair in zip(best, chunk, strict=True))
    values, order = chunk[0].topk(min(top, chunk[0].size(-1)), dim=-1)  # (L, F, K)
    return values, chunk[1].gather(-1, order), chunk[2].gather(-1, order)


@torch.no_grad()
def scan_corpus(model: nn.Module, read: Reader, *, sentences: Sequence[str] | None = None, top: int = TOP,
                progress: Callable[[int, int], None] | None = None) -> CorpusNeurons:
    """Run the corpus through ``model`` and keep every neuron's ``top`` sentences.

    Args:
        model: a text model of the package (only read; the library's probes leave nothing on it).
        read: turns a sentence into the model's token ids and their labels (cut to what the model reads), or
            ``None`` when the model knows none of its tokens; such sentences are skipped.
        sentences: the corpus (default: :func:`corpus_sentences`).
        progress: called with (sentences done, total) after each chunk.

    Raises:
        ValueError: when the model can read no sentence of the corpus.
    """
    sentences = corpus_sentences() if sentences is None else tuple(sentences)
    tokens: list[tuple[str, ...]] = []
    best, pending = None, []
    for i, text in enumerate(sentences):
        got = read(text)
        if got is None or not len(got[0]):
            tokens.append(())
        else:
            acts = neurons_of(model, got[0]).float()  # (L, T, F)
            tokens.append(stream_labels(got[1], acts.size(1)))
            value, pos = acts.max(dim=1)  # (L, F) each: the sentence's score and where it peaked
            pending.append((value[..., None], torch.full_like(pos, i)[..., None], pos[..., None]))
        if pending and (len(pending) == CHUNK or i == len(sentences) - 1):
            chunk = tuple(torch.cat(parts, dim=-1) for parts in zip(*pending, strict=True))  # (L, F, n) each
            best, pending = _merge(best, chunk, top), []
        if progress is not None and (i % CHUNK == CHUNK - 1 or i == len(sentences) - 1):
            progress(i + 1, len(sentences))
    if best is None:
        raise ValueError(_("This model knows none of the corpus's tokens, so it cannot read it."))

    read_count = sum(1 for t in tokens if t)
    return CorpusNeurons(sentences, tuple(tokens), best[0], best[1].to(torch.int32), best[2].to(torch.int32),
                         read_count, len(sentences) - read_count)
