"""*Follow a word*: a few candidate next tokens, their probability and rank after every layer (the logit lens)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import N_, _, num, percent, pgettext
from explorer.lab.follow_word import (
    MAX_CANDIDATES,
    Candidate,
    WordPaths,
    char_encoder,
    continuation_encoder,
    follow_word,
    top_candidates,
    typed_candidate,
)
from transformer_core.models import CausalLM
from ui.attention.beyond.context import LensContext
from ui.attention.keys import FOLLOW_POS, FOLLOW_WORDS
from ui.attention.lab_run import trained_input
from ui.common import charts
from ui.common.exports import matrix_png

PICK = "attn.follow.pick"  # list[int]: the model's own candidates chosen (token ids); reset when the context changes
PICKED_FOR = "attn.follow.picked_for"  # the (model, text, position) the picks were made for
CHOICES = 10  # the model's likeliest tokens offered to follow
DEFAULT_PICKS = 3
CAPTION = N_("Each line is one candidate for the next token: how likely the model would find it if it stopped after "
             "layer 1, 2, …, reading that layer's residual stream with the final layer's norm and unembedding (the "
             "*logit lens*). The last point is the model's real answer. The middle layers were never trained to be "
             "read this way, so early readings are rough: a low line there does not mean the word is absent, only "
             "that it is not yet in the form the last layer's reading understands.")


def offered(ctx: LensContext) -> str | None:
    """``None`` for decoder-only models (GPT-2, Llama-family, a trained character model), else why not."""
    if isinstance(ctx.model, CausalLM) and ctx.shown.label is not None:
        return None
    if ctx.pre is None and ctx.trained is None:
        return _("Random weights predict nothing worth following. Pick a pretrained GPT-2 or Llama-family model, "
                 "or a character model trained on Live Training.")
    if ctx.pre is not None:
        return _("{model} fills in words from both sides, so it has no *next* word to follow. The logit lens "
                 "reads decoder-only models: pick GPT-2 or a Llama-family model.").format(model=ctx.pre.name)
    return _("This model does not write text token by token, so there is no next word to follow. Train the "
             "character language model on Live Training, or pick a pretrained GPT-2.")


def _encoder(ctx: LensContext) -> Callable[[str], Sequence[int]]:
    if ctx.pre is not None:
        return continuation_encoder(lambda t: ctx.pre.tokenizer.encode(t, add_special_tokens=False).ids, ctx.text)
    return char_encoder(trained_input(ctx.trained, ctx.text)[2])


def _position(ctx: LensContext, where) -> int:
    """The position read, 0-based (the last token unless the learner picks another)."""
    n = len(ctx.shown.ids)
    if int(st.session_state.get(FOLLOW_POS, 0)) > n:
        st.session_state[FOLLOW_POS] = 0
    tokens = ctx.shown.tokens
    chosen = where.selectbox(
        _("Read at"), range(n + 1), key=FOLLOW_POS,
        format_func=lambda i: _("the last token, “{token}”").format(token=tokens[-1]) if i == 0 else
        _("token {n}, “{token}”").format(n=i, token=tokens[i - 1]),
        help=_("The position whose next-token guess is followed; the model's real prediction is the last one's."))
    return n - 1 if chosen == 0 else chosen - 1


def _candidates(ctx: LensContext, position: int, left, right) -> list[Candidate]:
    """The model's own likeliest tokens the learner keeps (the top three at first) and the words typed."""
    tops = top_candidates(ctx.model, ctx.shown.ids, ctx.shown.label, position=position, k=CHOICES)
    by_id = {c.id: c for c in tops}
    context = (id(ctx.model), ctx.shown.ids, position)
    if st.session_state.get(PICKED_FOR) != context or PICK not in st.session_state:
        st.session_state[PICK] = [c.id for c in tops[:DEFAULT_PICKS]]
        st.session_state[PICKED_FOR] = context
    picked = left.multiselect(
        _("The model's likeliest next tokens"), list(by_id), key=PICK, format_func=lambda i: by_id[i].label,
        max_selections=MAX_CANDIDATES,
        help=_("Its {n} likeliest next tokens after its last layer; pick which to follow.").format(n=CHOICES))
    words = right.text_input(
        _("Or type words"), key=FOLLOW_WORDS, max_chars=120, placeholder=_("e.g. Paris, London"),
        help=_("Comma-separated. Each word is read as the next word after the text and followed as its first token "
               "(a line above the chart names it)."))
    chosen = [by_id[i] for i in picked]
    encode = _encoder(ctx)
    for word in (w.strip() for w in words.split(",") if w.strip()):
        try:
            chosen.append(typed_candidate(word, encode, ctx.shown.label))
        except ValueError as err:
            st.warning(str(err), icon="⚠️")
    return chosen


