"""Find the heads: previous-token, first-token and induction scores of every head of a pretrained text model.

The model reads a random sequence of tokens repeated twice (Olsson et al. 2022). Random tokens carry no meaning,
so a head that still looks at the token before (previous-token), at the first position (first-token, the
"attention sink"), or, in the second copy, at the token that followed the current one in the first copy
(induction) does so by its mechanism, not because of the text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from explorer.i18n import N_
from transformer_core.patterns import as_array, induction_target, mask_score, previous_token_target
from transformer_core.pretrained import Pretrained

SCORES = {"previous_token": N_("previous-token"), "first_token": N_("first-token"), "induction": N_("induction")}


@dataclass(frozen=True)
class HeadScores:
    """Each score per layer and head, and the sequence they were measured on."""

    scores: dict[str, np.ndarray]  # name -> (L, H) in [0, 1]
    ids: tuple[int, ...]  # the sequence the model read
    repeat: int  # length of the random part that is repeated

    def best(self, name: str) -> tuple[int, int, float]:
        """``(layer, head, score)`` of the highest-scoring head for ``name`` (0-based)."""
        s = self.scores[name]
        layer, head = np.unravel_index(int(np.argmax(s)), s.shape)
        return int(layer), int(head), float(s[layer, head])


def repeated_sequence(pre: Pretrained, length: int, seed: int) -> tuple[list[int], int]:
    """``length`` random ordinary tokens twice, inside the model's own start/end tokens; ``(ids, offset)``.

    ``offset`` is where the random part starts (1 after BERT's ``[CLS]``, else 0).
    """
    specials = pre.tokenizer.encode("").ids  # BERT: [CLS], [SEP]; GPT-2: none
    room = pre.config.max_len - len(specials)
    if length < 2 or 2 * length > room:
        raise ValueError(f"The repeated part must have 2 to {room // 2} tokens for this model, not {length}.")
    special = set(specials)
    ordinary = np.array([i for i in range(pre.tokenizer.vocab_size) if i not in special
                         and not _is_special(pre.tokenizer.id_to_token(i))])
    rng = np.random.default_rng(seed)
    part = rng.choice(ordinary, size=length, replace=len(ordinary) < length).tolist()
    ids = part + part
    return (specials[:1] + ids + specials[1:], 1) if specials else (ids, 0)


def _is_special(token: str | None) -> bool:
    return token is None or (token.startswith("[") and token.endswith("]")) or token.startswith("<|")


@torch.no_grad()
def head_scores(pre: Pretrained, *, length: int = 20, seed: int = 0) -> HeadScores:
    """Previous-token, first-token and induction scores of every head on a repeated random sequence."""
    if pre.tokenizer is None:
        raise ValueError(f"{pre.name} is a picture model; its heads read no text.")
    ids, offset = repeated_sequence(pre, length, seed)
    _, attention = pre.model.forward_with_attention(torch.tensor([ids]))
    weights = as_array([w[0] for w in next(iter(attention.values()))])  # (L, H, T, T)
    t = len(ids)
    first = np.zeros((t, t), dtype=bool)
    first[1:, 0] = True
    scores = {
        "previous_token": mask_score(weights, previous_token_target(t, start=offset + 1)),
        "first_token": mask_score(weights, first),
        "induction": mask_score(weights, induction_target(ids)),
    }
    return HeadScores(scores, tuple(ids), length)
