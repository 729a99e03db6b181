"""*Embedding map*: chosen tokens' embedding rows on a PCA plane with their nearest neighbours, and one word in
several sentences, its vectors compared layer by layer (computed by :mod:`explorer.lab.embedding_map` and
:mod:`explorer.lab.word_uses`; only the last result is kept, per session)."""

from __future__ import annotations

import csv
import io

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from explorer.i18n import N_, _, num, percent, pgettext
from explorer.lab.embedding_map import MAX_TOKENS, EmbeddingMap, embedding_map, token_table
from explorer.lab.subjects import token_labeller
from explorer.lab.text_input import MAX_TEXT_CHARS
from explorer.lab.word_uses import (
    Reader,
    WordComparison,
    compare_uses,
    pretrained_reader,
    random_reader,
    trained_reader,
    word_token,
)
from explorer.render.plot_image import lines_png, scatter_png
from ui.attention.beyond.context import LensContext
from ui.attention.controls import settings
from ui.attention.keys import MAP_SENTENCES, MAP_WORD, MAP_WORDS
from ui.attention.lab_run import trained_input
from ui.common import charts
from ui.common.chart_style import style
from ui.common.theme import wrapping_columns

RESULTS = "attn.map.results"  # {what a result depends on: result}: the last map and comparison of this session
PRETRAINED_WORDS = "king, queen, man, woman, Paris, London, France, one, two, three, red, blue, dog, cat, river, money"
MAP_CAPTION = N_("Each dot is one token's row of the embedding table, flattened to the two directions along which "
                 "these tokens spread most (PCA): the rest of their spread is not shown, so dots that look close may "
                 "be far apart. Neighbours are the rows of the whole vocabulary pointing most the same way (cosine): "
                 "tokens the model treats alike, which is not the same as words that mean the same. These two "
                 "directions hold {share} of the spread.")
USES_CAPTION = N_("Layer 0 is the word's embedding row: the same token has the same row in every sentence (cosine "
                  "1). Each layer mixes in the words around it; where a line drops, the model's vectors for the two "
                  "uses part ways. Similar vectors show the model treats the uses alike, not what it understands.")


def offered(ctx: LensContext) -> str | None:
    """``None``: every text model the Lab shows has a token-embedding table."""
    try:
        token_table(ctx.model)
    except ValueError:
        return _("This model reads no tokens, so it has no embedding table to map; pick a text model.")
    return None


def _reader(ctx: LensContext, known: list[str]) -> tuple[Reader, str]:
    """How the shown model reads a text, and what kind of weights it has (for the notes)."""
    if ctx.pre is not None:
        return pretrained_reader(ctx.pre), "pretrained"
    if ctx.trained is not None:
        _inp, task, vocab = trained_input(ctx.trained, ctx.text)
        return trained_reader(ctx.model, task, token_labeller(vocab)), "characters"
    s = settings()
    return random_reader(ctx.model, s.kind, s.mask, known), "random"


def _remembered(key: tuple, compute):
    """The result for ``key``, computed once; only this session's last results are kept."""
    held = st.session_state.get(RESULTS) or {}
    if key not in held:
        held = {k: v for k, v in held.items() if k[:2] != key[:2]} | {key: compute()}
        st.session_state[RESULTS] = held
    return held[key]


def _chosen_ids(ctx: LensContext, reader: Reader, kind: str, typed: str) -> tuple[list[int], list[str]]:
    """The tokens to map and a note per word read as its last token."""
    if kind == "characters":
        if not typed:  # every character of the vocabulary (spaces and line breaks too)
            return list(range(min(MAX_TOKENS, token_table(ctx.model).size(0)))), []
        return list(dict.fromkeys(reader.plain(typed)))[:MAX_TOKENS], []
    words = [w.strip() for w in (typed or (PRETRAINED_WORDS if kind == "pretrained" else
                                           ", ".join(dict.fromkeys(ctx.shown.tokens)))).split(",") if w.strip()]
    ids, notes = [], []
    for word in words[:MAX_TOKENS]:
        try:
            token, pieces = word_token(reader, word)
        except ValueError:
            notes.append(_("“{word}” gives no token this model reads; left out.").format(word=word))
            continue
        ids.append(token)
        if len(pieces) > 1:
            notes.append(_("“{word}” is {n} tokens ({pieces}): the map shows its last, “{last}”.").format(
                word=word, n=len(pieces), pieces=" · ".join(pieces), last=pieces[-1]))
    return ids, notes


LABEL_PLOT_PX = (560, 380)  # about the plot area the labels share (a 1024-pixel page with the sidebar open)
LABEL_CHAR_PX, LABEL_LINE_PX = 7, 15  # about the room one character and one line of a dot's label take


