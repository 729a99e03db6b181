"""Which of the Lab's models can write, and the Lab's text as that model's prompt: a causal pretrained model (GPT-2,
the Llama family) in its own tokenizer, or a decoder-only model trained in this session in its task's characters."""

from __future__ import annotations

from dataclasses import dataclass

from explorer.i18n import _
from explorer.lab.generation import Characters, Vocabulary, end_token_id
from explorer.lab.text_input import MAX_TOKENS
from explorer.pretrained.lab import encode
from transformer_core.models import CausalLM
from transformer_core.pretrained import Pretrained
from ui.attention.lab_run import trained_input
from ui.common.state import TrainedModel


@dataclass(frozen=True)
class Writer:
    """A model that writes, and the Lab's text as its prompt."""

    model: CausalLM  # only read: a pretrained one is shared by every visitor
    vocabulary: Vocabulary
    prompt_ids: tuple[int, ...]
    name: str  # for captions
    key: str  # tells models apart: a writing is shown only beside the model that wrote it
    end_id: int | None  # the end-of-text token, if the vocabulary has one


def pretrained_writer(pre: Pretrained, text: str) -> Writer | None:
    """A causal pretrained model with its tokenizer; ``None`` for an encoder or a picture model."""
    if not isinstance(pre.model, CausalLM) or pre.tokenizer is None:
        return None
    ids = encode(pre, text, MAX_TOKENS).ids
    return Writer(pre.model, pre.tokenizer, ids, pre.name, f"{pre.name}#{id(pre.model)}",
                  end_token_id(pre.tokenizer.token_to_id))


def trained_writer(entry: TrainedModel, text: str) -> Writer | None:
    """A decoder-only model trained in this session, reading and writing its task's characters; ``None`` for
    another kind of model or a task without a character vocabulary."""
    if not isinstance(entry.model, CausalLM):
        return None
    try:
        lab, _task, vocab = trained_input(entry, text)
    except ValueError:
        return None  # the Lab's views already say why the text does not fit this model
    if not vocab:
        return None
    name = _("{task} (step {step})").format(task=_(entry.task_title) if entry.task_title else "", step=entry.step)
    return Writer(entry.model, Characters(vocab), tuple(lab.ids), name,
                  f"trained:{entry.family}#{id(entry.model)}#{entry.step}", None)


def lab_writer(pre: Pretrained | None, trained: TrainedModel | None, text: str) -> Writer | None:
    """The writer of the model the Lab shows, if it writes."""
    if pre is not None:
        return pretrained_writer(pre, text)
    return trained_writer(trained, text) if trained is not None else None
