"""The steps of the lessons, with live visuals computed with ``transformer_core`` while the step is drawn.

``LESSON_STEPS[lesson_key]`` draws every step of that lesson; the lessons that train models are drawn by
``ui.lessons.training`` and ``ui.lessons.head_importance``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go
import streamlit as st
from PIL import Image

from explorer.i18n import N_, _, num, pgettext
from explorer.images import prepare_image
from explorer.lab.text_input import MAX_TEXT_CHARS, tokenize
from explorer.lab.vit_walkthrough import attention_scores, valid_patch_sizes
from explorer.lessons.experiments import ScalingDemo, causal_attention, scaling_demo
from transformer_core import causal_mask
from ui.common import charts, tables
from ui.common.images import load_sample, sample_names
from ui.common.theme import projector
from ui.lessons import training as lesson_training
from ui.lessons.frame import key_of, step_intro
from ui.lessons.head_importance import importance_steps
from ui.lessons.lesson import Lesson
from ui.lessons.not_explanation import not_explanation_steps
from ui.vit.pictures import grid_overlay, sequence_strip

IMAGE_SIZE = 64  # pixels per side of the picture in "Patches are tokens"
DEFAULT_SENTENCE = "the cat sat on the mat"
MAX_WORDS = 12  # longest sentence the causal-mask lesson shows
D_K_CHOICES = (4, 16, 64, 256, 1024)
SAMPLE_LABELS = {  # the sample pictures' names, as shown (a picture added later shows its file name)
    "house": N_("house"),
    "smiley": N_("smiley"),
    "shapes": N_("shapes"),
    "digit": N_("digit"),
    "checkerboard": N_("checkerboard"),
}


# Patches are tokens


def _picture(lesson: Lesson) -> tuple[np.ndarray, int]:
    names = sample_names()
    left, right = st.columns(2)
    name = left.selectbox(
        _("Picture"),
        names,
        format_func=lambda name: _(SAMPLE_LABELS[name]) if name in SAMPLE_LABELS else name,
        key=key_of(lesson, "picture"),
        help=_("A sample picture, scaled to 64 × 64 pixels like a small ViT's input."),
    )
    sizes = valid_patch_sizes(IMAGE_SIZE)
    patch = right.select_slider(
        _("Patch size (pixels)"),
        sizes,
        value=16 if 16 in sizes else sizes[0],
        key=key_of(lesson, "patch"),
        help=_("Side of each square patch; every patch becomes one token."),
    )
    pixels = prepare_image(Image.fromarray(load_sample(name)), IMAGE_SIZE)
    return pixels, patch


def _patch_grid(pixels: np.ndarray, patch: int) -> None:
    n = (IMAGE_SIZE // patch) ** 2
    st.image(
        grid_overlay(pixels, patch),
        caption=_("{n} patches of {size} × {size} pixels").format(n=num(n), size=patch),
        width=360,
    )


def _patch_sequence(pixels: np.ndarray, patch: int) -> None:
    n = (IMAGE_SIZE // patch) ** 2
    st.image(
        sequence_strip(pixels, patch), caption=_("[CLS] followed by the {n} patches in reading order").format(n=num(n))
    )
    cols = st.columns(3)
    cols[0].metric(_("Patches"), n)
    cols[1].metric(_("Tokens with [CLS]"), n + 1)
    cols[2].metric(_("Numbers per patch"), patch * patch * 3, help=_("patch × patch pixels × 3 colour channels"))


def _patch_costs() -> None:
    rows = [
        {
            _("patch size"): f"{p} × {p}",
            _("tokens (with [CLS])"): (IMAGE_SIZE // p) ** 2 + 1,
            _("numbers per token before projection"): p * p * 3,
            _("attention scores per head"): attention_scores((IMAGE_SIZE // p) ** 2),
        }
        for p in valid_patch_sizes(IMAGE_SIZE)
    ]
    tables.dataframe(rows, hide_index=True, width="stretch")


# Causal masks


def _sentence(lesson: Lesson) -> tuple[list[str], list[int]]:
    text = st.text_input(
        _("Sentence"),
        value=DEFAULT_SENTENCE,
        key=key_of(lesson, "text"),
        max_chars=MAX_TEXT_CHARS,
        help=_("Split into words; each word is one token."),
    )
    lab = tokenize(text, "sentence", max_tokens=MAX_WORDS)
    for notice in lab.notices():
        st.caption(notice)
    if lab.empty:
        st.warning(_("Type at least one word."))
        return list(DEFAULT_SENTENCE.split()), list(tokenize(DEFAULT_SENTENCE).ids)
    return list(lab.tokens), list(lab.ids)


def _every_label(fig: go.Figure) -> go.Figure:
    """Show every token on both axes, also with projector mode's larger font."""
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(dtick=1)
    return fig


def _mask(lesson: Lesson, tokens: list[str]) -> None:
    mask = causal_mask(len(tokens)).numpy().astype(float)
    fig = charts.heatmap(
        mask,
        tokens,
        tokens,
        title=_("Causal mask (1 = may attend)"),
        x_title=_("key (read)"),
        y_title=_("query (asking)"),
        zmin=0.0,
        zmax=1.0,
        decimals=0,
        hover_name=_("allowed"),
    )
    charts.show(_every_label(fig), key=key_of(lesson, "mask"))


