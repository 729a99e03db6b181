"""A causal language model writing from a prompt, one token at a time, kept as plain records a page can draw.

:class:`Writing` wraps the steps of :func:`transformer_core.generation.generate` (or any iterator of steps with
its fields): each :meth:`Writing.advance` takes one new token and keeps what the page shows of it, as a
:class:`WrittenToken` — its label, its probability, the top candidates of that step and every layer's attention
row of the token the model had just read. The records are NumPy arrays and strings; a finished writing also keeps
its key/value cache (a few megabytes for GPT-2 small), so a branch from one of its tokens reads only new tokens
(:mod:`explorer.lab.generation_branch`).

The probabilities shown are the ones the token was drawn from: greedy decoding shows ``softmax(logits)``;
sampling shows ``softmax(logits / temperature)`` over the tokens top-k and top-p keep (:meth:`Sampling.distribution`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import torch
from torch import nn

from explorer.i18n import N_, _, ngettext, num
from transformer_core.generation import generate, sampling_probs
from transformer_core.kv_cache import KVCache

TOP_CANDIDATES = 5  # candidates kept per step (the chosen token is added when it is not among them)
MAX_NEW_TOKENS = 64  # the most tokens one writing may add
END_TOKENS = ("<|endoftext|>", "</s>", "<|end_of_text|>", "<|im_end|>", "<|eot_id|>")  # end-of-text, by family
SPACE_MARKS = ("Ġ", "▁")  # a leading space in byte-level BPE (GPT-2) and in SentencePiece (Llama) vocabularies
SHOWN_SPACE = "␣"
STATUSES = {"writing": N_("writing…"), "done": N_("wrote every token asked for"), "stopped": N_("stopped"),
            "ended": N_("wrote the end-of-text token"), "full": N_("reached the model's position limit")}


class Vocabulary(Protocol):
    """What a writing needs of a tokenizer (:class:`~transformer_core.pretrained.tokenizer.TextTokenizer` has it)."""

    def id_to_token(self, token_id: int) -> str | None: ...

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str: ...


def token_label(vocabulary: Vocabulary, token_id: int) -> str:
    """How a token is labelled in charts: its string with spaces shown as ␣ (``#id`` when unnamed)."""
    text = vocabulary.id_to_token(int(token_id)) or f"#{int(token_id)}"
    for mark in (*SPACE_MARKS, " "):
        text = text.replace(mark, SHOWN_SPACE)
    return text.replace("\n", "↵")


class Characters:
    """A character model's vocabulary (a model trained in the app on text): one character per id."""

    def __init__(self, table: Mapping[str, int]) -> None:
        self._chars = {int(i): ch for ch, i in table.items()}

    def id_to_token(self, token_id: int) -> str | None:
        """The character of ``token_id``, or ``None``."""
        return self._chars.get(int(token_id))

    def decode(self, ids: list[int], *, skip_special_tokens: bool = True) -> str:
        """The text of ``ids`` (ids without a character are left out)."""
        return "".join(self._chars.get(int(i), "") for i in ids)


def end_token_id(token_to_id: Callable[[str], int | None]) -> int | None:
    """The id of a vocabulary's end-of-text token (GPT-2's ``<|endoftext|>``, Llama's ``</s>`` …), if it has one;
    ``token_to_id`` names a token's id or ``None``."""
    return next((i for i in map(token_to_id, END_TOKENS) if i is not None), None)


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen."""

    temperature: float = 0.0  # 0: greedy (always the likeliest token); above 0: sample from softmax(logits / t)
    top_k: int | None = None  # sample only among the k likeliest tokens (None: all)
    top_p: float | None = None  # sample only among the likeliest tokens whose probabilities add up to p (None: all)
    seed: int = 0  # seed of the sampler: the same seed writes the same text

    def __post_init__(self) -> None:
        if not 0.0 <= self.temperature <= 10.0:
            raise ValueError(f"The temperature must be between 0 (greedy) and 10, not {self.temperature}.")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top-k must keep at least one token, not {self.top_k}.")
        if self.top_p is not None and not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top-p must be above 0 and at most 1, not {self.top_p}.")

    @property
    def greedy(self) -> bool:
        """Whether the likeliest token is always taken."""
        return self.temperature == 0.0

    def describe(self) -> str:
        """In words, e.g. "greedy" or "sampled at temperature 0.8, top-k 40, top-p 0.9, seed 3"."""
        if self.greedy:
            return _("greedy (always the likeliest token)")
        parts = [_("temperature {t}").format(t=num(self.temperature))]
        parts += [_("top-k {k}").format(k=num(self.top_k))] if self.top_k else []
        parts += [_("top-p {p}").format(p=num(self.top_p))] if self.top_p is not None and self.top_p < 1 else []
        return _("sampled at {settings}, seed {seed}").format(settings=", ".join(parts), seed=self.seed)

    def generator(self) -> torch.Generator:
        """A fresh random generator seeded with :attr:`seed`."""
        return torch.Generator().manual_seed(self.seed)

    def distribution(self, logits: torch.Tensor) -> torch.Tensor:
        """The probabilities ``(V,)`` a token is chosen from: ``softmax(logits)`` when greedy (the model's own
        probabilities; the likeliest is taken), else :func:`~transformer_core.generation.sampling_probs`:
        ``softmax(logits / temperature)`` over the tokens that top-k and top-p keep (the others get 0)."""
        z = logits.detach().double().flatten()
        if self.greedy:
            return torch.softmax(z, dim=-1)
        return sampling_probs(z, temperature=self.temperature, top_k=self.top_k, top_p=self.top_p)


@dataclass(frozen=True)
class Candidate:
    """One token the model could have written at a step."""

    token: str  # its label (spaces as ␣)
    probability: float  # its probability in the distribution the token was drawn from
    chosen: bool  # whether it was written
    token_id: int = -1  # its id in the vocabulary (a branch writes it instead)


@dataclass(frozen=True)
class WrittenToken:
    """One new token and what led to it."""

    step: int  # 1 for the first new token
    position: int  # its index in the whole sequence (the prompt's tokens come first)
    token_id: int
    token: str  # its label (spaces as ␣)
    probability: float  # the probability it was drawn with
    candidates: tuple[Candidate, ...]  # the likeliest tokens, most likely first (and the chosen one)
    attention: np.ndarray  # (L, H, position) float32: the read token's attention over every token before this one
    end: bool = False  # the end-of-text token


@dataclass
class Writing:
    """One writing: a prompt, how tokens are chosen, and the tokens written so far.

    Made by :func:`start_writing` (or directly, from any iterator of steps with ``token_id``, ``logits``,
    ``attention`` and ``position``); :meth:`advance` takes the next step until :attr:`finished`.
    """

    prompt_ids: tuple[int, ...]
    prompt_tokens: tuple[str, ...]  # one label per prompt token
    sampling: Sampling
    max_new_tokens: int
    vocabulary: Vocabulary
    steps: Iterator | None  # the steps still to come; None once finished
    model_name: str = ""  # which model wrote (for captions)
    end_id: int | None = None  # the end-of-text token's id, if the vocabulary has one
    written: list[WrittenToken] = field(default_factory=list)
    status: str = "writing"  # a key of STATUSES
    cache: KVCache | None = None  # the keys and values it read, kept after it ends so a branch can reuse them

    @property
    def finished(self) -> bool:
        """Whether no more tokens will come."""
        return self.status != "writing"

    def advance(self) -> WrittenToken | None:
        """Take one more token; ``None`` (and a final status) when the writing has ended."""
        if self.finished or self.steps is None:
            return None
        step = next(self.steps, None)
        if step is None:
            self._finish("done" if len(self.written) >= self.max_new_tokens else "full")
            return None
        token = self._record(step)
        self.written.append(token)
        if token.end:
            self._finish("ended")
        elif len(self.written) >= self.max_new_tokens:
            self._finish("done")
        return token

    def stop(self) -> None:
        """Stop writing: what was written stays."""
        if not self.finished:
            self._finish("stopped")

    def _finish(self, status: str) -> None:
        self.status = status
        steps, self.steps = self.steps, None
        close = getattr(steps, "close", None)
        if close is not None:
            close()  # frees the key/value cache now

    def _record(self, step) -> WrittenToken:
        probs = self.sampling.distribution(step.logits)  # (V,)
        chosen = int(step.token_id)
        values, ids = probs.topk(min(TOP_CANDIDATES, probs.numel()))
        pairs = [(int(i), float(p)) for p, i in zip(values, ids, strict=True)]
        if chosen not in {i for i, _p in pairs}:
            pairs.append((chosen, float(probs[chosen])))
        candidates = tuple(Candidate(token_label(self.vocabulary, i), p, i == chosen, i) for i, p in pairs)
        rows = np.stack([a.detach().float().cpu().numpy() for a in step.attention])  # (L, H, position)
        end = self.end_id is not None and chosen == self.end_id
        return WrittenToken(len(self.written) + 1, int(step.position), chosen, token_label(self.vocabulary, chosen),
                            float(probs[chosen]), candidates, rows, end)

    @property
    def ids(self) -> list[int]:
        """Every token id: the prompt's, then the written ones."""
        return [*self.prompt_ids, *(t.token_id for t in self.written)]

    @property
    def text(self) -> tuple[str, str]:
        """``(prompt, written)``: the prompt as text and what the model wrote after it."""
        prompt = self.vocabulary.decode(list(self.prompt_ids))
        whole = self.vocabulary.decode(self.ids)
        if whole.startswith(prompt):
            return prompt, whole[len(prompt):]
        return prompt, self.vocabulary.decode([t.token_id for t in self.written])

    def describe(self) -> str:
        """One line: how many tokens, how they were chosen, how it ended."""
        tokens = ngettext("{n} of at most {most} new token", "{n} of at most {most} new tokens",
                          self.max_new_tokens).format(n=num(len(self.written)), most=num(self.max_new_tokens))
        return f"{tokens} · {self.sampling.describe()} · {_(STATUSES[self.status])}"


def start_writing(model: nn.Module, prompt_ids: Sequence[int], vocabulary: Vocabulary, sampling: Sampling,
                  max_new_tokens: int, *, end_id: int | None = None, model_name: str = "") -> Writing:
    """A :class:`Writing` of up to ``max_new_tokens`` tokens after ``prompt_ids``, with a key/value cache.

    The model is only read (one loaded copy can serve every visitor).

    Raises:
        ValueError: for an empty prompt, a number of tokens out of range, or a prompt longer than the model reads.
    """
    if not prompt_ids:
        raise ValueError(_("Type a prompt first: the model writes what comes after it."))
    if not 1 <= max_new_tokens <= MAX_NEW_TOKENS:
        raise ValueError(_("Ask for 1 to {most} new tokens, not {n}.").format(most=num(MAX_NEW_TOKENS),
                                                                             n=num(max_new_tokens)))
    limit = model.config.max_len
    if len(prompt_ids) >= limit:
        raise ValueError(_("This model reads at most {limit} tokens and the prompt has {n}: shorten it to leave "
                           "room for new tokens.").format(limit=num(limit), n=num(len(prompt_ids))))
    room = min(max_new_tokens, limit - len(prompt_ids))  # tokens it may write
    cache = KVCache(len(model.blocks), capacity=len(prompt_ids) + room - 1)  # the last token is never read
    steps = generate(model, torch.tensor([list(prompt_ids)]), max_new_tokens, temperature=sampling.temperature,
                     top_k=sampling.top_k, top_p=sampling.top_p,
                     generator=None if sampling.greedy else sampling.generator(), eos_token_id=end_id, cache=cache)
    return Writing(tuple(int(i) for i in prompt_ids), tuple(token_label(vocabulary, i) for i in prompt_ids), sampling,
                   max_new_tokens, vocabulary, iter(steps), model_name, end_id=end_id, cache=cache)