def _figure(paths: WordPaths, *, projector: bool) -> go.Figure:
    layers = list(range(1, paths.n_layers + 1))
    fig = go.Figure()
    for k, c in enumerate(paths.candidates):
        fig.add_trace(go.Scatter(
            x=layers, y=paths.probs[:, k].tolist(), mode="lines+markers", name=f"“{c.label}”",
            customdata=paths.ranks[:, k].tolist(),
            hovertemplate=_("after layer %{x}: %{y:.1%} · rank %{customdata}") + f"<extra>“{c.label}”</extra>"))
    fig.update_xaxes(title=_("after layer"), tickmode="array", tickvals=layers)
    top = float(paths.probs.max())  # small probabilities stay readable; 100 % stays the top when lines get near it
    fig.update_yaxes(title=_("probability"), range=[0, 1.02 if top > 0.6 else max(0.05, 1.15 * top)],
                     tickformat=".0%")
    fig = charts.style(fig, title=_("Probability of each candidate after every layer"),
                       height=300 if projector else 360)
    return charts.move_legend(fig, "right")


def _rank_figure(paths: WordPaths) -> go.Figure:
    layers = list(range(1, paths.n_layers + 1))
    fig = go.Figure([go.Scatter(x=layers, y=paths.ranks[:, k].tolist(), mode="lines+markers", name=f"“{c.label}”",
                                hovertemplate=_("after layer %{x}: rank %{y}") + "<extra></extra>")
                     for k, c in enumerate(paths.candidates)])
    fig.update_xaxes(title=_("after layer"), tickmode="array", tickvals=layers)
    ticks = [t for t in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
             if t <= max(2, int(paths.ranks.max()))]
    fig.update_yaxes(title=_("rank (1 = likeliest)"), type="log", autorange="reversed", tickvals=ticks)
    return charts.move_legend(charts.style(fig, title=_("Rank among every token"), height=260), "right")


def _summary(paths: WordPaths) -> str:
    parts = []
    for k, c in enumerate(paths.candidates):
        first = paths.first_top(k)
        fill = dict(token=c.label, share=percent(float(paths.probs[-1, k])), rank=num(int(paths.ranks[-1, k])),
                    layer=first)
        parts.append(_("“{token}” ends at {share} (rank {rank}), the top token from layer {layer} on").format(**fill)
                     if first else _("“{token}” ends at {share} (rank {rank})").format(**fill))
    return _("{items}.").format(items=pgettext("list separator", "; ").join(parts))


def _button(label: str, data: Callable[[], str | bytes], name: str, mime: str, help: str) -> None:
    st.download_button(label, data, file_name=name, mime=mime, key=f"attn.follow.{label.lower()}", help=_(help),
                       on_click="ignore", icon=":material/download:")


def _downloads(paths: WordPaths, tokens: Sequence[str]) -> None:
    labels = [f"“{c.label}”" for c in paths.candidates]
    layers = [str(i) for i in range(1, paths.n_layers + 1)]
    title = _("Probability after each layer, reading “{token}” (logit lens)").format(token=tokens[paths.position])
    left, right, _rest = st.columns([1, 1, 3])
    with left:
        _button("CSV", paths.csv, "follow_a_word.csv", "text/csv",
                N_("Each candidate's probability and rank after every layer, one row per layer and candidate."))
    with right:
        _button("PNG", lambda: matrix_png(np.asarray(paths.probs.T), labels, layers, title=title, zmin=0.0,
                                          zmax=1.0, decimals=2),
                "follow_a_word.png", "image/png",
                N_("The probabilities as a candidates × layers picture (the camera above the chart saves the lines)."))


def draw(ctx: LensContext) -> None:
    """The position and candidates, the chart of their probability (and rank) per layer, the caption, downloads."""
    where, left, right = st.columns([2, 3, 2])
    position = _position(ctx, where)
    chosen = _candidates(ctx, position, left, right)
    if not chosen:
        st.info(_("Choose a token or type a word to follow it through the layers."), icon="👆")
        return
    try:
        paths = follow_word(ctx.model, ctx.shown.ids, chosen, position=position)
    except ValueError as err:
        st.warning(str(err), icon="⚠️")
        return
    for note in (c.note for c in paths.candidates if c.note):
        st.caption(note)
    charts.show(_figure(paths, projector=ctx.projector), key="attn.follow.chart")
    st.caption(_summary(paths))
    st.caption(_(CAPTION))

    if not ctx.projector:
        charts.show(_rank_figure(paths), key="attn.follow.ranks")
        _downloads(paths, ctx.shown.tokens)
