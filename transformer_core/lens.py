"""The logit lens (nostalgebraist 2020): what a decoder-only model would predict if it stopped after layer l.

The residual stream after each block goes through the model's final norm and its unembedding, exactly as the
last block's output does; after the last layer the lens is the model's own prediction. Re-exported by
``interventions.py``; it honours the heads switched off with ``ablate_heads``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from .models import CausalLM


@dataclass(frozen=True)
class LogitLens:
    """The lens of one text: ``L`` layers, ``T`` positions, the ``k`` likeliest tokens per cell.

    Row ``l`` is read after block ``l`` (0-based); position ``t`` predicts the token after ``tokens[t]``.
    """

    tokens: np.ndarray  # (T,) int64: the input token ids
    top_ids: np.ndarray  # (L, T, k) int64: the k likeliest next tokens after each layer, likeliest first
    top_probs: np.ndarray  # (L, T, k) float32: their probabilities
    final_ids: np.ndarray  # (T,) int64: the model's own prediction (the last layer's likeliest token)
    final_probs: np.ndarray  # (L, T) float32: the probability each layer gives to that final prediction

    @property
    def n_layers(self) -> int:
        """L, the number of blocks read."""
        return int(self.top_ids.shape[0])


def _as_ids(tokens: torch.Tensor | Sequence[int], model: CausalLM) -> torch.Tensor:
    ids = torch.as_tensor(tokens, dtype=torch.long)
    if ids.dim() == 2 and ids.size(0) == 1:
        ids = ids[0]
    if ids.dim() != 1 or ids.numel() == 0:
        raise ValueError(f"The logit lens reads one non-empty text: token ids of shape (T,) or (1, T), got "
                         f"{tuple(ids.shape)}.")
    config = model.config
    if ids.numel() > config.max_len:
        raise ValueError(f"The text has {ids.numel()} tokens; the model reads at most {config.max_len}.")
    if int(ids.min()) < 0 or int(ids.max()) >= config.vocab_size:
        raise ValueError(f"Token ids must lie in 0..{config.vocab_size - 1}.")
    return ids


def _residuals(model: CausalLM, ids: torch.Tensor) -> list[torch.Tensor]:
    """The residual stream after each block, ``(T, C)`` each; the blocks run as in ``CausalLM.forward``."""
    x = model.embed(ids[None])  # (1, T, C)
    out = []
    for block in model.blocks:
        x, _ = block(x, is_causal=True, positions=model.attn_positions)
        out.append(x[0])
    return out


def logit_lens(model: nn.Module, tokens: torch.Tensor | Sequence[int], top_k: int = 5) -> LogitLens:
    """Read a decoder-only model's residual stream after every layer through its final norm and unembedding.

    Args:
        model: a :class:`~transformer_core.models.CausalLM` (including the pretrained GPT-2); use eval mode.
        tokens: the text's token ids, ``(T,)`` or ``(1, T)``.
        top_k: how many of the likeliest tokens to keep per layer and position.

    Raises:
        ValueError: for a model that is not decoder-only, an empty or too long text, or a bad ``top_k``.
    """
    if not isinstance(model, CausalLM):
        raise ValueError(f"The logit lens reads decoder-only (GPT-like) models; {type(model).__name__} is not one.")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= model.config.vocab_size:
        raise ValueError(f"top_k={top_k!r} must be a whole number from 1 to {model.config.vocab_size}.")
    device = model.lm_head.weight.device
    with torch.no_grad():
        ids = _as_ids(tokens, model).to(device)
        hidden = _residuals(model, ids)
        final_ids = model.lm_head(model.final_norm(hidden[-1])).argmax(dim=-1)  # (T,)
        tops, finals = [], []
        for x in hidden:  # one layer at a time: (T, V) probabilities are large for a real vocabulary
            probs = model.lm_head(model.final_norm(x)).float().softmax(dim=-1)  # (T, V)
            tops.append(probs.topk(top_k, dim=-1))
            finals.append(probs.gather(-1, final_ids[:, None])[:, 0])  # (T,)
    return LogitLens(
        tokens=ids.cpu().numpy(),
        top_ids=torch.stack([t.indices for t in tops]).cpu().numpy(),
        top_probs=torch.stack([t.values for t in tops]).cpu().numpy(),
        final_ids=final_ids.cpu().numpy(),
        final_probs=torch.stack(finals).cpu().numpy(),
    )


@dataclass(frozen=True)
class TokenPaths:
    """Chosen tokens followed through the layers at one position: their probability and rank after each block."""

    targets: np.ndarray  # (K,) int64: the token ids followed, in the order asked
    position: int  # the position read (0-based, counted from the start); it predicts the token after it
    probs: np.ndarray  # (L, K) float32: each target's probability after block l
    ranks: np.ndarray  # (L, K) int64: its rank among all V tokens there, 1 = likeliest (ties share the better rank)


def follow_tokens(model: nn.Module, tokens: torch.Tensor | Sequence[int], targets: Sequence[int], *,
                  position: int = -1) -> TokenPaths:
    """The logit lens of a few chosen next tokens: their probability and rank after every layer at ``position``.

    Row ``l`` is the residual stream after block ``l`` through the final norm and the unembedding, as in
    :func:`logit_lens`; the last row is the model's own next-token distribution.

    Args:
        model: a :class:`~transformer_core.models.CausalLM` (including the pretrained GPT-2 and Llama); eval mode.
        tokens: the text's token ids, ``(T,)`` or ``(1, T)``.
        targets: the next-token ids to follow (at least one, each in the vocabulary).
        position: the position read, negative counting from the end (``-1``: after the whole text).

    Raises:
        ValueError: for a model that is not decoder-only, an empty or too long text, a bad target or position.
    """
    if not isinstance(model, CausalLM):
        raise ValueError(f"The logit lens reads decoder-only (GPT-like) models; {type(model).__name__} is not one.")
    wanted = [int(t) for t in targets]
    vocab = model.config.vocab_size
    if not wanted or any(not 0 <= t < vocab for t in wanted):
        raise ValueError(f"Follow at least one token, each an id in 0..{vocab - 1}; got {wanted}.")
    device = model.lm_head.weight.device
    with torch.no_grad():
        ids = _as_ids(tokens, model).to(device)
        n = ids.numel()
        if not -n <= position < n:
            raise ValueError(f"Position {position} is outside the text's {n} tokens.")
        at = position % n
        index = torch.tensor(wanted, device=device)
        probs, ranks = [], []
        for x in _residuals(model, ids):
            p = model.lm_head(model.final_norm(x[at])).float().softmax(dim=-1)  # (V,)
            chosen = p[index]  # (K,)
            probs.append(chosen)
            ranks.append(1 + (p[None, :] > chosen[:, None]).sum(dim=-1))  # (K,): tokens strictly likelier, + 1
    return TokenPaths(targets=np.asarray(wanted, dtype=np.int64), position=at,
                      probs=torch.stack(probs).cpu().numpy(), ranks=torch.stack(ranks).cpu().numpy())
