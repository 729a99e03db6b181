"""Writing text token by token with a key/value cache, one step at a time, each step with what the model saw.

:func:`generate` yields a :class:`GenerationStep` per new token: the token, the logits it was chosen from, and
each layer's attention row of the token that asked (its query over every key so far). The prompt is read once;
afterwards each step feeds only the newest token, whose keys and values join a :class:`~.kv_cache.KVCache`, so a
step costs one token's work instead of the whole sequence's. The logits equal a full forward over the whole
sequence (tested). Works for every decoder-only model (:class:`~transformer_core.models.CausalLM`, GPT-2 and the
Llama family loaded from Hugging Face), and never changes the model: each step runs in evaluation mode without
gradients, and the modes are put back before the step is handed out.

Sampling (:func:`sampling_probs`) follows the usual order: temperature, then top-k, then top-p (Holtzman et al.
2020, the smallest set of likeliest tokens holding at least ``top_p`` of the probability).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .config import TransformerConfig, real_number, whole_number
from .kv_cache import KVCache


@dataclass(frozen=True)
class GenerationStep:
    """One new token and what it was made from."""

    token_id: int  # the token chosen at this step
    logits: torch.Tensor  # (V,) the raw logits it was chosen from (before temperature, top-k, top-p)
    attention: tuple[torch.Tensor, ...]  # per layer (H, T_so_far): the last input token's query over every key
    position: int  # index of the new token in the whole sequence (prompt included)


@contextmanager
def _inference(model: nn.Module) -> Iterator[None]:
    # Evaluation mode without gradients for one step only, restoring each module's own mode (not one flag for
    # all): nothing changes on the model between the steps a caller sees.
    training = [m for m in model.modules() if m.training]
    for m in training:
        m.training = False
    try:
        with torch.no_grad():
            yield
    finally:
        for m in training:
            m.training = True


def _check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    if real_number("temperature", temperature) < 0:
        raise ValueError(f"temperature={temperature} must be 0 (greedy) or more.")
    if top_k is not None and whole_number("top_k", top_k) < 1:
        raise ValueError(f"top_k={top_k} must be at least 1 (or None for no limit).")
    if top_p is not None and not 0 < real_number("top_p", top_p) <= 1:
        raise ValueError(f"top_p={top_p} must be above 0 and at most 1 (or None for no limit).")


def sampling_probs(logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None,
                   top_p: float | None = None) -> torch.Tensor:
    """The distribution the next token is drawn from, ``(..., V)`` from logits ``(..., V)``.

    ``softmax(logits / temperature)`` restricted to the ``top_k`` likeliest tokens (ties with the k-th kept), then
    to the smallest set of likeliest tokens whose probability reaches ``top_p``, renormalised. ``temperature=0``
    is greedy: all the probability on the likeliest token.
    """
    _check_sampling(temperature, top_k, top_p)
    if temperature == 0:
        return F.one_hot(logits.argmax(dim=-1), logits.size(-1)).to(logits.dtype)
    scores = logits / temperature
    if top_k is not None and top_k < scores.size(-1):
        kth = torch.topk(scores, top_k).values[..., -1:]  # (..., 1)
        scores = scores.masked_fill(scores < kth, float("-inf"))
    probs = scores.softmax(dim=-1)
    if top_p is not None and top_p < 1:
        ranked, order = probs.sort(dim=-1, descending=True)
        before = ranked.cumsum(dim=-1) - ranked  # (..., V) probability of the likelier tokens
        drop = (before >= top_p).scatter(-1, order, before >= top_p)  # back to vocabulary order
        probs = probs.masked_fill(drop, 0.0)
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


def choose_next(logits: torch.Tensor, *, temperature: float = 1.0, top_k: int | None = None,
                top_p: float | None = None, generator: torch.Generator | None = None) -> torch.Tensor:
    """The next token ``(...)`` for logits ``(..., V)``: the likeliest at ``temperature=0``, else drawn from
    :func:`sampling_probs` with ``generator``."""
    if temperature == 0:
        _check_sampling(temperature, top_k, top_p)
        return logits.argmax(dim=-1)
    probs = sampling_probs(logits, temperature=temperature, top_k=top_k, top_p=top_p)
    flat = probs.reshape(-1, probs.size(-1))  # (N, V)
    return torch.multinomial(flat, 1, generator=generator).reshape(probs.shape[:-1])


def _check_prompt(model: nn.Module, prompt_ids: torch.Tensor) -> None:
    if not isinstance(prompt_ids, torch.Tensor) or prompt_ids.dim() != 2 or prompt_ids.size(0) != 1:
        shape = tuple(prompt_ids.shape) if isinstance(prompt_ids, torch.Tensor) else type(prompt_ids).__name__
        raise ValueError(f"prompt_ids must be a (1, T) tensor of token ids, got {shape}.")
    if prompt_ids.size(1) == 0 or prompt_ids.is_floating_point():
        raise ValueError("prompt_ids must hold at least one whole-number token id.")
    config = model.config
    if prompt_ids.size(1) > config.max_len:
        raise ValueError(f"The prompt has {prompt_ids.size(1)} tokens but the model reads at most "
                         f"max_len={config.max_len}; shorten the prompt.")
    if int(prompt_ids.min()) < 0 or int(prompt_ids.max()) >= config.vocab_size:
        raise ValueError(f"prompt_ids must be token ids from 0 to {config.vocab_size - 1}.")


def generate(model: nn.Module, prompt_ids: torch.Tensor, max_new_tokens: int, *, temperature: float = 0.0,
             top_k: int | None = None, top_p: float | None = None, generator: torch.Generator | None = None,
             eos_token_id: int | None = None, cache: KVCache | None = None) -> Iterator[GenerationStep]:
    """Continue ``prompt_ids`` one token at a time, yielding each step as it is made.

    Args:
        model: a decoder-only model (a :class:`~transformer_core.models.CausalLM`).
        prompt_ids: ``(1, T)`` token ids, at most the model's ``max_len``.
        max_new_tokens: the most tokens to write; fewer when the sequence reaches ``max_len`` or at the end token.
        temperature: 0 is greedy (the likeliest token); above 0 samples, flatter as it grows.
        top_k, top_p: sample only among the ``top_k`` likeliest tokens / the likeliest holding ``top_p``.
        generator: the random numbers of sampling (a seeded ``torch.Generator`` repeats a text).
        eos_token_id: stop after writing this token (its step is still yielded).
        cache: the keys and values of the first ``cache.length`` tokens of ``prompt_ids``, already read (e.g.
            :meth:`KVCache.prefix` of an earlier generation's cache): only the tokens after them are fed. It must
            leave room for the whole sequence; it is filled as the steps run. ``None``: a new cache.

    The arguments are checked at once (``ValueError``); the steps run as the caller iterates, and stopping the
    iteration stops the generation.
    """
    _check_prompt(model, prompt_ids)
    if whole_number("max_new_tokens", max_new_tokens) < 0:
        raise ValueError(f"max_new_tokens={max_new_tokens} must be 0 or more.")
    _check_sampling(temperature, top_k, top_p)
    steps = min(max_new_tokens, model.config.max_len - prompt_ids.size(1))  # every token fits the positions
    cache = _check_cache(model, cache, prompt_ids.size(1), steps)

    def choose(logits: torch.Tensor) -> int:
        return int(choose_next(logits, temperature=temperature, top_k=top_k, top_p=top_p, generator=generator))

    return _steps(model, prompt_ids, steps, choose, eos_token_id, cache)


def _check_cache(model: nn.Module, cache: KVCache | None, start: int, steps: int) -> KVCache:
    """The cache a generation fills: ``cache`` once checked, else a new one for the whole sequence."""
    needed = max(start + steps - 1, 1)  # the last token written is never fed
    if cache is None:
        return KVCache(len(model.blocks), capacity=needed)
    if len(cache.layers) != len(model.blocks):
        raise ValueError(f"The cache has {len(cache.layers)} layers; the model has {len(model.blocks)}.")
    if cache.length >= start:
        raise ValueError(f"The cache already holds {cache.length} tokens; the prompt has {start}: at least one "
                         "prompt token must be left to read.")
    if cache.capacity < needed:
        raise ValueError(f"The cache holds at most {cache.capacity} tokens; this generation needs {needed}.")
    return cache


def _steps(model: nn.Module, prompt_ids: torch.Tensor, steps: int, choose: Callable[[torch.Tensor], int],
           eos_token_id: int | None, cache: KVCache) -> Iterator[GenerationStep]:
    start = prompt_ids.size(1)
    feed = prompt_ids[:, cache.length:]  # (1, T - cached): the tokens the cache does not hold yet
    for step in range(steps):
        with _inference(model):
            x, weights = model.features(feed, need_weights=True, cache=cache)  # (1, t, C), per layer (1, H, t, S)
            logits = model.lm_head(x[0, -1])  # (V,)
            token = choose(logits)
        rows = tuple(w[0, :, -1].clone() for w in weights)  # per layer (H, S): the newest query's row
        yield GenerationStep(token_id=token, logits=logits, attention=rows, position=start + step)
        if token == eos_token_id:
            return
        feed = prompt_ids.new_tensor([[token]])  # (1, 1)


def generate_batch(model: nn.Module, idx: torch.Tensor, max_new_tokens: int, *, temperature: float = 1.0,
                   top_k: int | None = None, generator: torch.Generator | None = None,
                   stop_id: int | None = None) -> torch.Tensor:
    """``idx`` ``(B, T)`` followed by up to ``max_new_tokens`` tokens each, ``(B, T + n)``, with a cache.

    Past ``max_len`` the model reads the last ``max_len`` tokens (a sliding window: the cache is read again from
    that window). With ``stop_id``, it ends once every sequence has written that token.
    """
    max_len = model.config.max_len
    stopped = torch.zeros(idx.size(0), dtype=torch.bool, device=idx.device)
    cache, feed = None, idx
    with _inference(model):
        for step in range(max_new_tokens):
            if cache is None or cache.length + feed.size(1) > max_len:
                feed = idx[:, -max_len:]  # (B, <= L)
                cache = KVCache(len(model.blocks), capacity=min(max_len, feed.size(1) + max_new_tokens - step))
            logits = model.lm_head(model.features(feed, cache=cache)[0][:, -1])  # (B, V)
            feed = choose_next(logits, temperature=temperature, top_k=top_k, generator=generator)[:, None]
            idx = torch.cat([idx, feed], dim=1)
            if stop_id is not None:
                stopped |= feed[:, 0] == stop_id
                if bool(stopped.all()):
                    break
    return idx


def kv_cache_bytes(config: TransformerConfig, tokens: int, dtype: torch.dtype = torch.float32) -> int:
    """Memory of the key/value cache of ``tokens`` tokens: keys and values, every layer, every K/V head.

    ``2 · layers · H_kv · D · tokens · bytes per number``; grouped-query attention shrinks it by ``H / H_kv``.
    """
    return 2 * config.n_layers * config.kv_heads * config.head_dim * tokens * dtype.itemsize
