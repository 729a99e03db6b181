"""Switching heads off in the Attention Lab: which heads, and what the model outputs before and after.

The Lab shows one self-attention stack of one model (random weights, a model trained in this session, or a
pretrained GPT-2 or BERT). A :class:`Subject` ties that model to the learner's text and to a way of reading its
output: GPT-2's next-token distribution, BERT's fill-ins for ``[MASK]``, a trained model's answer and held-out
score, or, for random weights, the output vectors. :func:`compare` reads it with every head on and with the chosen
heads switched off (``transformer_core.interventions``, which never changes the shared model).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn

from explorer.i18n import N_, _, num, percent
from transformer_core.interventions import ablate_heads, attention_stacks, head_importance, head_means

Pair = tuple[int, int]  # (layer, head), 0-based
METRIC_NAMES = {  # the held-out scores of the app's tasks, as a sentence names them
    "accuracy": N_("accuracy"),
    "r2": N_("R²"),
    "val_loss": N_("validation loss"),
}


@dataclass(frozen=True)
class Ranked:
    """A ranked list the model outputs: candidate tokens with probabilities, or named numbers."""

    title: str  # what it is, e.g. "Next token after “mat”"
    labels: tuple[str, ...]  # the candidates (or the outputs' names), in the model's order
    values: tuple[float, ...]  # their probabilities (``probability``) or the numbers themselves
    probability: bool = True  # values are probabilities in [0, 1]


@dataclass(frozen=True)
class Outcome:
    """What the model says about the text, read once."""

    ranked: tuple[Ranked, ...] = ()  # next tokens, fill-ins or predicted numbers
    answer: str = ""  # a decoded answer (an encoder–decoder model's output sequence), if any
    metric: tuple[str, float] | None = None  # the task's held-out score, e.g. ("accuracy", 0.98)
    vectors: np.ndarray | None = field(default=None, repr=False)  # (T, C) final vectors (random weights)


@dataclass(frozen=True)
class Subject:
    """The model the Lab shows, bound to the learner's text."""

    model: nn.Module
    stack: str  # the attention stack the Lab shows, a key of the model's attention dict
    forward: Callable[[nn.Module], Any]  # runs the model on the text (the reference for mean ablation)
    read: Callable[[], Outcome]  # the model's output on the text, under whatever heads are switched off now

    @property
    def shape(self) -> Pair:
        """(layers, heads) of the shown stack."""
        modules = attention_stacks(self.model)[self.stack]
        return len(modules), modules[0].n_heads if modules else 0


@dataclass(frozen=True)
class Comparison:
    """The output with every head on and with the chosen heads off."""

    before: Outcome
    after: Outcome
    heads: tuple[Pair, ...]  # the heads switched off, 0-based
    mode: str  # "zero" or "mean"

    def vector_change(self) -> np.ndarray | None:
        """Per token, how far its final vector moved: ``‖after − before‖ / ‖before‖`` (random weights only)."""
        if self.before.vectors is None or self.after.vectors is None:
            return None
        diff = np.linalg.norm(self.after.vectors - self.before.vectors, axis=-1)
        return diff / np.maximum(np.linalg.norm(self.before.vectors, axis=-1), 1e-12)


def parse_heads(text: str, layers: int, heads: int) -> tuple[list[Pair], list[str]]:
    """Heads written ``"layer.head"`` (1-based, comma-separated, e.g. ``"1.2,3.1"``) -> 0-based pairs.

    Returns the valid pairs (in order, without repeats) and the items that are not heads of a model with
    ``layers`` layers of ``heads`` heads.
    """
    pairs, bad = [], []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        layer, dot, head = item.partition(".")
        ok = dot and layer.isdigit() and head.isdigit() and 1 <= int(layer) <= layers and 1 <= int(head) <= heads
        if not ok:
            bad.append(item)
        elif (int(layer) - 1, int(head) - 1) not in pairs:
            pairs.append((int(layer) - 1, int(head) - 1))
    return pairs, bad


def format_heads(pairs: Sequence[Pair]) -> str:
    """The URL text of 0-based ``pairs``: ``"1.2,3.1"``."""
    return ",".join(f"{layer + 1}.{head + 1}" for layer, head in pairs)


@contextmanager
def switched_off(subject: Subject, heads: Sequence[Pair], mode: str = "zero") -> Iterator[None]:
    """Run the ``with`` block with ``heads`` of the subject's stack switched off (for this thread only).

    In ``"mean"`` mode each head outputs its mean over the positions of the text instead of zeros.
    """
    refs = [(subject.stack, layer, head) for layer, head in heads]
    if not refs:  # nothing to switch off: no means to compute, and the model runs as it is
        yield
        return
    means = head_means(subject.model, subject.forward) if mode == "mean" else None
    with ablate_heads(subject.model, refs, mode=mode, means=means):
        yield


