"""Attention Lab: the controls above the charts, and the settings they leave in session state.

The page draws :func:`input_controls`, :func:`source_control` and :func:`model_controls` (a trained model's own
values are shown read-only), picks the trained model with :func:`trained_entry`, and reads everything back with
:func:`settings`. The keys the widgets write are declared in ``ui.attention.keys``; the data drawn from these
settings comes from ``ui.attention.lab_run``.
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from explorer.heads import MAX_HEADS, head_choices
from explorer.i18n import _, num
from explorer.lab.internals import MASK_KINDS
from explorer.lab.text_input import INPUT_KINDS, MAX_TEXT_CHARS, MAX_TOKENS
from ui.attention.keys import (
    D_MODEL,
    D_MODELS,
    EXAMPLES,
    FIXED,
    HEADS,
    KIND,
    LAYERS,
    MASK,
    MAX_LAYERS,
    SEED,
    SOURCE,
    TEXT,
)
from ui.attention.labels import KIND_LABELS, MASK_LABELS, family_mask
from ui.common import state
from ui.common.urlstate import settle_choice


@dataclass(frozen=True)
class LabSettings:
    """What the learner chose."""

    text: str
    kind: str
    d_model: int
    heads: int
    layers: int
    mask: str
    seed: int
    source: str  # "random" or a trained model's family


def input_controls(trained: state.TrainedModel | None = None, *, pretrained: bool = False) -> tuple[str, str]:
    """The input kind and the text; returns ``(text, kind)``.

    A trained model reads characters of its task, a pretrained one its own subword tokens.
    """
    left, right = st.columns([1, 3])
    kind = st.session_state.get(KIND, "sentence")
    with left:
        if pretrained:
            _fixed(st.selectbox, _("Input"), "kind", _("Subword tokens"),
                   help=_("A pretrained model reads your text in its own tokenizer's subwords (GPT-2: byte-pair "
                          "encoding, BERT: WordPiece). Choose random weights to cut the text into words, amino "
                          "acids or digits."))
        elif trained is None:
            kind = st.selectbox(_("Input"), INPUT_KINDS, format_func=lambda v: _(KIND_LABELS[v]), key=KIND,
                                help=_("How the text is cut into tokens: words and punctuation, one amino acid per "
                                       "token, or one digit per token. Each token becomes one row of X."))
        else:
            _fixed(st.selectbox, _("Input"), "kind", _("Characters of the task"),
                   help=_("The trained {task} model reads your text one character at a time, in the vocabulary "
                          "it was trained with. Choose random weights to cut the text into words, amino acids "
                          "or digits.").format(task=trained.task_title))
    with right:
        text = st.text_input(_("Text"), key=TEXT, max_chars=MAX_TEXT_CHARS, placeholder=EXAMPLES[kind],
                             help=_("The sequence the model reads (at most {n} tokens). Every token attends to "
                                    "the others; the heatmaps show how much.").format(n=num(MAX_TOKENS)))
    return text, kind


def _fixed(widget, label: str, name: str, value: object, **kwargs) -> None:
    """A disabled widget that shows a trained model's setting (its own key: the random model's stays as it is)."""
    key = FIXED + name
    st.session_state[key] = value
    if widget is st.slider:
        widget(label, 1, max(MAX_LAYERS, int(value)), key=key, disabled=True, **kwargs)
    elif widget is st.number_input:
        widget(label, key=key, disabled=True, **kwargs)
    else:
        widget(label, [value], key=key, disabled=True, **kwargs)


def model_controls(*, projector: bool, trained: state.TrainedModel | None = None) -> None:
    """d_model, heads, layers, mask and seed of the random model, or a trained model's own values (read-only)."""
    cols = st.columns([1, 1.7, 1, 1.2, 1] if not projector else 2)
    if trained is not None:
        _trained_controls(trained, cols, projector)
        return
    d_model = int(st.session_state.get(D_MODEL, 16))
    heads = head_choices(d_model)
    settle_choice(HEADS, heads, why=_("the number of heads must divide d_model {d_model} and be at most "
                                      "{max_heads}").format(d_model=d_model, max_heads=MAX_HEADS))
    with cols[0]:
        st.selectbox(_("Heads"), heads, key=HEADS,
                     help=_("Attention heads per layer. Each head gets d_model / heads numbers per token and "
                            "learns its own pattern. Only divisors of d_model up to {max_heads} are offered.")
                     .format(max_heads=MAX_HEADS))
    with cols[1]:
        st.radio(_("Mask"), MASK_KINDS, format_func=lambda v: _(MASK_LABELS[v]), key=MASK, horizontal=True,
                 help=_("Which keys a query may see. Causal: only itself and earlier tokens (GPT). Padding: "
                        "<pad> tokens are appended and hidden from every query (a batch of unequal lengths)."))
    if projector:
        return
    with cols[2]:
        st.selectbox("d_model", D_MODELS, key=D_MODEL,
                     help=_("Width of every token vector. Small widths keep the numbers readable in the cells."))
    with cols[3]:
        st.slider(_("Layers"), 1, MAX_LAYERS, key=LAYERS,
                  help=_("Number of stacked blocks (attention + feed-forward). Each layer reads the previous "
                         "layer's output."))
    with cols[4]:
        st.number_input(_("Seed"), 0, 9999, key=SEED,
                        help=_("Seed of the random weights: the same seed always builds the same model."))