def _placed(coords: np.ndarray, labels: list[str]) -> list[str]:
    """The dots' labels, left out ("") where one would be written over a label already placed (the dot keeps its
    hover): thirty words of a sentence ran into one another ("finalcome", "brownold")."""
    span = np.ptp(coords, axis=0)
    px = (coords - coords.min(axis=0)) / np.where(span > 0, span, 1.0) * LABEL_PLOT_PX  # (N, 2) in pixels
    kept: list[int] = []
    shown = []
    for i, label in enumerate(labels):
        clear = all(abs(px[i, 0] - px[j, 0]) * 2 > (len(label) + len(labels[j])) * LABEL_CHAR_PX
                    or abs(px[i, 1] - px[j, 1]) > LABEL_LINE_PX for j in kept)
        kept += [i] if clear else []
        shown.append(label if clear else "")
    return shown


def _scatter(m: EmbeddingMap, projector: bool) -> go.Figure:
    hover = ["<br>".join(f"{n} {num(c, 2)}" for n, c in zip(names, cos, strict=True))
             for names, cos in zip(m.neighbour_labels, m.cosines, strict=True)]
    fig = go.Figure(go.Scatter(x=m.plane.coords[:, 0], y=m.plane.coords[:, 1], mode="markers+text",
                               text=_placed(m.plane.coords, list(m.labels)), textposition="top center",
                               customdata=list(zip(m.labels, hover, strict=True)), marker=dict(size=10),
                               cliponaxis=False, hovertemplate=_("%{customdata[0]}<br>nearest:<br>%{customdata[1]}")
                               + "<extra></extra>"))
    ex = m.plane.explained
    for axis, values in (("x", m.plane.coords[:, 0]), ("y", m.plane.coords[:, 1])):
        pad = (0.2 if axis == "y" else 0.1) * (float(np.ptp(values)) or 1.0)  # room for the dots' labels
        fig.update_layout({f"{axis}axis": dict(range=[float(values.min()) - pad, float(values.max()) + pad])})
    fig.update_xaxes(title=_("direction 1 ({share} of the spread)").format(share=percent(ex[0])), zeroline=False)
    fig.update_yaxes(title=_("direction 2 ({share} of the spread)").format(share=percent(ex[1])), zeroline=False)
    return style(fig, title=_("Embedding rows, flattened by PCA"), height=380 if projector else 460)


def map_csv(m: EmbeddingMap) -> str:
    """The map as CSV: one row per token, its coordinates and its neighbours with their cosines."""
    rows = m.rows()
    buf = io.StringIO()
    out = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    out.writeheader()
    out.writerows(rows)
    return buf.getvalue()


def uses_csv(c: WordComparison) -> str:
    """The comparison as CSV: one row per layer, one column per pair of uses."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\n")
    out.writerow([_("layer"), *(_pair(c, a, b) for a, b in c.pairs)])
    for layer, row in enumerate(c.cosines):
        out.writerow([layer, *(repr(float(v)) for v in row)])
    return buf.getvalue()


def _pair(c: WordComparison, a: int, b: int) -> str:
    return _("sentence {a} vs {b}").format(a=a + 1, b=b + 1)


def _downloads(csv_text: str, png, name: str, key: str) -> None:
    with st.container(horizontal=True):
        st.download_button("CSV", csv_text, file_name=f"{name}.csv", mime="text/csv", key=f"{key}.csv",
                           on_click="ignore", icon=":material/download:", help=_("The numbers of this chart."))
        st.download_button("PNG", png, file_name=f"{name}.png", mime="image/png", key=f"{key}.png",
                           on_click="ignore", icon=":material/download:", help=_("This chart as a picture."))


def _map_part(ctx: LensContext, reader: Reader, kind: str, model_key: str) -> None:
    picture = st.container()  # the picture first on a projector: the box is drawn under it
    label = _("Characters to map") if kind == "characters" else _("Tokens to map (comma-separated)")
    typed = st.text_input(label, key=MAP_WORDS, placeholder=_("empty: a built-in list"), max_chars=MAX_TEXT_CHARS,
                          help=_("The words (or characters) whose embedding rows are placed on the map; a word the "
                                 "tokenizer splits is shown by its last token.")).strip()
    ids, notes = _chosen_ids(ctx, reader, kind, typed)
    try:
        m = _remembered((model_key, "map", tuple(ids)), lambda: embedding_map(ctx.model, ids, reader.label))
    except ValueError as err:
        st.info(str(err), icon="ℹ️")
        return
    with picture if ctx.projector else st.container():
        _map_picture(m, ctx.projector)
    st.caption(_(MAP_CAPTION).format(share=percent(float(m.plane.explained.sum()))))
    for note in notes:
        st.caption(note)
    png = scatter_png(m.plane.coords, m.labels, title=_("Embedding rows, flattened by PCA"),
                      x_title=_("direction 1 ({share})").format(share=percent(m.plane.explained[0])),
                      y_title=_("direction 2 ({share})").format(share=percent(m.plane.explained[1])))
    _downloads(map_csv(m), png, "embedding_map", "attn.map.dl.map")


def _map_picture(m: EmbeddingMap, projector: bool) -> None:
    """The scatter and, beside it (under it on a projector or in a narrow column), each token's nearest neighbours."""
    left, right = (wrapping_columns([1, 1], key="attn-map", per_row=1) if not projector
                   else (st.container(), st.container()))
    with left:
        st.plotly_chart(_scatter(m, projector), width="stretch", config=charts.chart_config(),
                        key="attn.map.scatter")
    with right:
        st.dataframe({_("token"): list(m.labels),
                      _("nearest by cosine (similarity)"): [
                          ", ".join(f"{n} {num(c, 2)}" for n, c in zip(names, cos, strict=True))
                          for names, cos in zip(m.neighbour_labels, m.cosines, strict=True)]},
                     hide_index=True, height=min(260 if projector else 440, 38 + 35 * len(m.labels)),
                     width="stretch")  # no empty rows under a short list (a phone showed seven)


