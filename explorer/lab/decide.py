"""*Where does it decide?* without Streamlit: two texts made ready for activation patching, their two answers, and
the runs (:mod:`transformer_core.patching`, never re-implemented here).

A :class:`Setup` holds what the library needs for one pair on one model: the token ids of both texts (an
encoder–decoder's ``(source, target)`` pairs), the position whose output is read, the stack patched, the labels
of the patched stream's positions and where the two texts differ. Three kinds of model are read:

- decoder-only models (GPT-2, Llama, Qwen2, a character model trained in the app): the next token after the text;
- BERT-family models: the fill-in for the first ``[MASK]``, which must sit at the same place in both texts;
- the encoder–decoder digit tasks: the first output digit where the two answers differ, with the clean answer up
  to it as the decoder's input for both runs (teacher forcing), so only the source changes.

The model is only read, in evaluation mode without gradients (a trained model's mode is put back).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass

import torch
from torch import nn

from explorer.i18n import N_, _
from explorer.lab.decide_pairs import differing
from transformer_core.models import CausalLM, Seq2SeqTransformer
from transformer_core.patching import (
    LogitAttribution,
    Patching,
    direct_logit_attribution,
    logit_difference,
    patch_heads,
    patch_residual,
)
from transformer_core.readout import readout
from transformer_core.tasks.base import evaluating
from transformer_core.tasks.sequences import BOS, DIGIT0, EOS, PAD

KINDS = ("causal", "masked", "seq2seq")  # how the answer is read: next token, [MASK] fill-in, output digit
WHAT = ("residual", "heads")  # what one patch puts back: the residual stream at (layer, position), or one head
CANDIDATES = 8  # answers offered per text: its likeliest outputs at the position read
REST = N_("rest")  # the part of a logit difference that no head or MLP wrote (embeddings, biases, the norm's shift)



@dataclass(frozen=True)
class Reading:
    """One text as the model reads it."""

    ids: tuple[int, ...]  # token ids
    tokens: tuple[str, ...]  # one label per token


@dataclass(frozen=True)
class Setup:
    """One pair of texts made ready for patching on one model."""

    kind: str  # one of KINDS
    clean: object  # the ids given to the library: (T,) ids, or (source, target) for the encoder–decoder
    corrupt: object
    position: int  # the output position the metric reads (negative counts from the end)
    stack: str | None  # the encoder–decoder's stack patched ("encoder", "decoder" or "cross"), else None
    columns: tuple[str, ...]  # labels of the patched stream's positions (the clean run's tokens)
    marked: tuple[int, ...]  # positions of that stream where the two texts differ
    read_at: str  # where the answer is read, in words (e.g. "after “cabinet”", "at [MASK], position 6")


def _eval(model: nn.Module):
    return evaluating(model) if model.training else nullcontext()


def _reading_kind(model: nn.Module, kind: str) -> None:
    if kind not in KINDS:
        raise ValueError(f"kind={kind!r} is not one of {', '.join(KINDS)}.")
    if kind == "seq2seq" and not isinstance(model, Seq2SeqTransformer):
        raise ValueError(_("Only the encoder–decoder reads its answer digit by digit."))


def prepare(model: nn.Module, kind: str, clean: Reading, corrupt: Reading, *, mask_id: int | None = None,
            stack: str | None = None) -> Setup:
    """The :class:`Setup` of two readings of the same length.

    Raises:
        ValueError: with a message for students: lengths differ, no [MASK] (or not at the same place).
    """
    _reading_kind(model, kind)
    if len(clean.ids) != len(corrupt.ids):
        raise ValueError(_("The first text has {first} tokens and the second {second}: patching swaps position for "
                           "position, so both need the same number of tokens.").format(first=len(clean.ids),
                                                                                       second=len(corrupt.ids)))
    marked = tuple(differing(clean.ids, corrupt.ids))
    if kind == "causal":
        return Setup(kind, clean.ids, corrupt.ids, -1, None, clean.tokens, marked,
                     _("after “{token}”").format(token=clean.tokens[-1]))
    if kind == "masked":
        spots = [i for i, t in enumerate(clean.ids) if t == mask_id]
        if not spots:
            raise ValueError(_("Put [MASK] in both texts: BERT's answer is its fill-in for the masked word."))
        if corrupt.ids[spots[0]] != mask_id:
            raise ValueError(_("[MASK] must be at the same place in both texts."))
        return Setup(kind, clean.ids, corrupt.ids, spots[0], None, clean.tokens, marked,
                     _("at the first [MASK] (position {position})").format(position=spots[0]))
    return _seq2seq(model, clean, corrupt, marked, stack or "encoder")


def _seq2seq(model: Seq2SeqTransformer, clean: Reading, corrupt: Reading, marked: tuple[int, ...],
             stack: str) -> Setup:
    """The digit tasks: both sources with the clean answer up to the first digit where the answers differ."""
    answers = [greedy_answer(model, r.ids) for r in (clean, corrupt)]
    at = next((i for i, (a, b) in enumerate(zip(*answers, strict=False)) if a != b),
              min(len(a) for a in answers))
    at = min(at, model.config.max_len - 1)  # the decoder reads BOS and ``at`` digits
    target = (BOS, *answers[0][:at])
    columns, marks = clean.tokens, marked
    if stack != "encoder":  # the decoder's stream: BOS and the clean answer's digits, the same in both runs
        columns, marks = tuple(digit_label(i) for i in target), ()
    return Setup("seq2seq", (clean.ids, target), (corrupt.ids, target), -1, stack, tuple(columns), marks,
                 _("at output digit {digit}").format(digit=at + 1))


def digit_label(i: int) -> str:
    """A digit task's token id as text: the digit, or PAD, BOS, EOS."""
    return {PAD: "PAD", BOS: "BOS", EOS: "EOS"}.get(i, str(i - DIGIT0))


