"""Model Builder's settings: session-state keys, the values they may take, their URL form, and the model they describe.

Every widget of :mod:`ui.builder.widgets` is keyed by a constant here and drawn without ``value=``/``index=``:
:func:`settle_all` puts each value into session state first, within the choices the widgets offer, so session
state is the single source of a widget's value (and a link's values arrive the same way).
"""

from __future__ import annotations

import dataclasses

import streamlit as st

from explorer.heads import head_choices
from explorer.i18n import N_, _
from explorer.lab.builder import KIND_TITLES, BuilderSettings, preset_settings
from transformer_core import divisors, positional
from transformer_core.families import by_kind
from transformer_core.presets import PRESETS
from ui.common.urlstate import UrlParam, link_text, set_by_link, settle_choice
from ui.positional import labels as encoding_labels

KIND = "mb.kind"  # "encoder", "decoder", "seq2seq" or "vit"
LAYERS = "mb.layers"  # blocks per stack
HEADS = "mb.heads"  # attention heads
D_MODEL = "mb.d_model"  # model width
D_FF = "mb.d_ff"  # feed-forward width
NORM = "mb.norm"  # "pre" or "post"
POSITIONAL = "mb.pos"  # positional encoding of the text models
VOCAB = "mb.vocab"  # vocabulary size
SEQ = "mb.seq"  # tokens per sequence
IMAGE = "mb.image"  # ViT image side
PATCH = "mb.patch"  # ViT patch side
CLASSES = "mb.classes"  # ViT classes
BATCH = "mb.batch"  # training batch size
TIMINGS = "mb.timings"  # dict: settings -> measured seconds per step (not a widget)
LAST_D_MODEL = "mb.last_d_model"  # d_model of the previous run, to keep the d_ff ratio when it changes
PRESET = "mb.preset"  # the famous model the controls were set to, "" once any of them changed (no widget)
COMPARE_LOADED = "mb.compare_loaded"  # whether a loaded pretrained model joins the comparison
LOADED_MODEL = "mb.loaded_model"  # that model's menu label
BLOCK_KV = "mb.block_kv"  # K/V heads of the Llama block in *GPT-2 block vs Llama block*
VIT_FIXED = "mb.vit."  # prefix of the read-only widgets that show the ViT's own norm and positions

D_MODELS = (
    16,
    32,
    48,
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1280,
    1536,
    2048,
    2560,
    3072,
    4096,
    5120,
    6144,
    8192,
    12288,
)
FF_RATIOS = (1, 2, 3, 4, 6, 8)  # d_ff offered as these multiples of d_model (4 in most papers)
IMAGE_SIZES = (32, 64, 96, 128, 224, 256, 384, 512)
MAX_LAYERS = 128
MAX_HEADS = 128
_D = BuilderSettings()
# The presets with a button (and their labels): those the controls build exactly. SmolLM2-135M's Llama blocks are not
# among the Builder's families, so it is counted in the comparison table only.
PRESET_LABELS = {
    "BERT-base": "BERT-base",
    "GPT-2 small": "GPT-2 small",
    "Transformer base (2017)": "Transformer base",
    "ViT-B/16": "ViT-B/16",
}

# The core's English words the page shows (transformer_core stays English), marked here by their text and shown
# through library_text: the families' names, the positional encodings' titles and summaries, the presets' notes.
LIBRARY_TEXTS = frozenset(
    (
        N_("Encoder-only (BERT-like)"),
        N_("Decoder-only (GPT-like)"),
        N_("Encoder–decoder (2017 Transformer)"),
        N_("Vision Transformer (ViT)"),
        N_("encoder"),
        N_("decoder"),
        N_("enc–dec"),
        *encoding_labels.TITLES.values(),
        *encoding_labels.SUMMARIES.values(),
        N_(
            "6 encoder + 6 decoder post-norm blocks; one 37,000-token vocabulary shared by the source and target "
            "embeddings and the output projection."
        ),
        N_("WordPiece, position and token-type embeddings, 12 post-norm blocks and the pooler."),
        N_("12 pre-norm causal blocks; the output projection reuses the token embedding."),
        N_("224x224 images in 196 patches of 16x16 pixels plus a CLS token; a 1000-class head."),
    )
)


def library_text(text: str) -> str:
    """One of the core's English words above in the page's language (any other text as it is)."""
    return _(text) if text in LIBRARY_TEXTS else text