def _uses_part(ctx: LensContext, reader: Reader, model_key: str) -> None:
    st.markdown(_("**One word in several sentences**"))
    left, right = st.columns([1, 3])
    with left:
        word = st.text_input(_("Word"), key=MAP_WORD, max_chars=40,
                             help=_("The word to follow; its first use in each sentence is read (its last token, if "
                                    "the tokenizer splits it)."))
    with right:
        text = st.text_area(_("Sentences, one a line (2 to 4)"), key=MAP_SENTENCES, height=110,
                            max_chars=MAX_TEXT_CHARS,
                            help=_("Each sentence uses the word; its vector is read after every layer."))
    sentences = tuple(s for s in text.splitlines() if s.strip())
    try:
        c = _remembered((model_key, "uses", word, sentences), lambda: compare_uses(reader, word, sentences))
    except ValueError as err:
        st.info(str(err), icon="ℹ️")
        return
    layers = list(range(c.cosines.shape[0]))
    series = {_pair(c, a, b): c.cosines[:, i] for i, (a, b) in enumerate(c.pairs)}
    fig = charts.line_chart({n: (layers, v) for n, v in series.items()},
                            title=_("“{word}”: cosine similarity of its vectors, layer by layer").format(word=c.word),
                            x_title=_("layer (0 = embedding row)"), y_title=_("cosine similarity"),
                            height=320 if ctx.projector else 380)
    fig.update_traces(mode="lines+markers")
    fig.update_xaxes(dtick=1)
    st.plotly_chart(fig, width="stretch", config=charts.chart_config(), key="attn.map.uses")
    st.caption(_(USES_CAPTION))
    read = []
    for i, use in enumerate(c.uses):
        fill = dict(sentence=i + 1, index=use.index + 1, n=len(use.ids), token=use.tokens[use.index], word=c.word,
                    pieces=" · ".join(use.pieces))
        read.append(_("sentence {sentence}, token {index} of {n}: “{token}” (“{word}” is {pieces}: its last token is "
                      "read)").format(**fill) if len(use.pieces) > 1 else
                    _("sentence {sentence}, token {index} of {n}: “{token}”").format(**fill))
    st.caption(_("Read at {places}.").format(places=pgettext("list separator", "; ").join(read)))
    png = lines_png(layers, series, title=_("“{word}”: cosine similarity per layer").format(word=c.word),
                    x_title=_("layer (0 = embedding row)"), y_title=_("cosine"), y_range=(min(0.0, float(np.min(
                        c.cosines))), 1.0))
    _downloads(uses_csv(c), png, f"word_{c.word}_per_layer", "attn.map.dl.uses")


def draw(ctx: LensContext) -> None:
    """The map of chosen tokens, then one word in several sentences."""
    sentences = str(st.session_state.get(MAP_SENTENCES, ""))
    known = [ctx.text, str(st.session_state.get(MAP_WORDS, "")), sentences]
    try:
        reader, kind = _reader(ctx, known)
    except ValueError as err:
        st.info(_("{error} Pick another model to see its embedding map.").format(error=err), icon="ℹ️")
        return
    note = _("These weights are random: the rows of the table were drawn at random, so the map and the neighbours "
             "show no meaning yet. Train a model or load a pretrained one to see learned rows.")

    if kind == "random" and not ctx.projector:
        st.info(note, icon="🎲")
    model_key = f"{kind}#{id(ctx.model)}"
    _map_part(ctx, reader, kind, model_key)
    if kind == "random" and ctx.projector:  # the picture first; the warning right under it
        st.caption("🎲 " + note)
    _uses_part(ctx, reader, model_key)