def greedy_answer(model: Seq2SeqTransformer, source: Sequence[int]) -> tuple[int, ...]:
    """The model's own answer to ``source`` (token ids, EOS and what follows cut)."""
    src = torch.tensor([list(source)], dtype=torch.long, device=next(model.parameters()).device)
    with _eval(model), torch.no_grad():
        out = model.greedy_decode(src, bos_id=BOS, max_new_tokens=model.config.max_len - 1, eos_id=EOS)[0, 1:]
    ids = out.tolist()
    return tuple(ids[:ids.index(EOS)] if EOS in ids else ids)


def outputs(model: nn.Module, ids, position: int) -> torch.Tensor:
    """The model's output logits ``(V,)`` at ``position`` for one text (or source–target pair)."""
    with _eval(model), torch.no_grad():
        return readout(model, ids).outputs(1, position)[0].double()


def candidates(model: nn.Module, setup: Setup, k: int = CANDIDATES) -> tuple[list[int], list[int]]:
    """The ``k`` likeliest outputs at the position read, on the clean text and on the corrupt one."""
    tops = []
    for ids in (setup.clean, setup.corrupt):
        logits = outputs(model, ids, setup.position)
        tops.append(logits.topk(min(k, logits.numel())).indices.tolist())
    return tops[0], tops[1]


def default_answers(clean_top: Sequence[int], corrupt_top: Sequence[int]) -> tuple[int, int, bool]:
    """The model's top answer on each text; when both are the same, the clean text's second choice is the other.

    Returns:
        ``(answer, other, same)``, ``same`` telling that the two texts' top answers agree.
    """
    answer, other = clean_top[0], corrupt_top[0]
    if other != answer:
        return answer, other, False
    return answer, next((c for c in (*clean_top[1:], *corrupt_top[1:]) if c != answer), answer), True


def run_patching(model: nn.Module, setup: Setup, answer: int, other: int, what: str,
                 progress: Callable[[int, int], None] | None = None) -> Patching:
    """Patch every (layer, position) of the residual stream, or every head, from the clean run into the corrupt
    one, with ``logit[answer] - logit[other]`` as the metric; ``progress(done, layers)`` after each layer."""
    if what not in WHAT:
        raise ValueError(f"what={what!r} is not one of {', '.join(WHAT)}.")
    metric = logit_difference(answer, other)
    stack = setup.stack
    if what == "residual" and stack == "cross":
        stack = "decoder"  # the cross-attention heads sit in the decoder's blocks: its stream is the one patched
    patch = patch_residual if what == "residual" else patch_heads
    with _eval(model):
        return patch(model, setup.clean, setup.corrupt, metric, position=setup.position, stack=stack,
                     progress=progress)


def attribution(model: nn.Module, setup: Setup, answer: int, other: int) -> LogitAttribution | str:
    """Direct logit attribution of ``answer`` against ``other`` on the clean text, or why the model has none."""
    if not isinstance(model, CausalLM):
        if setup.kind == "masked":
            return _("Direct logit attribution splits the answer of a decoder-only model whose blocks add into one "
                     "stream read through one final norm; BERT reads its answer through a norm after each block, so "
                     "it is not split here.")
        return _("Direct logit attribution splits the answer of a decoder-only model whose blocks add into one "
                 "stream read through one final norm; the encoder–decoder's answer also depends on the decoder's own "
                 "blocks and cross-attention, so it is not split here.")
    try:
        with _eval(model):
            return direct_logit_attribution(model, setup.clean, answer, other, position=setup.position)
    except ValueError as err:
        return _("Direct logit attribution does not apply to this model: {error}").format(error=err)


def attribution_rows(dla: LogitAttribution) -> list[tuple[str, int | None, int | None, float]]:
    """The parts of a logit difference in model order: ``(part, layer, head, value)``, 1-based; the rest last."""
    rows: list[tuple[str, int | None, int | None, float]] = []
    for layer in range(dla.mlps.size):
        rows += [(f"L{layer + 1} H{h + 1}", layer + 1, h + 1, float(v)) for h, v in enumerate(dla.heads[layer])]
        rows.append((f"L{layer + 1} MLP", layer + 1, None, float(dla.mlps[layer])))
    rows.append((REST, None, None, float(dla.rest)))
    return rows


def attribution_csv(dla: LogitAttribution) -> str:
    """The parts as CSV (full precision), with the model's own logit difference as the last line."""
    lines = [",".join((_("part"), _("layer"), _("head"), _("value")))]
    for part, layer, head, value in attribution_rows(dla):
        part = _(part) if part == REST else part
        lines.append(f"{part},{'' if layer is None else layer},{'' if head is None else head},{value!r}")
    total = _("total")
    lines.append(f"{total},,,{float(dla.total)!r}")
    return "\n".join(lines) + "\n"