def compare(subject: Subject, heads: Sequence[Pair], mode: str = "zero") -> Comparison:
    """Read ``subject`` with every head on, then with ``heads`` of its stack switched off.

    With no heads to switch off nothing is run, and both outcomes are empty.
    """
    if not heads:
        return Comparison(Outcome(), Outcome(), (), mode)
    before = subject.read()
    with switched_off(subject, heads, mode):
        after = subject.read()
    return Comparison(before, after, tuple(heads), mode)


def top_ranked(logits: torch.Tensor, label: Callable[[int], str], title: str, k: int,
               temperature: float = 1.0) -> Ranked:
    """The ``k`` likeliest ids of ``logits`` ``(V,)`` under ``softmax(logits / temperature)``, labelled."""
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive.")
    probs = torch.softmax(logits.double() / temperature, dim=-1)
    values, ids = probs.topk(min(k, probs.numel()))
    return Ranked(title, tuple(label(int(i)) for i in ids), tuple(float(v) for v in values))


def _significant(x: float, digits: int = 3) -> str:
    """``x`` with ``digits`` significant digits, in the active language's format ("31.2", "0.0297")."""
    text = f"{x:.{digits}g}"
    if "e" in text or not np.isfinite(x):
        return text
    return num(float(text), len(text.partition(".")[2]))


def _percent(p: float) -> str:
    """A probability with three significant digits ("31.2%", "2.97%"), so that small changes show."""
    text = f"{p * 100:.3g}"
    if "e" in text or not np.isfinite(p):
        return text + "%"
    return percent(p, len(text.partition(".")[2]))


def _metric_text(name: str, value: float) -> str:
    return _percent(value) if name == "accuracy" else num(value, 3)


def metric_name(name: str) -> str:
    """A task's held-out score as a sentence names it ("accuracy"; an unknown one with spaces for underscores)."""
    known = METRIC_NAMES.get(name)
    return _(known) if known else name.replace("_", " ")


def describe_change(result: Comparison, tokens: Sequence[str] = ()) -> list[str]:
    """One short sentence per thing the model outputs, before → after, e.g. "Top token: “␣mat” 31% → “␣on” 12%"."""
    if not result.heads:
        return [_("Every head is on: pick heads to switch them off.")]
    before, after = result.before, result.after
    lines = []
    for b, a in zip(before.ranked, after.ranked, strict=True):
        if b.probability and b.labels and a.labels:
            lines.append(_("{title}: top “{before}” {p_before} → “{after}” {p_after}").format(
                title=b.title, before=b.labels[0], p_before=_percent(b.values[0]), after=a.labels[0],
                p_after=_percent(a.values[0])))
        elif b.labels:
            pairs = ", ".join(f"{n} {_significant(x)} → {_significant(y)}"
                              for n, x, y in zip(b.labels, b.values, a.values, strict=True))
            lines.append(f"{b.title}: {pairs}")
    if before.answer or after.answer:
        lines.append(_("Answer on your text: {before} → {after}").format(before=before.answer, after=after.answer))
    if before.metric and after.metric:
        name = before.metric[0]
        lines.append(_("Held-out {metric}: {before} → {after}").format(
            metric=metric_name(name), before=_metric_text(name, before.metric[1]),
            after=_metric_text(name, after.metric[1])))
    change = result.vector_change()
    if change is not None and len(change):
        top = int(np.argmax(change))
        mean = percent(float(change.mean()))
        if len(tokens) == len(change):
            lines.append(_("The final token vectors moved by {mean} on average (most: “{token}”, {most})").format(
                mean=mean, token=tokens[top], most=percent(float(change[top]))))
        else:
            lines.append(_("The final token vectors moved by {mean} on average").format(mean=mean))
    return lines


def text_loss(model: nn.Module, ids: Sequence[int]) -> float:
    """A decoder-only model's mean next-token cross-entropy on ``ids`` (nats): how surprised it is by the text."""
    if len(ids) < 2:
        raise ValueError("the text needs at least two tokens to predict one")
    device = next(model.parameters()).device
    x = torch.tensor([list(ids)], dtype=torch.long, device=device)
    with torch.no_grad():
        logits = model(x)  # (1, T, V)
    return float(torch.nn.functional.cross_entropy(logits[0, :-1].double(), x[0, 1:]))


def score_heads(subject: Subject, ids: Sequence[int], mode: str = "zero",
                progress: Callable[[int, int], None] | None = None) -> np.ndarray:
    """``(layers, heads)``: the loss on the text gained when each head of the shown stack is switched off alone.

    Positive: the model needs the head to predict this text; near zero: the head does not matter here. One forward
    pass per head (144 for GPT-2 small), so a short text scores every head in a few seconds on a CPU.
    """
    layers, heads = subject.shape
    refs = [(subject.stack, layer, head) for layer in range(layers) for head in range(heads)]
    means = head_means(subject.model, subject.forward) if mode == "mean" else None
    maps = head_importance(subject.model, lambda m: text_loss(m, ids), heads=refs, mode=mode, means=means,
                           progress=progress)
    return maps[subject.stack]
