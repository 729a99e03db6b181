"""*Why this word?*: pick one output of the model the Lab shows — a next-token candidate, a fill-in for [MASK], an
output token of an encoder–decoder, a regressor's number — and see which input tokens moved it, beside the
attention row of the token that produced it (:mod:`ui.attention.beyond.why_panel`)."""

from __future__ import annotations

import streamlit as st

from explorer.i18n import _, language
from explorer.lab.subjects import token_labeller
from explorer.lab.why_word import (
    Question,
    fill_in_question,
    next_token_question,
    regressor_question,
    seq2seq_question,
)
from explorer.pretrained.lab import shown_token
from transformer_core.bert import BertEncoder
from transformer_core.models import CausalLM, Seq2SeqTransformer, SequenceRegressor
from transformer_core.tasks.sequences import BOS, EOS
from ui.attention.beyond.context import LensContext
from ui.attention.beyond.why_panel import why_panel
from ui.attention.keys import WHY_HEADS, WHY_METHOD, WHY_STEPS, WHY_TARGET
from ui.attention.lab_run import trained_input

QUESTION = "attn.why.question"  # (what it depends on, Question): the outputs offered for the text shown


def _mask_id(ctx: LensContext) -> int | None:
    tokenizer = ctx.pre.tokenizer if ctx.pre is not None else None
    mask = tokenizer.mask_token if tokenizer is not None else None
    return tokenizer.token_to_id(mask) if mask else None


def offered(ctx: LensContext) -> str | None:
    """None when the shown model has an output to explain; else why not, and what to pick instead."""
    model = ctx.model
    if ctx.pre is None and ctx.trained is None:
        return _("Random weights predict nothing, so there is no word to explain. Under *Weights*, pick a pretrained "
                 "model (GPT-2, a Llama-family model, BERT) or a model you trained on the Live Training page.")
    if isinstance(model, BertEncoder):
        if getattr(model, "head", None) is None:
            return _("{model} embeds sentences and predicts no token, so there is no word to explain. Pick GPT-2, a "
                     "Llama-family model or a BERT with its fill-in head.").format(
                model=ctx.pre.name if ctx.pre else _("This model"))
        if _mask_id(ctx) not in ctx.shown.ids:
            return _("BERT's output is its fill-in for a [MASK]: put [MASK] in your text (e.g. “the cat sat on the "
                     "[MASK]”) and this lens explains one of its fill-ins.")
        return None
    if isinstance(model, CausalLM | Seq2SeqTransformer | SequenceRegressor):
        return None
    return _("This lens does not read a {model}; pick GPT-2, a Llama-family model, BERT or a trained "
             "model.").format(model=type(model).__name__)


def _build(ctx: LensContext) -> Question:
    model, ids, tokens = ctx.model, ctx.shown.ids, ctx.shown.tokens
    if isinstance(model, BertEncoder):
        return fill_in_question(model, ids, tokens, _mask_id(ctx),
                                lambda i: shown_token(ctx.pre.tokenizer.id_to_token(i) or f"#{i}"))
    if isinstance(model, CausalLM):
        return next_token_question(model, ids, tokens, ctx.shown.label)
    if isinstance(model, SequenceRegressor):
        return regressor_question(model, ids, tokens)
    _inp, _task, vocab = trained_input(ctx.trained, ctx.text)
    return seq2seq_question(model, ids, tokens, token_labeller(vocab), bos=BOS, eos=EOS)


def question(ctx: LensContext) -> Question:
    """The outputs offered for the text shown, built once per model and text in this session."""
    depends = (id(ctx.model), getattr(ctx.pre, "name", None), ctx.shown.ids, getattr(ctx.trained, "step", None),
               language())  # its labels are sentences in the reader's language
    held = st.session_state.get(QUESTION)
    if held is None or held[0] != depends:
        held = (depends, _build(ctx))
        st.session_state[QUESTION] = held
    return held[1]


def draw(ctx: LensContext) -> None:
    """The output picker, then the attribution beside the attention row."""
    q = question(ctx)
    if not q.choices:
        st.info(_("The model gave no output to explain on this text (its answer is empty)."), icon="🕳️")
        return
    n = len(q.choices)
    st.session_state[WHY_TARGET] = max(0, min(int(st.session_state.get(WHY_TARGET, 0)), n - 1))
    pick = st.selectbox(q.title, range(n), format_func=lambda i: q.choices[i].label, key=WHY_TARGET,
                        help=_("The output explained: its logit (a number, for a regressor) is traced back to the "
                               "input tokens."))

    why_panel(ctx.model, q.choices[pick], ctx.layer, ctx.head, key="attn.why",
              model_key=(id(ctx.model), getattr(ctx.pre, "name", None), getattr(ctx.trained, "step", None)),
              method_key=WHY_METHOD, steps_key=WHY_STEPS, heads_key=WHY_HEADS)
