"""Attention Lab: session-state keys, URL settings, controls and the data the page draws.

The page draws the controls (:func:`input_controls`, :func:`source_control`, :func:`model_controls`), reads them
with :func:`settings`, gets a :class:`LabRun` from :func:`run_random` or :func:`run_trained` (every intermediate of
every layer as NumPy arrays, computed by ``explorer.lab.internals``), and draws it with ``ui.attention.charts``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import streamlit as st
import torch

from explorer.heads import MAX_HEADS, head_choices
from explorer.i18n import N_, _, num
from explorer.lab.block_steps import MLPSteps, walk_blocks
from explorer.lab.internals import MASK_KINDS, AttentionSteps, lab_stack, trained_stack
from explorer.lab.kv_groups import kv_heads_of
from explorer.lab.subjects import random_lab
from explorer.lab.text_input import INPUT_KINDS, MAX_TOKENS, LabInput, encode_for_task, task_vocabulary
from transformer_core import positional
from transformer_core.families import FAMILIES, family
from ui.attention.beyond.registry import VIEWS as BEYOND_VIEWS
from ui.common import state
from ui.common.urlstate import UrlParam, settle_choice

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
OFF_MODES = {"zero": N_("Zero"), "mean": N_("Its mean over the text")}

D_MODELS = (8, 16, 32, 64, 128)
MAX_LAYERS = 4
# The layer and head a link may name: a pretrained model's, up to GPT-2 XL's 48 layers and 25 heads. The picker
# then settles them to the model that runs (a link's layer 9 on a 2-layer random model becomes layer 2, with a note).
LINK_MAX_LAYERS = 48
LINK_MAX_HEADS = 32
LAB_FAMILIES = tuple(f.name for f in FAMILIES if f.trainable and f.self_attention)  # trained models the lab takes apart
EXAMPLES = {"sentence": "the cat sat on the mat", "protein": "MKTAYIAKQR", "digits": "31415926"}
KIND_LABELS = {"sentence": N_("Sentence (words)"), "protein": N_("Amino acids"), "digits": N_("Digits")}
MASK_LABELS = {"none": N_("None"), "causal": N_("Causal"), "padding": N_("Padding")}
VIEWS = {"steps": N_("Step by step"), "head": N_("One head"), "grid": N_("All layers × heads"),
         "lines": N_("Token lines")}
# How a LabRun's mask reads in a sentence: the random model's mask kinds, and the mask of each trained family (the
# core's ``ModelFamily.mask_title`` stays English; this table, keyed by the family's id, translates it).
MASK_WORDS = {"none": N_("none"), "causal": N_("causal"), "padding": N_("padding")}
FAMILY_MASKS = {"regression": N_("padding (encoder-only model)"), "causal_lm": N_("causal (decoder-only model)"),
                "seq2seq": N_("none (the encoder of the model)"), "masked_lm": N_("none (every position, one segment)")}
# A pretrained model's mask (``ui.attention.pretrained.MASKS``), its model's name filled in
PRETRAINED_MASKS = {"causal": N_("causal ({model} reads left to right)"), "none": N_("none ({model} reads both ways)")}
_PRETRAINED_MASK = re.compile(r"(causal|none) \((.+) reads (?:left to right|both ways)\)")


def family_mask(name: str) -> str:
    """The mask of trained family ``name``, in the session's language (the core's English title when unknown)."""
    title = family(name).mask_title
    return _(FAMILY_MASKS[name]) if name in FAMILY_MASKS else title


def shown_mask(mask: str) -> str:
    """A LabRun's mask (kept in English, since runs are cached for every visitor) in the session's language."""
    if mask in MASK_WORDS:
        return _(MASK_WORDS[mask])
    if mask in FAMILY_MASKS.values():
        return _(mask)
    found = _PRETRAINED_MASK.fullmatch(mask)
    if found:
        return _(PRETRAINED_MASKS[found.group(1)]).format(model=found.group(2))
    return mask
FIXED = "attn.fixed."  # prefix of the read-only widgets that show a trained model's settings

URL_PARAMS = (
    UrlParam(TEXT, EXAMPLES["sentence"], max_chars=400),
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
    UrlParam(DECIDE_CLEAN, "", max_chars=400),
    UrlParam(DECIDE_CORRUPT, "", max_chars=400),
    UrlParam(DECIDE_WHAT, "residual", choices=("residual", "heads")),
    UrlParam(DECIDE_STACK, "encoder", choices=("encoder", "decoder", "cross")),
    UrlParam(MAP_WORDS, "", max_chars=300),
    UrlParam(MAP_WORD, "bank", max_chars=40),
    UrlParam(MAP_SENTENCES, MAP_SENTENCES_DEFAULT, max_chars=800),
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
        text = st.text_input(_("Text"), key=TEXT, max_chars=400, placeholder=EXAMPLES[kind],
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


@dataclass(frozen=True)
class LabRun:
    """Everything the page draws: tokens and, per layer, every intermediate as NumPy arrays."""

    tokens: tuple[str, ...]  # one label per position (padding and CLS included)
    steps: list[dict[str, np.ndarray | None]]  # per layer: AttentionSteps fields as arrays
    n_heads: int
    d_model: int
    norm_first: bool  # LayerNorm before attention (pre-norm)
    mask: str  # "none", "causal", "padding" or a description of a trained model's mask
    rotary: bool  # rotary positions inside attention
    title: str  # where the weights come from
    valid: tuple[bool, ...] | None = None  # real tokens (True) and padding (False), for the padding mask
    notices: list[str] = field(default_factory=list)
    embedding: str = ""  # LaTeX of layer 1's input when it is not E√d_model + PE (pretrained models)
    embedding_note: str = ""  # what the letters of ``embedding`` stand for
    kv_heads: int = 0  # key/value heads the query heads share (grouped-query attention); 0: one per query head
    rms_norm: bool = False  # the blocks' norm is RMSNorm (Llama family), not LayerNorm
    mlp: list[dict[str, object]] = field(default_factory=list)  # per layer: MLPSteps fields as arrays ({}: not kept)

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    def weights(self) -> np.ndarray:
        """All attention weights ``(L, H, T, S)``."""
        return np.stack([s["weights"] for s in self.steps])


def _arrays(steps: AttentionSteps | MLPSteps) -> dict[str, np.ndarray | None]:
    out = {}
    for name, value in vars(steps).items():
        if isinstance(value, torch.Tensor):
            out[name] = value.detach().float().cpu().numpy() if value.dtype != torch.bool else value.cpu().numpy()
        elif name != "rotary":
            out[name] = value
    return out


@st.cache_data(max_entries=64, show_spinner=False)
def run_random(text: str, kind: str, d_model: int, heads: int, layers: int, mask: str, seed: int) -> LabRun:
    """The lab's random encoder on ``text`` (cached: a pure function of its arguments)."""
    lab, config, model = random_lab(text, kind, d_model=d_model, heads=heads, layers=layers, mask=mask, seed=seed)
    notices = lab.notices()
    pre_norm, rotary = config.pre_norm, positional.get(config.positional).acts == "rotate"
    if model is None:
        return LabRun((), [], heads, d_model, pre_norm, mask, rotary, "random", notices=notices)
    with torch.no_grad():
        steps = walk_blocks(lab_stack(model, lab.ids, lab.tokens, mask, lab.valid))
    return LabRun(lab.tokens, [_arrays(s.attention) for s in steps], heads, d_model, pre_norm, mask, rotary,
                  f"random weights, seed {seed}", lab.valid, notices, mlp=[_arrays(s.mlp) for s in steps])


