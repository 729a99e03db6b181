"""Branch a writing: at one written token, take another of that step's candidates and write on from there.

The branch is a :class:`~explorer.lab.generation.Writing` of its own: the first writing's tokens before the chosen
step (copied, they are the same), then the chosen candidate in place of the written token, then what the model
writes after it, with the same sampling settings and a fresh sampler seeded alike — so the continuation is exactly
what a new writing from "prompt + tokens before + chosen candidate" would write. It reuses the first writing's
key/value cache: the keys and values of every token before the chosen step are copied out of it
(:meth:`~transformer_core.kv_cache.KVCache.prefix`), so the model reads only the chosen token and the ones after it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import nn

from explorer.i18n import _, pgettext
from explorer.lab.generation import Writing, WrittenToken, token_label
from explorer.lab.generation_exports import steps_csv
from transformer_core.generation import generate


@dataclass(frozen=True)
class Branch:
    """A branch of a writing and where it leaves it."""

    step: int  # the first writing's step (1-based) whose token was replaced
    writing: Writing  # the branch: the same prompt, the same tokens before ``step``, then its own

    def differs(self, first: Writing) -> list[bool]:
        """One flag per token the branch wrote: whether it differs from the first writing's token at that step
        (a token the first writing never reached differs)."""
        theirs = [t.token_id for t in first.written]
        return [i >= len(theirs) or t.token_id != theirs[i] for i, t in enumerate(self.writing.written)]


def _switched(token: WrittenToken, token_id: int, label: str) -> WrittenToken:
    """``token``'s step with ``token_id`` written instead: the same candidates and attention, another chosen."""
    cands = tuple(replace(c, chosen=c.token_id == token_id) for c in token.candidates)
    probability = next(c.probability for c in cands if c.chosen)
    return replace(token, token_id=token_id, token=label, probability=probability, candidates=cands, end=False)


def alternatives(first: Writing, step: int) -> list[int]:
    """The ids ``step`` (1-based) could be branched to: its candidates other than the written one, likeliest first."""
    token = _token_at(first, step)
    return [c.token_id for c in token.candidates if not c.chosen]


def _token_at(first: Writing, step: int) -> WrittenToken:
    if not 1 <= step <= len(first.written):
        raise ValueError(_("Pick a written token: step 1 to {last}, not {step}.").format(last=len(first.written),
                                                                                          step=step))
    return first.written[step - 1]


def branch_writing(model: nn.Module, first: Writing, step: int, token_id: int) -> Branch:
    """A branch of ``first`` that writes ``token_id`` at ``step`` (1-based) and then goes on as ``first`` was set.

    Raises:
        ValueError: for a step that was not written, a token that was not one of its candidates or is the token
            written there, or a writing that no longer holds its key/value cache for that step.
    """
    token = _token_at(first, step)
    ids = [*first.prompt_ids, *(t.token_id for t in first.written[:step - 1])]  # what the model had read
    if token_id == token.token_id:
        raise ValueError(_("That is the token the model wrote; pick another candidate to branch."))
    if int(token_id) not in alternatives(first, step):
        raise ValueError(_("Token {token_id} was not one of step {step}'s candidates.").format(token_id=token_id,
                                                                                              step=step))
    cache = first.cache
    if cache is None or cache.length < len(ids):
        raise ValueError(_("This writing no longer holds what the model read; write again to branch it."))
    label = token_label(first.vocabulary, token_id)
    switched = _switched(token, int(token_id), label)
    written = [*first.written[:step - 1], switched]
    rest = first.max_new_tokens - step  # the branch writes as many tokens in all as the first was asked for
    room = min(rest, model.config.max_len - len(ids) - 1)
    # Keys and values of every token before the chosen one (the chosen token is read anew, at position len(ids)).
    reused = cache.prefix(len(ids), capacity=len(ids) + max(room, 1))
    s = first.sampling
    steps = generate(model, torch.tensor([[*ids, int(token_id)]]), rest, temperature=s.temperature, top_k=s.top_k,
                     top_p=s.top_p, generator=None if s.greedy else s.generator(), eos_token_id=first.end_id,
                     cache=reused)
    ended = first.end_id is not None and token_id == first.end_id
    if ended:
        written[-1] = replace(switched, end=True)
    status = "ended" if ended else "done" if rest <= 0 else "writing"
    branch = Writing(first.prompt_ids, first.prompt_tokens, s, first.max_new_tokens, first.vocabulary,
                     iter(steps) if status == "writing" else None, first.model_name, end_id=first.end_id,
                     written=written, status=status, cache=reused)
    return Branch(step, branch)


def branch_csv(first: Writing, branch: Branch | None) -> str:
    """:func:`~explorer.lab.generation_exports.steps_csv` of the first writing and, after it, of its branch, with a
    first column ``writing`` ("first" or "branch") and ``branched_at`` (the step the branch replaced)."""
    parts = [("first", first)] + ([("branch", branch.writing)] if branch is not None else [])
    at = "" if branch is None else str(branch.step)
    lines = []
    for name, writing in parts:
        head, *rows = steps_csv(writing).splitlines()
        if not lines:
            writing_col, at_col = pgettext("CSV header", "writing"), pgettext("CSV header", "branched_at")
            lines.append(f"{writing_col},{at_col},{head}")
        lines += [f"{name},{at if name == 'branch' else ''},{row}" for row in rows]
    return "\n".join(lines) + "\n"