def _trained_controls(entry: state.TrainedModel, cols: list, projector: bool) -> None:
    """The trained model's heads, mask, d_model, layers and training steps, shown read-only."""
    config, why = entry.config, _("Fixed by the trained model; choose random weights above to change it.")
    with cols[0]:
        _fixed(st.selectbox, _("Heads"), "heads", config.n_heads,
               help=_("Attention heads per layer. {why}").format(why=why))
    with cols[1]:
        mask = family_mask(entry.family)
        _fixed(st.radio, _("Mask"), "mask", mask[:1].upper() + mask[1:],
               help=_("Which keys a query may see, as the model was trained. {why}").format(why=why))
    if projector:
        return
    with cols[2]:
        _fixed(st.selectbox, "d_model", "d_model", config.d_model,
               help=_("Width of every token vector. {why}").format(why=why))
    with cols[3]:
        _fixed(st.slider, _("Layers"), "layers", config.n_layers,
               help=_("Number of stacked blocks. {why}").format(why=why))
    with cols[4]:
        _fixed(st.number_input, _("Training steps"), "steps", entry.step,
               help=_("Steps the model was trained on the Live Training page; trained weights have no seed."))


def trained_entry(trained: list[state.TrainedModel]) -> state.TrainedModel | None:
    """The trained model chosen with the Weights control (None: random weights), read before it is drawn."""
    options = ["random", "pretrained", *(e.family for e in trained)]
    settle_choice(SOURCE, options, why=_("no model of that kind was trained in this session (train one on the Live "
                                         "Training page)"))
    return next((e for e in trained if e.family == st.session_state[SOURCE]), None)


def source_control(trained: list[state.TrainedModel]) -> str:
    """Random, pretrained or trained weights; returns ``"random"``, ``"pretrained"`` or a trained model's family."""
    options = ["random", "pretrained", *(e.family for e in trained)]
    titles = {"random": _("Random weights (seed)"), "pretrained": _("Pretrained (GPT-2, Llama, BERT)")}
    titles |= {e.family: _("Trained: {task} (step {step})").format(task=e.task_title, step=num(e.step))
               for e in trained}
    return st.radio(_("Weights"), options, format_func=titles.get, key=SOURCE, horizontal=True,
                    help=_("Random weights show the mechanics; a published model (GPT-2, a Llama-family model, "
                           "BERT) shows what real training on lots of text produced; a model trained on the Live "
                           "Training page shows patterns it learned. Pretrained and trained models bring their own "
                           "size, mask and vocabulary."))


def settings() -> LabSettings:
    """The current settings, from session state (URL values included)."""
    ss = st.session_state
    return LabSettings(text=ss.get(TEXT, EXAMPLES["sentence"]), kind=ss.get(KIND, "sentence"),
                       d_model=int(ss.get(D_MODEL, 16)), heads=int(ss.get(HEADS, 2)), layers=int(ss.get(LAYERS, 2)),
                       mask=ss.get(MASK, "none"), seed=int(ss.get(SEED, 0)), source=ss.get(SOURCE, "random"))
