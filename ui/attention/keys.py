"""Attention Lab: its session-state keys, the choices they take, and the settings a link carries.

Every key of the lab is declared here, once, so that the controls, the views, the *Beyond attention* lenses and the
tests all name the same string; the key strings are the link's query parameters and must not change. ``URL_PARAMS``
says which settings a shared link holds (with their defaults and what each may take), ``KEPT`` which ones outlive a
visit to another page, and :func:`init_page_state` sets the defaults.
"""

from __future__ import annotations

import streamlit as st

from explorer.heads import head_choices
from explorer.i18n import N_
from explorer.lab.internals import MASK_KINDS
from explorer.lab.text_input import INPUT_KINDS, MAX_TEXT_CHARS
from transformer_core.families import FAMILIES
from ui.attention.beyond.registry import VIEWS as BEYOND_VIEWS
from ui.common.urlstate import UrlParam

TEXT = "attn.text"
KIND = "attn.kind"
D_MODEL = "attn.d_model"
HEADS = "attn.heads"
LAYERS = "attn.layers"
MASK = "attn.mask"
SEED = "attn.seed"
LAYER = "attn.layer"  # selected layer, 1-based
HEAD = "attn.head"  # selected head, 1-based
SOURCE = "attn.source"  # "random", "pretrained" or the family of a trained model
PRETRAINED_MODEL = "attn.pretrained"  # the pretrained model's name
TOP_K = "attn.top_k"  # how many next tokens GPT-2's table lists
TEMPERATURE = "attn.temperature"  # softmax temperature of GPT-2's next-token table
FIND_SEED = "attn.find_seed"  # seed of the repeated random tokens that Find the heads scores
VIEW = "attn.view"  # which view is drawn (only that one is computed)
LINES_SCOPE = "attn.lines_scope"
LINES_FOCUS = "attn.lines_focus"
NUMBERS = "attn.numbers"  # which step's matrix the step-by-step view shows as a table
OFF = "attn.off"  # heads switched off, "layer.head" 1-based and comma-separated, e.g. "1.2,2.1" (the URL form)
OFF_PICK = "attn.off_pick."  # prefix of each layer's head buttons; + the 0-based layer
OFF_KV = "attn.off_pick.kv"  # prefix of each layer's K/V-head buttons (shared K/V heads); + the 0-based layer
OFF_SYNCED = "attn.off_synced"  # OFF as last written from the buttons
OFF_MODE = "attn.off_mode"  # what a switched-off head outputs: "zero" or "mean"
LENS = "attn.lens"  # bool: show the logit lens (decoder-only models)
SIMILARITY_LINES = "attn.similarity_lines"  # the lines a sentence-embedding model compares, one per line
JUMP_TO_HEAD = "attn.jump_to_head"  # bool, once: a Find-the-heads button picked a head; scroll to its view
BEYOND = "attn.beyond"  # the *Beyond attention* view shown, a key of ui.attention.beyond.registry ("" for none)
WHY_TARGET = "attn.why.target"  # *Why this word?*: which output is explained (index into its picker, likeliest first)
WHY_METHOD = "attn.why.method"  # "grad_x_input" or "integrated_gradients"
WHY_STEPS = "attn.why.steps"  # integrated gradients' points along the path
WHY_HEADS = "attn.why.heads"  # bool: the attention row averaged over the layer's heads
FOLLOW_WORDS = "attn.follow.words"  # str: words typed into *Follow a word*, comma-separated
FOLLOW_POS = "attn.follow.pos"  # int: the position *Follow a word* reads, 1-based; 0 = the text's last token
DECIDE_CLEAN = "attn.decide.clean"  # *Where does it decide?*: the clean text (its answer is brought back)
DECIDE_CORRUPT = "attn.decide.corrupt"  # the corrupt text: the clean one with a word changed
DECIDE_WHAT = "attn.decide.what"  # what one patch puts back: "residual" or "heads"
DECIDE_STACK = "attn.decide.stack"  # the encoder–decoder's stack patched: "encoder", "decoder" or "cross"
MAP_WORDS = "attn.map.words"  # the tokens the embedding map places, comma-separated ("" = the model's defaults)
MAP_WORD = "attn.map.word"  # the word followed through several sentences
MAP_SENTENCES = "attn.map.sentences"  # those sentences, one a line
MAP_SENTENCES_DEFAULT = ("We sat on the bank of the river and watched the water.\n"
                         "She went to the bank to borrow some money.\n"
                         "The boat drifted toward the muddy bank.")