def _token_view(lesson: Lesson, tokens: list[str]) -> None:
    index = st.selectbox(
        _("Token that asks"),
        range(len(tokens)),
        index=min(2, len(tokens) - 1),
        format_func=lambda i: f"{i + 1}. {tokens[i]}",
        key=key_of(lesson, "query"),
        help=_("The query whose allowed keys are listed below."),
    )
    seen = " ".join(f"✅ **{t}**" if j <= index else f"🚫 ~~{t}~~" for j, t in enumerate(tokens))
    st.markdown(seen)
    st.caption(
        _("“{token}” may read {n} of {total} tokens: itself and the ones before it.").format(
            token=tokens[index], n=num(index + 1), total=num(len(tokens))
        )
    )


def _decoder_weights(lesson: Lesson, tokens: list[str], ids: list[int]) -> None:
    weights = causal_attention(ids, seed=0)[0]  # head 1: (T, T)
    fig = charts.heatmap(
        weights,
        tokens,
        tokens,
        title=_("Attention weights of a random decoder layer (head 1)"),
        x_title=_("key (read)"),
        y_title=_("query (asking)"),
        zmin=0.0,
        zmax=1.0,
        hover_name=_("weight"),
    )
    charts.show(_every_label(fig), key=key_of(lesson, "weights"))
    above = float(np.triu(weights, k=1).sum())
    sums = pgettext("list separator", ", ").join(num(s, 2) for s in weights.sum(axis=1))
    st.caption(
        _("Total weight right of the diagonal: {above}. Row sums: {sums}.").format(above=num(above, 1), sums=sums)
    )


# Why divide by √d_k


def _scaling_numbers(lesson: Lesson) -> ScalingDemo:
    d_k = st.select_slider(
        _("d_k (size of queries and keys)"),
        D_K_CHOICES,
        value=256,
        key=key_of(lesson, "d_k"),
        help=_("Longer vectors give dot products with a larger spread."),
    )
    demo = scaling_demo(d_k, seed=0)
    cols = st.columns(3)
    cols[0].metric(_("Spread of the raw scores"), num(demo.score_std, 1), help=_("Standard deviation of q·k"))
    cols[1].metric(_("Largest weight, unscaled"), num(demo.weights_unscaled.max(), 2))
    cols[2].metric(_("Largest weight, scaled"), num(demo.weights_scaled.max(), 2))
    return demo


def _scaling_bars(lesson: Lesson, demo: ScalingDemo) -> None:
    keys = [_("key {n}").format(n=i + 1) for i in range(len(demo.scores))]
    fig = go.Figure(
        [
            go.Bar(
                x=keys,
                y=demo.weights_unscaled,
                name="softmax(q·k)",
                marker_color="#D55E00",
                hovertemplate="%{x}: %{y:.3f}<extra>" + _("unscaled") + "</extra>",
            ),
            go.Bar(
                x=keys,
                y=demo.weights_scaled,
                name="softmax(q·k / √d_k)",
                marker_color="#0072B2",
                hovertemplate="%{x}: %{y:.3f}<extra>" + _("scaled") + "</extra>",
            ),
        ]
    )
    fig.update_yaxes(title=_("attention weight"), range=[0, 1])
    fig = charts.style(fig, title=_("Attention weights over 8 keys, d_k = {d_k}").format(d_k=demo.d_k), height=400)
    charts.show(charts.move_legend(fig, "below"), key=key_of(lesson, "bars"))
    if not projector():
        with st.expander(_("Numbers")):
            tables.dataframe(
                {
                    _("key"): keys,
                    "q·k": np.round(demo.scores, 2),
                    "softmax(q·k)": np.round(demo.weights_unscaled, 3),
                    "softmax(q·k / √d_k)": np.round(demo.weights_scaled, 3),
                },
                hide_index=True,
            )


def patches_steps(lesson: Lesson) -> None:
    """The three steps of "Patches are tokens"."""
    step_intro(lesson, 1)
    pixels, patch = _picture(lesson)
    _patch_grid(pixels, patch)
    step_intro(lesson, 2)
    _patch_sequence(pixels, patch)
    step_intro(lesson, 3)
    _patch_costs()


def causal_steps(lesson: Lesson) -> None:
    """The three steps of "Causal masks"."""
    step_intro(lesson, 1)
    tokens, ids = _sentence(lesson)
    _mask(lesson, tokens)
    step_intro(lesson, 2)
    _token_view(lesson, tokens)
    step_intro(lesson, 3)
    _decoder_weights(lesson, tokens, ids)


def scaling_steps(lesson: Lesson) -> None:
    """The two steps of "Why divide by √d_k"."""
    step_intro(lesson, 1)
    demo = _scaling_numbers(lesson)
    step_intro(lesson, 2)
    _scaling_bars(lesson, demo)


LESSON_STEPS: dict[str, Callable[[Lesson], None]] = {
    "positional": lesson_training.positional_steps,
    "heads": lesson_training.heads_steps,
    "importance": importance_steps,
    "patches": patches_steps,
    "causal": causal_steps,
    "scaling": scaling_steps,
    "not_explanation": not_explanation_steps,
}
