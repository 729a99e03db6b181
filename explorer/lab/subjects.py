"""The Attention Lab's three kinds of model as :class:`~explorer.lab.head_switch.Subject` s: what each outputs.

- a pretrained decoder (GPT-2, a Llama-family model): its next-token distribution after the text; BERT: its
  fill-ins for each ``[MASK]``;
- a model trained in this session: its answer on the text (an encoder–decoder model's output digits, a
  decoder-only model's next characters, a regressor's numbers) and its task's held-out score;
- random weights: the final vectors of every token (there is no prediction to read).

Every model is only read (under ``torch.no_grad()``); a trained model is evaluated in eval mode and put back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from torch import nn

from explorer.i18n import _
from explorer.lab.head_switch import Outcome, Ranked, Subject, top_ranked
from explorer.lab.internals import build_lab_encoder, lab_outputs
from explorer.lab.text_input import LabInput, pad_input, padded_length, tokenize
from explorer.pretrained.lab import CAUSAL_FAMILIES, Guess, PretrainedInput, mask_fills, next_tokens
from transformer_core.config import TransformerConfig
from transformer_core.interventions import attention_stacks
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.pretrained import Pretrained
from transformer_core.tasks.base import evaluating
from transformer_core.tasks.sequences import BOS, EOS, SequenceTask, digits_text

NEXT_K = 5  # candidates a trained decoder-only model's next-character list shows


def _ranked(title: str, guesses: list[Guess]) -> Ranked:
    return Ranked(title, tuple(g.token for g in guesses), tuple(g.probability for g in guesses))


def pretrained_subject(pre: Pretrained, inp: PretrainedInput, *, k: int = 10, temperature: float = 1.0) -> Subject:
    """A pretrained decoder (next tokens, ``softmax(logits / temperature)``) or BERT (fill-ins) on ``inp``."""
    ids = torch.tensor([inp.ids])

    def read() -> Outcome:
        if pre.family in CAUSAL_FAMILIES:
            guesses = next_tokens(pre, inp, k=k, temperature=temperature)
            return Outcome(ranked=(_ranked(_("Next token after “{token}”").format(token=inp.tokens[-1]), guesses),))
        fills = mask_fills(pre, inp)
        return Outcome(ranked=tuple(_ranked(_("Fill-ins for position {position}").format(position=i), g)
                                    for i, g in fills))

    return Subject(pre.model, next(iter(attention_stacks(pre.model))), lambda m: m(ids), read)


def token_labeller(vocab: dict[str, int]) -> Callable[[int], str]:
    names = {i: ("␣" if ch == " " else "↵" if ch == "\n" else ch) for ch, i in vocab.items()}
    return lambda i: names.get(i, f"#{i}")


def trained_subject(model: nn.Module, task: object, ids: Sequence[int], vocab: dict[str, int]) -> Subject:
    """A model trained in this session on the text's ids (its task's characters), and its task's held-out score.

    The Lab shows an encoder–decoder model's encoder, so that is the stack whose heads can be switched off.
    """
    src = torch.tensor([list(ids)], dtype=torch.long, device=next(model.parameters()).device)
    label = token_labeller(vocab)

    def read() -> Outcome:
        with evaluating(model):
            answer, ranked = _answer(model, task, src, label)
            metrics = task.evaluate(model, seed=0)
        name = task.metric_name
        return Outcome(ranked=ranked, answer=answer, metric=(name, float(metrics[name])))

    forward = (lambda m: m.encode(src)) if isinstance(model, Seq2SeqTransformer) else (lambda m: m(src))
    return Subject(model, next(iter(attention_stacks(model))), forward, read)


def _answer(model: nn.Module, task: object, src: torch.Tensor, label) -> tuple[str, tuple[Ranked, ...]]:
    """The model's own output on ``src``: decoded digits, the next characters, or the predicted numbers."""
    if isinstance(model, Seq2SeqTransformer) and isinstance(task, SequenceTask):
        steps = min(src.size(1) + 1, model.config.max_len - 1)
        out = model.greedy_decode(src, bos_id=BOS, max_new_tokens=steps, eos_id=EOS)
        return digits_text(out[0, 1:]) or _("(nothing)"), ()
    if isinstance(model, CausalLM):
        title = _("Next character after “{token}”").format(token=label(int(src[0, -1])))
        return "", (top_ranked(model(src)[0, -1], label, title, NEXT_K),)
    if isinstance(model, SequenceRegressor):
        values = model(src)[0].double().tolist()
        names = tuple(_("output {n}").format(n=i + 1) for i in range(len(values)))
        return "", (Ranked(_("Predicted values"), names, tuple(values), probability=False),)

    return "", ()


def random_lab(text: str, kind: str, *, d_model: int, heads: int, layers: int, mask: str,
               seed: int) -> tuple[LabInput, TransformerConfig, nn.Module | None]:
    """The Lab's random encoder and the text it reads: the tokens (padded for the padding mask), the model's
    configuration, and the model, whose weights depend only on ``seed`` (``None`` when there is no token)."""
    lab = tokenize(text, kind)
    if mask == "padding" and not lab.empty:
        lab = pad_input(lab, padded_length(len(lab.tokens)))
    config = TransformerConfig(vocab_size=lab.vocab_size, max_len=64, d_model=d_model, n_heads=heads,
                               n_layers=layers, d_ff=4 * d_model, pad_id=0)
    return lab, config, None if lab.empty else build_lab_encoder(config, seed)


def random_subject(model: nn.Module, lab: LabInput, mask: str) -> Subject:
    """The Lab's random encoder on ``lab`` with its mask ("none", "causal" or "padding"); its output is the final
    vector of every token."""
    valid = lab.valid if mask == "padding" else None

    def forward(m: nn.Module) -> torch.Tensor:
        return lab_outputs(m, lab.ids, mask, valid)  # (T, C)

    def read() -> Outcome:
        return Outcome(vectors=np.asarray(forward(model).float().numpy()))

    return Subject(model, "encoder", forward, read)