MLP_NEURON = "attn.mlp.neuron"  # *The MLP half*: the neuron whose top sentences are shown (-1: the text's top one)
HEAD_SCORES = "attn.head_scores"  # (what was scored, (layers, heads) loss gained): the last *Score every head*
FIXED = "attn.fixed."  # prefix of the read-only widgets that show a trained model's settings
OFF_MODES = {"zero": N_("Zero"), "mean": N_("Its mean over the text")}

D_MODELS = (8, 16, 32, 64, 128)
MAX_LAYERS = 4
# The layer and head a link may name: a pretrained model's, up to GPT-2 XL's 48 layers and 25 heads. The picker
# then settles them to the model that runs (a link's layer 9 on a 2-layer random model becomes layer 2, with a note).
LINK_MAX_LAYERS = 48
LINK_MAX_HEADS = 32
LAB_FAMILIES = tuple(f.name for f in FAMILIES if f.trainable and f.self_attention)  # trained models the lab takes apart
EXAMPLES = {"sentence": "the cat sat on the mat", "protein": "MKTAYIAKQR", "digits": "31415926"}
VIEWS = {"steps": N_("Step by step"), "head": N_("One head"), "grid": N_("All layers × heads"),
         "lines": N_("Token lines")}

URL_PARAMS = (
    UrlParam(TEXT, EXAMPLES["sentence"], max_chars=MAX_TEXT_CHARS),
    UrlParam(KIND, "sentence", choices=INPUT_KINDS),
    UrlParam(D_MODEL, 16, choices=D_MODELS),
    UrlParam(HEADS, 2, choices=tuple(head_choices(max(D_MODELS)))),
    UrlParam(LAYERS, 2, lo=1, hi=MAX_LAYERS),
    UrlParam(MASK, "none", choices=MASK_KINDS),
    UrlParam(SEED, 0, lo=0, hi=9999),
    UrlParam(LAYER, 1, lo=1, hi=LINK_MAX_LAYERS),
    UrlParam(HEAD, 1, lo=1, hi=LINK_MAX_HEADS),
    UrlParam(VIEW, "steps", choices=tuple(VIEWS)),
    UrlParam(SOURCE, "random", choices=("random", "pretrained", *LAB_FAMILIES)),
    UrlParam(PRETRAINED_MODEL, "", max_chars=200),  # the model's name; a name not on the server falls back
    UrlParam(OFF, "", max_chars=2000),  # checked against the model that runs (see ui.attention.head_switch)
    UrlParam(OFF_MODE, "zero", choices=tuple(OFF_MODES)),
    UrlParam(BEYOND, "", choices=("", *(v.key for v in BEYOND_VIEWS))),
    UrlParam(WHY_TARGET, 0, lo=0, hi=99),
    UrlParam(WHY_METHOD, "grad_x_input", choices=("grad_x_input", "integrated_gradients")),
    UrlParam(WHY_STEPS, 32, choices=(16, 32, 64, 128)),
    UrlParam(WHY_HEADS, False),
    UrlParam(FOLLOW_WORDS, "", max_chars=120),
    UrlParam(FOLLOW_POS, 0, lo=0, hi=512),
    UrlParam(DECIDE_CLEAN, "", max_chars=MAX_TEXT_CHARS),
    UrlParam(DECIDE_CORRUPT, "", max_chars=MAX_TEXT_CHARS),
    UrlParam(DECIDE_WHAT, "residual", choices=("residual", "heads")),
    UrlParam(DECIDE_STACK, "encoder", choices=("encoder", "decoder", "cross")),
    UrlParam(MAP_WORDS, "", max_chars=MAX_TEXT_CHARS),
    UrlParam(MAP_WORD, "bank", max_chars=40),
    UrlParam(MAP_SENTENCES, MAP_SENTENCES_DEFAULT, max_chars=MAX_TEXT_CHARS),
    UrlParam(MLP_NEURON, -1, lo=-1, hi=1_000_000),
)
KEPT = (*(p.key for p in URL_PARAMS), LINES_SCOPE, LINES_FOCUS, NUMBERS,  # settings kept for the whole session
        TOP_K, TEMPERATURE, FIND_SEED, LENS)


def init_page_state() -> None:
    """Set this page's defaults (after ``open_page`` has put back the settings of an earlier visit)."""
    for p in URL_PARAMS:
        st.session_state[p.key] = st.session_state.get(p.key, p.default)
    st.session_state.setdefault(TOP_K, 10)
    st.session_state.setdefault(TEMPERATURE, 1.0)
    st.session_state.setdefault(FIND_SEED, 0)
    st.session_state.setdefault(LENS, False)
