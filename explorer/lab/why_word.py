"""*Why this word?*: which input tokens moved one output of a model, beside where that output's token looked.

A :class:`Question` lists the outputs a learner can ask about — a decoder's likeliest next tokens, BERT's fill-ins
for a ``[MASK]``, each output token of an encoder–decoder, each number of a regressor, a token a model wrote — each
as an :class:`Explained`: the input :func:`~transformer_core.attribution.token_attributions` reads, the token whose
logit (or output) is explained, a label per attributed token, and the attention row of the position that produces
the output, in every layer and head, over the same tokens. :func:`explain` computes the attributions;
:func:`disagreement` says in one sentence where they and the attention row differ. The models are only read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from explorer.i18n import _, ngettext, num, percent
from transformer_core.attribution import Attribution, token_attributions
from transformer_core.bert import BertEncoder
from transformer_core.models import Seq2SeqTransformer, SequenceRegressor
from transformer_core.tasks.base import evaluating

TOP = 5  # candidates offered per output position
Label = Callable[[int], str]  # names a token id


@dataclass(frozen=True)
class Explained:
    """One output of a model on one input, and the attention row that belongs to it."""

    label: str  # how the picker names it, e.g. "“␣mat” (31%)"
    token: str  # the explained token (or output), as the sentence names it
    ids: Any  # the model's input as token_attributions reads it: ids (T,) or (source ids, target ids)
    target: int  # the token id (an output index for a regressor) whose logit is explained
    position: int  # the output position read (-1: the last)
    tokens: tuple[str, ...]  # one label per attributed value: the source's tokens, then the target's (enc–dec)
    n_source: int  # encoder–decoder: how many of ``tokens`` are source tokens; else 0
    attention: np.ndarray  # (L, H, N): the reading position's attention over ``tokens`` in each layer and head
    reader: str  # whose attention row that is, in words

    def row(self, layer: int, head: int | None) -> tuple[np.ndarray, str]:
        """The attention row at ``layer`` (clipped to the model's) and ``head`` (None: averaged over heads), and
        which it is in words."""
        at = max(0, min(layer, self.attention.shape[0] - 1))
        if head is None:
            n = self.attention.shape[1]
            return self.attention[at].mean(axis=0), ngettext(
                "layer {layer}, averaged over its {n} head", "layer {layer}, averaged over its {n} heads", n
            ).format(layer=at + 1, n=n)
        h = max(0, min(head, self.attention.shape[1] - 1))
        return self.attention[at, h], _("layer {layer}, head {head}").format(layer=at + 1, head=h + 1)


@dataclass(frozen=True)
class Question:
    """What a learner can ask about on one input: the outputs, likeliest or first first."""

    title: str  # e.g. "Next token after “mat”"
    choices: tuple[Explained, ...]


def _percent(p: float) -> str:
    return percent(p, 0) if p >= 0.01 else percent(p, 1) if p >= 0.001 else "<" + percent(0.001, 1)


def _rows(attention: dict, name: str, position: int) -> np.ndarray:
    """``(L, H, S)``: the row of ``position`` in every layer's weights of ``attention[name]`` (batch 1)."""
    return torch.stack([w[0, :, position] for w in attention[name]]).float().cpu().numpy()


def next_token_question(model: nn.Module, ids: Sequence[int], tokens: Sequence[str], label: Label,
                        k: int = TOP) -> Question:
    """A decoder-only model's ``k`` likeliest next tokens after ``ids``; the attention row is the last token's."""
    with evaluating(model):
        logits, attention = model.forward_with_attention(torch.tensor([list(ids)]))  # (1, T, V)
    probs = torch.softmax(logits[0, -1].double(), dim=-1)
    rows = _rows(attention, "decoder", -1)
    reader = _("“{token}”, the last token (its output predicts the next one)").format(token=tokens[-1])
    values, top = probs.topk(min(k, probs.numel()))
    choices = tuple(Explained(f"“{label(int(i))}” ({_percent(float(p))})", label(int(i)), tuple(ids), int(i), -1,
                              tuple(tokens), 0, rows, reader) for p, i in zip(values, top, strict=True))
    return Question(_("Next token after “{token}”").format(token=tokens[-1]), choices)


def fill_in_question(model: BertEncoder, ids: Sequence[int], tokens: Sequence[str], mask_id: int, label: Label,
                     k: int = TOP) -> Question | None:
    """BERT's ``k`` best fill-ins for each ``[MASK]`` of ``ids`` (None without one); the row is the mask's own."""
    spots = [i for i, t in enumerate(ids) if t == mask_id]
    if not spots or getattr(model, "head", None) is None:
        return None
    with evaluating(model):
        logits, attention = model.forward_with_attention(torch.tensor([list(ids)]))  # (1, T, V)
    choices = []
    for p in spots:
        probs = torch.softmax(logits[0, p].double(), dim=-1)
        rows = _rows(attention, "encoder", p)
        many = len(spots) > 1
        values, top = probs.topk(min(k, probs.numel()))
        reader = _("the [MASK] at position {position} (its output is the fill-in)").format(position=p)
        for pr, i in zip(values, top, strict=True):
            name, share = label(int(i)), _percent(float(pr))
            shown = (_("position {position}: “{token}” ({share})").format(position=p, token=name, share=share) if many
                     else _("“{token}” ({share})").format(token=name, share=share))
            choices.append(Explained(shown, name, tuple(ids), int(i), p, tuple(tokens), 0, rows, reader))
    return Question(_("Fill-in for [MASK]"), tuple(choices))


def seq2seq_question(model: Seq2SeqTransformer, src: Sequence[int], tokens: Sequence[str], label: Label, *,
                     bos: int, eos: int | None) -> Question:
    """Each output token of an encoder–decoder's greedy answer: its logit, given the source and the answer before
    it, over the source tokens and the target tokens (BOS first). The attention rows are the decoder position's
    cross-attention over the source and its self-attention over the target."""
    source = torch.tensor([list(src)])
    steps = min(len(src) + 1, model.config.max_len - 1)
    with evaluating(model):
        answer = model.greedy_decode(source, bos_id=bos, max_new_tokens=steps, eos_id=eos)[0, 1:].tolist()
    if eos is not None and eos in answer:
        answer = answer[:answer.index(eos) + 1]  # the end token is an answer too; what follows it is filler
    names = [("<end>" if t == eos else label(t)) for t in answer]
    choices = []
    for n, (t, name) in enumerate(zip(answer, names, strict=True)):
        tgt = [bos, *answer[:n]]
        with evaluating(model):
            _out, attention = model.forward_with_attention(source, torch.tensor([tgt]))
        rows = np.concatenate([_rows(attention, "cross", -1), _rows(attention, "decoder", -1)], axis=-1)
        choices.append(Explained(_("output token {n}: “{token}”").format(n=n + 1, token=name), name,
                                 (tuple(src), tuple(tgt)), int(t), -1,
                                 (*tokens, "<start>", *names[:n]), len(src), rows,
                                 _("the decoder's position {position} (it writes output token {n}): cross-attention "
                                   "over the source, self-attention over the target").format(position=n, n=n + 1)))
    return Question(_("Output token of the answer"), tuple(choices))


def regressor_question(model: SequenceRegressor, ids: Sequence[int], tokens: Sequence[str]) -> Question:
    """Each number a regressor predicts; the row is the CLS token's (``pool="cls"``) or every token's, averaged
    (``pool="mean"``: the output averages every token's final vector)."""
    with evaluating(model):
        out, attention = model.forward_with_attention(torch.tensor([list(ids)]))  # (1, outputs)
    weights = torch.stack([w[0] for w in attention["encoder"]]).float().cpu().numpy()  # (L, H, S', S')
    if model.pool == "cls":
        rows, reader = weights[:, :, 0, 1:], _("the CLS token (the output reads it); its weight on itself is left out")
    else:
        rows, reader = weights.mean(axis=2), _("every token, averaged (the output averages every token's vector)")
    choices = tuple(Explained(_("output {n} = {value}").format(n=i + 1, value=num(v, 3)),
                              _("output {n}").format(n=i + 1), tuple(ids), i, -1, tuple(tokens), 0,
                              rows, reader) for i, v in enumerate(out[0].double().tolist()))
    return Question(_("Predicted number"), choices)


def written_token(ids: Sequence[int], position: int, token_id: int, token: str, tokens: Sequence[str],
                  attention: np.ndarray) -> Explained:
    """A token a model wrote at ``position`` of ``ids``: its logit given the text before it (``ids[:position]``);
    ``attention`` ``(L, H, position)`` is the row of the token read just before it."""
    before = tuple(ids[:position])
    if not before:
        raise ValueError("A written token needs text before it.")
    reader = _("“{token}”, the token read just before it").format(token=tokens[position - 1])

    return Explained(f"“{token}”", token, before, int(token_id), -1, tuple(tokens[:position]), 0,
                     np.asarray(attention, dtype=np.float32), reader)


def explain(model: nn.Module, e: Explained, *, method: str = "grad_x_input", steps: int = 32,
            progress: Callable[[int, int], None] | None = None, batch_points: int | None = None) -> Attribution:
    """:func:`~transformer_core.attribution.token_attributions` of ``e`` (the model in eval mode meanwhile)."""
    was_training = model.training
    model.eval()
    try:
        return token_attributions(model, e.ids, e.target, position=e.position, method=method, steps=steps,
                                  progress=progress, batch_points=batch_points)
    finally:
        model.train(was_training)
