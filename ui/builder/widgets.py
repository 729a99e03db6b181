"""Model Builder's widgets: the famous models' buttons, the shape controls and the input controls.

Each widget is keyed by a constant of :mod:`ui.builder.controls`, which settles every value before they are
drawn; :func:`builder_controls` draws them all and returns the settings they describe.
"""

from __future__ import annotations

import streamlit as st

from explorer.heads import head_choices
from explorer.i18n import _, num
from explorer.lab.builder import KIND_TITLES, BuilderSettings
from transformer_core import positional
from transformer_core.families import by_kind
from transformer_core.presets import PRESETS
from ui.builder.controls import (
    BATCH,
    CLASSES,
    D_FF,
    D_MODEL,
    D_MODELS,
    HEADS,
    IMAGE,
    IMAGE_SIZES,
    KIND,
    LAYERS,
    MAX_HEADS,
    MAX_LAYERS,
    NORM,
    PATCH,
    POSITIONAL,
    PRESET,
    PRESET_LABELS,
    SEQ,
    VIT_FIXED,
    VIT_NORM,
    VIT_POSITIONS,
    VOCAB,
    apply_preset,
    ff_choices,
    library_text,
    patch_choices,
    read_settings,
    settle_all,
)
from ui.common.theme import wrapping_columns


def shape_controls() -> None:
    """Family, depth, width, heads and feed-forward width."""
    st.radio(
        _("Model family"),
        list(KIND_TITLES),
        key=KIND,
        format_func=lambda k: library_text(KIND_TITLES[k]),
        help=_(
            "Encoder-only reads a whole sequence (BERT); decoder-only predicts the next token (GPT); "
            "encoder-decoder translates (the 2017 paper); a ViT classifies images."
        ),
    )
    d_model = st.session_state[D_MODEL]
    c1, c2 = st.columns(2)
    c1.number_input(
        _("Layers"),
        1,
        MAX_LAYERS,
        key=LAYERS,
        help=_("Blocks per stack; an encoder-decoder has this many in the encoder and in the decoder."),
    )
    c2.selectbox(
        _("Heads"),
        head_choices(d_model, MAX_HEADS),
        key=HEADS,
        help=_(
            "Attention heads per layer; only divisors of d_model are offered (each head gets d_model / heads numbers)."
        ),
    )
    st.select_slider(
        "d_model",
        list(D_MODELS),
        key=D_MODEL,
        format_func=num,
        help=_("Width of every token vector; parameters grow with its square."),
    )
    st.select_slider(
        "d_ff",
        ff_choices(d_model),
        key=D_FF,
        format_func=lambda f: f"{num(f)} ({f // d_model}×)",
        help=_("Hidden width of each feed-forward network; the papers use 4 × d_model."),
    )


def input_controls(kind: str) -> None:
    """Norm placement, positions and the input size: vocabulary and length, or image and patch size."""
    vit = by_kind(kind).reads_images
    if vit:  # read-only widgets of their own: the text models' choices stay as they were
        st.session_state[VIT_FIXED + "norm"], st.session_state[VIT_FIXED + "pos"] = VIT_NORM, VIT_POSITIONS
    c1, c2 = wrapping_columns(2, key="builder-norm", per_row=2)
    c1.radio(
        _("Norm placement"),
        ["pre", "post"],
        key=VIT_FIXED + "norm" if vit else NORM,
        horizontal=True,
        disabled=vit,
        help=_(
            "pre: LayerNorm before each sub-layer (GPT-2, ViT; trains stably). "
            "post: after the residual add (the 2017 paper, BERT)."
        ),
    )
    encodings = "; ".join(
        _("{name}: {summary}").format(name=library_text(k.title), summary=library_text(k.summary))
        for k in map(positional.get, positional.kinds())
    )
    c2.selectbox(
        _("Positions"),
        list(positional.kinds()),
        key=VIT_FIXED + "pos" if vit else POSITIONAL,
        disabled=vit,
        format_func=lambda k: library_text(positional.get(k).title),
        help=_("How token order enters. {encodings}.").format(encodings=encodings),
    )
    if vit:
        st.caption(_("A ViT is always pre-norm with learned positions (one learned vector per patch and CLS)."))
        c3, c4, c5 = wrapping_columns(3, key="builder-image")
        c3.selectbox(_("Image size"), list(IMAGE_SIZES), key=IMAGE, help=_("Side of the square input image."))
        c4.selectbox(
            _("Patch size"),
            patch_choices(st.session_state[IMAGE]),
            key=PATCH,
            help=_("Side of each patch; (image / patch)² patches become the tokens."),
        )
        c5.number_input(_("Classes"), 1, 100_000, key=CLASSES, help=_("Outputs of the classification head."))
    else:
        c3, c4 = st.columns(2)
        c3.number_input(
            _("Vocabulary"),
            2,
            1_000_000,
            key=VOCAB,
            step=1000,
            help=_("Distinct tokens; the embedding (and output layer) has one row per token."),
        )
        c4.number_input(
            _("Sequence length"),
            1,
            1_000_000,
            key=SEQ,
            step=64,
            help=_("Tokens per sequence; attention cost grows with its square."),
        )
    st.number_input(
        _("Batch size"),
        1,
        65_536,
        key=BATCH,
        help=_("Sequences or images per training step; activation memory grows with it."),
    )


def builder_controls(projector: bool = False) -> BuilderSettings:
    """All controls (in projector mode only the shape ones); returns the settings they describe."""
    settle_all()
    preset_buttons()
    shape_controls()
    if projector:
        st.caption(_summary())
    else:
        input_controls(st.session_state[KIND])
    return read_settings()


def preset_buttons() -> None:
    """One button per famous model, setting every control to its published sizes.

    The buttons take their names' width and wrap to a new row where the column is narrow (a 1024-pixel screen with
    the sidebar open): a fixed grid cut "Transformer base" short there."""
    st.markdown(_("**Start from a famous model**"))
    row = st.container(horizontal=True)
    for i, (name, label) in enumerate(PRESET_LABELS.items()):
        preset = PRESETS[name]
        row.button(
            label,
            key=f"mb.preset.{i}",
            on_click=apply_preset,
            args=(name,),
            width="content",
            type="primary" if st.session_state.get(PRESET) == name else "secondary",
            help=_(
                "Set every control to {name} ({paper}, {year}): {note} Change any control afterwards to build your own."
            ).format(name=name, paper=preset.paper, year=preset.year, note=library_text(preset.note)),
        )


def _summary() -> str:
    ss = st.session_state
    if by_kind(ss[KIND]).reads_images:
        return _("{image}×{image} images in {patch}×{patch} patches; batch {batch}.").format(
            image=ss[IMAGE], patch=ss[PATCH], batch=num(ss[BATCH])
        )
    return _("{norm}-norm, {positions} positions, vocabulary {vocab}, {tokens} tokens; batch {batch}.").format(
        norm=ss[NORM],
        positions=library_text(ss[POSITIONAL]),
        vocab=num(ss[VOCAB]),
        tokens=num(ss[SEQ]),
        batch=num(ss[BATCH]),
    )