@st.cache_resource(max_entries=8, show_spinner=False)
def _task(name: str, options: tuple[tuple[str, object], ...]) -> object:
    """A built-in task, built once per name and options (the lab only reads its vocabulary)."""
    from transformer_core.tasks import get_task

    return get_task(name, **dict(options))


def trained_input(entry: state.TrainedModel, text: str) -> tuple[LabInput, object, dict[str, int]]:
    """``text`` encoded for a model trained in this session: its tokens, its task and the task's vocabulary.

    Raises:
        ValueError: with a friendly message when the task is not available or its vocabulary does not fit.
    """
    options = tuple(sorted((getattr(entry, "task_options", None) or {}).items()))
    try:
        task = getattr(entry, "task", None) or _task(entry.task_name, options)
    except (ImportError, ValueError, TypeError) as err:
        raise ValueError(_("The {task} task is not available here ({error}).").format(task=entry.task_title,
                                                                                       error=err)) from err
    vocab = task_vocabulary(task) or {}
    if vocab and max(vocab.values()) + 1 != entry.config.vocab_size:
        raise ValueError(_("The {task} model knows {n} tokens but the task's standard vocabulary has {m}: it was "
                           "trained with other options.").format(task=entry.task_title, n=num(entry.config.vocab_size),
                                                                 m=num(max(vocab.values()) + 1)))
    cls = 1 if getattr(entry.model, "pool", None) == "cls" else 0
    lab = encode_for_task(task, text, max_tokens=min(MAX_TOKENS, entry.config.max_len - cls))
    return lab, task, vocab


def run_trained(entry: state.TrainedModel, text: str) -> LabRun:
    """A model trained in this session on ``text`` encoded in its task's vocabulary.

    Raises:
        ValueError: with a friendly message when the text cannot be encoded for this model.
    """
    lab, _task_used, vocab = trained_input(entry, text)
    known = "".join(sorted(vocab))
    notices = lab.notices()
    if lab.empty and text.strip():
        shown = known if len(known) <= 40 else known[:40] + "…"
        notices.append(_("The {task} model reads only these characters: {chars}").format(task=entry.task_title,
                                                                                          chars=shown))
    config = entry.config
    mask = family(entry.family).mask_title
    if lab.empty:
        return LabRun((), [], config.n_heads, config.d_model, config.pre_norm, mask, False, entry.task_title,
                      notices=notices)
    model = entry.model
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            stack = trained_stack(model, lab.ids, lab.tokens)
            steps = walk_blocks(stack)
    finally:
        model.train(was_training)
    rotary = positional.get(config.positional).acts == "rotate"
    return LabRun(stack.labels, [_arrays(s.attention) for s in steps], config.n_heads, config.d_model,
                  config.pre_norm, mask, rotary,
                  _("{task}, trained {steps} steps").format(task=entry.task_title, steps=num(entry.step)), None,
                  notices,
                  kv_heads=kv_heads_of(config), rms_norm=getattr(config, "norm_type", "layernorm") == "rmsnorm",
                  mlp=[_arrays(s.mlp) for s in steps])