URL_PARAMS = [
    UrlParam(KIND, _D.kind, choices=tuple(KIND_TITLES)),
    UrlParam(LAYERS, _D.n_layers, lo=1, hi=MAX_LAYERS),
    UrlParam(HEADS, _D.n_heads, lo=1, hi=MAX_HEADS),
    UrlParam(D_MODEL, _D.d_model, choices=D_MODELS),
    UrlParam(D_FF, _D.d_ff, lo=1, hi=8 * max(D_MODELS)),
    UrlParam(NORM, _D.norm, choices=("pre", "post")),
    UrlParam(POSITIONAL, _D.positional, choices=positional.kinds()),
    UrlParam(VOCAB, _D.vocab_size, lo=2, hi=1_000_000),
    UrlParam(SEQ, _D.seq_len, lo=1, hi=1_000_000),
    UrlParam(IMAGE, _D.image_size, choices=IMAGE_SIZES),
    UrlParam(PATCH, _D.patch_size, lo=1, hi=max(IMAGE_SIZES)),
    UrlParam(CLASSES, _D.num_classes, lo=1, hi=100_000),
    UrlParam(BATCH, _D.batch_size, lo=1, hi=65_536),
    UrlParam(PRESET, "", choices=("", *PRESET_LABELS)),
    UrlParam(BLOCK_KV, 2, lo=1, hi=MAX_HEADS),  # a share link rebuilds the famous model exactly
]
_DEFAULTS = {p.key: p.default for p in URL_PARAMS}
HIDDEN_IN_PROJECTOR = (NORM, POSITIONAL, VOCAB, SEQ, IMAGE, PATCH, CLASSES, BATCH)
KEPT = tuple(p.key for p in URL_PARAMS)  # settings kept for the whole session
VIT_NORM, VIT_POSITIONS = "pre", "learned"  # what the Vision Transformer always uses (transformer_core.vit)


def ff_choices(d_model: int) -> list[int]:
    """Feed-forward widths offered for ``d_model``."""
    return [r * d_model for r in FF_RATIOS]


def patch_choices(image_size: int) -> list[int]:
    """Patch sizes that divide the image and leave at least 2 × 2 patches."""
    return [p for p in divisors(image_size) if p < image_size and image_size // p >= 2]


def settle_all() -> None:
    """Put every setting into session state before the widgets are drawn, each one among its widget's choices."""
    for key, value in _DEFAULTS.items():
        st.session_state.setdefault(key, value)
    d_model = settle_choice(D_MODEL, D_MODELS)
    settle_choice(
        HEADS,
        head_choices(d_model, MAX_HEADS),
        why=_("the number of heads must divide d_model {d_model}").format(d_model=d_model),
    )
    _settle_d_ff(d_model)
    image = settle_choice(IMAGE, IMAGE_SIZES)
    settle_choice(
        PATCH,
        patch_choices(image),
        why=_("the patch size must divide the {size}-pixel image and leave at least 2 × 2 patches").format(size=image),
    )


def _settle_d_ff(d_model: int) -> None:
    """Keep the feed-forward ratio when d_model changes; a link brings its own d_ff."""
    last = d_model if set_by_link(D_MODEL) else st.session_state.get(LAST_D_MODEL, d_model)
    if last != d_model:  # the width changed: keep the feed-forward ratio
        ratio = st.session_state[D_FF] / last if last else 4
        st.session_state[D_FF] = int(ratio * d_model) if ratio in FF_RATIOS else 4 * d_model
    if st.session_state[D_FF] not in ff_choices(d_model) and link_text(D_FF) is None:
        st.session_state[D_FF] = 4 * d_model  # the papers' ratio
    ratios = ", ".join(f"{r}×" for r in FF_RATIOS)
    settle_choice(
        D_FF,
        ff_choices(d_model),
        why=_("d_ff must be {ratios} d_model {d_model}").format(ratios=ratios, d_model=d_model),
    )
    st.session_state[LAST_D_MODEL] = d_model


def read_settings() -> BuilderSettings:
    """The settings the controls describe; a famous model's own while they still hold its every value."""
    ss = st.session_state
    shape = dict(
        kind=ss[KIND],
        n_layers=int(ss[LAYERS]),
        n_heads=int(ss[HEADS]),
        d_model=int(ss[D_MODEL]),
        d_ff=int(ss[D_FF]),
        batch_size=int(ss[BATCH]),
    )
    # The settings a family ignores keep their defaults, so equal models compare equal.
    if by_kind(ss[KIND]).reads_images:
        settings = BuilderSettings(
            **shape,
            norm=VIT_NORM,
            positional=VIT_POSITIONS,
            image_size=int(ss[IMAGE]),
            patch_size=int(ss[PATCH]),
            num_classes=int(ss[CLASSES]),
        )
    else:
        settings = BuilderSettings(
            **shape, norm=ss[NORM], positional=ss[POSITIONAL], vocab_size=int(ss[VOCAB]), seq_len=int(ss[SEQ])
        )
    name = ss.get(PRESET, "")
    if name in PRESETS:
        published = preset_settings(name, settings.batch_size)
        if settings == dataclasses.replace(published, preset=""):
            return published
    ss[PRESET] = ""
    return settings


def apply_preset(name: str) -> None:
    """Set every control to the published sizes of ``name`` (a button's callback, before the widgets exist)."""
    s = preset_settings(name, int(st.session_state[BATCH]))
    values = {
        KIND: s.kind,
        LAYERS: s.n_layers,
        HEADS: s.n_heads,
        D_MODEL: s.d_model,
        D_FF: s.d_ff,
        LAST_D_MODEL: s.d_model,
        PRESET: name,
    }
    if by_kind(s.kind).reads_images:
        values |= {IMAGE: s.image_size, PATCH: s.patch_size, CLASSES: s.num_classes}
    else:
        values |= {NORM: s.norm, POSITIONAL: s.positional, VOCAB: s.vocab_size, SEQ: s.seq_len}
    st.session_state.update(values)
