"""A sentence-embedding model in the Attention Lab: each line of text as one normalised vector, and how alike
every two lines are.

A text encoder without a masked-LM head (a ``BertModel``, ``RobertaModel`` or ``DistilBertModel`` as
sentence-transformers publishes them) gives one vector per token. The model's own pooling
(:class:`~transformer_core.pretrained.Pooling`: mean by default) makes one vector per line; normalised to length 1,
the dot product of two lines is their cosine similarity. Lines are encoded together, padded to the longest, and
the padding is hidden from attention and left out of the pooling, so each line's vector is what it would be
alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from explorer.pretrained.lab import ENCODER_FAMILIES
from transformer_core.pretrained import Pooling, Pretrained

MAX_LINES = 8  # lines the view compares
MAX_LINE_TOKENS = 128  # tokens of one line the view reads
MAX_CHARS = MAX_LINES * 1024  # characters the box of lines takes (a line is read up to 128 tokens: ~1,000 characters)
EXAMPLE_LINES = ("A man is eating food.", "A man is eating a piece of bread.", "The girl is carrying a baby.",
                 "A man is riding a horse.", "A woman is playing violin.")


@dataclass(frozen=True)
class Similarity:
    """Lines of text, their normalised embeddings and every pair's cosine similarity."""

    lines: tuple[str, ...]  # the texts compared, in order
    n_tokens: tuple[int, ...]  # tokens each line was read as (special tokens included, after any cut)
    embeddings: torch.Tensor  # (N, C) one unit vector per line
    cosine: torch.Tensor  # (N, N) cosine similarity of every two lines, in [-1, 1]
    pooling: Pooling  # how token vectors were pooled
    notices: tuple[str, ...]  # what was done to the lines, in plain words


def embeds_sentences(pre: Pretrained) -> bool:
    """Whether ``pre`` is a text encoder without a masked-LM head: one that gives token vectors, not words."""
    return pre.family in ENCODER_FAMILIES and getattr(pre.model, "head", None) is None


def split_lines(text: str) -> list[str]:
    """The non-empty lines of ``text``, stripped."""
    return [line.strip() for line in text.splitlines() if line.strip()]


@torch.no_grad()
def sentence_similarity(pre: Pretrained, lines: list[str]) -> Similarity:
    """Embed each of ``lines`` (at most :data:`MAX_LINES`, each cut to :data:`MAX_LINE_TOKENS` tokens) and compare.

    Raises:
        ValueError: when ``pre`` is not a sentence-embedding model or there are no lines.
    """
    if not embeds_sentences(pre) or pre.tokenizer is None:
        raise ValueError(f"{pre.name} is not a sentence-embedding model (a text encoder without a masked-LM head).")
    notices = []
    if len(lines) > MAX_LINES:
        notices.append(f"You gave {len(lines)} lines; the first {MAX_LINES} are compared.")
        lines = lines[:MAX_LINES]
    if not lines:
        raise ValueError("Write a few lines of text to compare.")
    encoded = [pre.tokenizer.encode(line, max_length=MAX_LINE_TOKENS) for line in lines]
    notices += [f"Line {i + 1}: {e.note}" for i, e in enumerate(encoded) if e.note]
    longest = max(len(e.ids) for e in encoded)
    ids = torch.zeros(len(lines), longest, dtype=torch.long)  # (N, T), padded on the right
    valid = torch.zeros(len(lines), longest, dtype=torch.bool)
    for row, e in enumerate(encoded):
        ids[row, : len(e.ids)] = torch.tensor(e.ids)
        valid[row, : len(e.ids)] = True
    hidden = pre.model(ids, valid=valid)  # (N, T, C): a headless encoder gives its final hidden states
    pooling = pre.pooling or Pooling("mean", "default")
    if pooling.note:
        notices.append(pooling.note)
    vectors = torch.nn.functional.normalize(pooling(hidden.float(), valid), dim=-1)  # (N, C)
    return Similarity(tuple(lines), tuple(len(e.ids) for e in encoded), vectors, vectors @ vectors.T, pooling,
                      tuple(notices))
